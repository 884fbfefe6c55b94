#!/usr/bin/env bash
# Runs every registered method with one seed through two dplace binaries
# (say, one built at an older commit beside the current one) and checks
# that each writes the same placement file byte for byte, and the same
# search log apart from its wall-time field.
#
# Usage: scripts/compare-methods.sh OLD_DPLACE NEW_DPLACE [MODEL] [CLUSTER]
#   MODEL    default zoo:rnnlm:layers=2,batch=16 (small and fast)
#   CLUSTER  default k80x2
# Searches (learned methods, mcmc) run SAMPLES samples (default 24; env SAMPLES=N).
# Exit 0 when every method agrees, 1 when one differs.
set -euo pipefail

old=${1:?usage: compare-methods.sh OLD_DPLACE NEW_DPLACE [MODEL] [CLUSTER]}
new=${2:?usage: compare-methods.sh OLD_DPLACE NEW_DPLACE [MODEL] [CLUSTER]}
model=${3:-zoo:rnnlm:layers=2,batch=16}
cluster=${4:-k80x2}
samples=${SAMPLES:-24}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The names: the first column of `place --list` (the new binary's; a name
# the old one lacks is listed as new and not compared).
methods=$("$new" place --list | awk '{print $1}')
known_to_old=$("$old" place --list | awk '{print $1}')
learned=$("$new" place --list | awk '/\((learned|search)\)/ {print $1}')

# The log without its wall-time field, which differs from run to run.
strip_wall() { sed -E 's/"wall_s":[-0-9.eE+]+,?//' "$1"; }

status=0
for m in $methods; do
  if ! grep -qx "$m" <<<"$known_to_old"; then
    printf '%-16s %s\n' "$m" "new (the old binary has no such method)"
    continue
  fi
  args=(place --model "$model" --cluster "$cluster" --method "$m" --seed 1)
  if grep -qx "$m" <<<"$learned"; then
    args+=(--budget-samples "$samples")
  fi
  for side in old new; do
    bin=$old
    [ "$side" = new ] && bin=$new
    extra=(--out "$work/$side.$m.json")
    grep -qx "$m" <<<"$learned" && extra+=(--log "$work/$side.$m.jsonl")
    set +e
    "$bin" "${args[@]}" "${extra[@]}" >"$work/$side.$m.out" 2>&1
    echo $? >"$work/$side.$m.rc"
    set -e
  done
  verdict=same
  if ! cmp -s "$work/old.$m.rc" "$work/new.$m.rc"; then
    verdict="exit codes differ ($(cat "$work/old.$m.rc") vs $(cat "$work/new.$m.rc"))"
  elif [ -f "$work/old.$m.json" ] || [ -f "$work/new.$m.json" ]; then
    if ! cmp -s "$work/old.$m.json" "$work/new.$m.json"; then
      verdict="placement files differ"
    fi
  fi
  if [ "$verdict" = same ] && [ -f "$work/old.$m.jsonl" ]; then
    if ! cmp -s <(strip_wall "$work/old.$m.jsonl") \
                <(strip_wall "$work/new.$m.jsonl"); then
      verdict="logs differ"
    fi
  fi
  step=$(grep -m1 '^step time' "$work/new.$m.out" || echo "no placement")
  printf '%-16s %-24s %s\n' "$m" "$verdict" "$step"
  [ "$verdict" = same ] || status=1
done
exit $status
