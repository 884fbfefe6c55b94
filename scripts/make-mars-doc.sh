#!/usr/bin/env bash
# Regenerates docs/mars.md: Mars (pre-trained GCN encoder + segment-level
# seq2seq placer, PPO) against the other placers on the EAGLE / Mars
# benchmarks (Inception-V3, GNMT, BERT-Base on p100x4), read from the paper
# suite's results file (scripts/make-results-doc.sh writes it) with
# `dplace bench --show`, and a study of pre-training's effect on learning
# speed (mars vs mars-nopretrain: samples and wall time to a common target,
# over several seeds), which runs searches of its own.
#   scripts/make-mars-doc.sh [build/dplace]
# Environment:
#   RESULTS        the paper suite's results (default build/results/paper.json)
#   KEPT           where RESULTS is absent: the kept, compressed copy
#                  (default docs/results-data/paper.json.gz)
#   SPEED_MODEL    model of the pre-training study (default zoo:rnnlm)
#   SPEED_PRESET   its cluster (default k40x4)
#   SPEED_BUDGET   samples per search there (default 400)
#   SPEED_OPTIONS  mars options there (default "hidden=64 encoder_hidden=64")
#   SEEDS          seeds of the pre-training study (default "1 2 3 4")
#   OUT            default docs/mars.md
#   WORK           the study's outputs, JSONL logs and encoders, default
#                  build/mars-doc
#   SPEED_KEPT     default docs/results-data/mars-speed.tar.gz: the
#                  study's outputs and logs, kept in the repository; a run
#                  writes it
#   RUN            default yes; no: run nothing, write the document from
#                  the kept paper suite results and SPEED_KEPT, byte for
#                  byte what the run wrote
set -euo pipefail
dplace=${1:-build/dplace}
results=${RESULTS:-build/results/paper.json}
speed_model=${SPEED_MODEL:-zoo:rnnlm}
speed_preset=${SPEED_PRESET:-k40x4}
speed_budget=${SPEED_BUDGET:-400}
speed_options=${SPEED_OPTIONS:-"hidden=64 encoder_hidden=64"}
seeds=${SEEDS:-"1 2 3 4"}
out=${OUT:-docs/mars.md}
logs=${WORK:-${LOGS:-build/mars-doc}}
speed_kept=${SPEED_KEPT:-docs/results-data/mars-speed.tar.gz}
run=${RUN:-yes}
mkdir -p "$logs" "$(dirname "$speed_kept")"
# The results the documents name: $RESULTS, else the copy kept in the
# repository (KEPT), read from a temporary file; RUN=no reads KEPT. The
# document names KEPT where it holds $RESULTS (so that RUN=no writes it
# alike).
kept=${KEPT:-docs/results-data/paper.json.gz}
if [ "$run" = no ]; then results=""; fi
results_name=$results
if [ -f "$results" ] && [ -f "$kept" ] && gzip -dc "$kept" | cmp -s - "$results"
then
  results_name=$kept
fi
if [ ! -f "$results" ] && [ -f "$kept" ]; then
  results_name=$kept
  results=$(mktemp)
  trap 'rm -f "$results"' EXIT
  gzip -dc "$kept" >"$results"
fi
if [ ! -f "$results" ]; then
  echo "$results: no paper suite results (nor $kept); run" \
       "scripts/make-results-doc.sh first" >&2
  exit 1
fi
# shellcheck source=scripts/results-view.sh
. "$(dirname "$0")/results-view.sh"
mapfile -t benchmarks < <(present_models "inception_v3@p100x4 gnmt@p100x4 bert@p100x4")
columns=$(present_labels "single-gpu|expert|metis|m-etf|post|hierarchical|eagle|mars|mars-nopretrain")

option_flags() {
  local flags=""
  for o in $1; do flags+=" --option $o"; done
  echo "$flags"
}
speed_flags=$(option_flags "$speed_options")

# "1.234567" from a dplace place output, or "OOM" / "-".
step_time_of() {
  awk '/^step time: /{t=$3} /^infeasible/{oom=1}
       END{if (t == "") print "-"; else if (oom) print "OOM"; else print t}'
}

# From a JSONL log: the sample count and wall seconds at which the best step
# time first reached `target` (<= target), or "- -".
reach() {
  awk -v target="$2" '
    { match($0, /"best_step_time":[^,}]*/)
      b = substr($0, RSTART + 17, RLENGTH - 17)
      match($0, /"wall_s":[^,}]*/); w = substr($0, RSTART + 9, RLENGTH - 9)
      if (b != "null" && b + 0 <= target * (1 + 1e-9)) { printf "%d %.2f\n", NR, w; found = 1; exit } }
    END { if (!found) print "-", "-" }' "$1"
}
# The final best step time of a log.
best_of() {
  awk '{ match($0, /"best_step_time":[^,}]*/)
         b = substr($0, RSTART + 17, RLENGTH - 17) }
       END { print b }' "$1"
}

# The pre-training study's runs, per seed: `dplace pretrain` writes an
# encoder (speed_sSEED.pretrain.out its output), then mars from it and
# mars-nopretrain search (speed_METHOD_sSEED.out and .jsonl); kept, with
# the settings and the date, in SPEED_KEPT.
# shellcheck source=scripts/kept-results.sh
. "$(dirname "$0")/kept-results.sh"
if [ "$run" = no ]; then
  kept_unpack "$speed_kept" "$logs" "pre-training study runs"
else
  rm -f "$logs"/speed_*
  for seed in $seeds; do
    enc="$logs/speed_s$seed.pt"
    echo "mars doc: pre-training study, seed $seed" >&2
    # shellcheck disable=SC2086
    "$dplace" pretrain --model "$speed_model" -o "$enc" --seed "$seed" \
      $speed_flags >"$logs/speed_s$seed.pretrain.out"
    for method in mars mars-nopretrain; do
      flags=$speed_flags
      [ "$method" = mars ] && flags+=" --encoder $enc"
      # shellcheck disable=SC2086
      "$dplace" place --model "$speed_model" --cluster "$speed_preset" \
        --method "$method" --budget-samples "$speed_budget" --seed "$seed" \
        --log "$logs/speed_${method}_s$seed.jsonl" $flags \
        >"$logs/speed_${method}_s$seed.out" 2>/dev/null || true
    done
  done
  {
    echo "date $(date -u +%Y-%m-%d)"
    echo "model $speed_model"
    echo "preset $speed_preset"
    echo "budget $speed_budget"
    echo "options $speed_options"
    echo "seeds $seeds"
  } >"$logs/speed_settings"
  kept_pack "$speed_kept" "$logs" speed_settings 'speed_*.out' \
    'speed_*.jsonl'
fi
setting() { sed -n "s/^$1 //p" "$logs/speed_settings"; }
speed_model=$(setting model)
speed_preset=$(setting preset)
speed_budget=$(setting budget)
speed_options=$(setting options)
seeds=$(setting seeds)

{
  cat <<HEAD
# Mars: results on dplace's simulator

Mars (Lan, Chen, Li, ICPP 2021; \`mars\`, see [agents.md](agents.md#mars))
against the other placers on the EAGLE / Mars benchmarks on \`p100x4\`
(4 Tesla P100 + CPU, the papers' machine), and the effect of its
self-supervised pre-training on learning speed (\`mars\` vs
\`mars-nopretrain\`). Generated on $(setting date) by
\`scripts/make-mars-doc.sh\`; do not edit by hand.

The comparison is a view of the paper suite's results (\`$results_name\`), which

\`\`\`
$(field command | sed 's/ --markdown [^ ]*//')
\`\`\`

began on $(field started_utc | cut -c1-10)$(continued): every learned search ran the papers' 2,400 sampled
placements from a random start at its preset's settings, \`mars\` with its
own pre-training (part of its wall time). [results.md](results.md) has the
whole suite. In the detail tables, "samples to best" is when a search first
found its final best, out of the samples it ran.

HEAD
  # The tables without their claims, then the claims about Mars alone.
  if [ ${#benchmarks[@]} -eq 0 ] || [ -z "$columns" ]; then
    echo "Not in the results yet (an unfinished run)."
  else
    "$dplace" bench --show "$results" --models "${benchmarks[@]}" \
      --methods "$columns" | awk '/^## Claims$/{stop = 1} !stop'
  fi
  mars=$(present_labels "mars|mars-nopretrain")
  if [ ${#benchmarks[@]} -gt 0 ] && [ -n "$mars" ]; then
    "$dplace" bench --claims "$results" --models "${benchmarks[@]}" \
      --methods "$mars"
  fi
  cat <<SPEED

## Pre-training and learning speed

The paper reports that pre-training cut Mars's training time by 13.2% on
average. Here: \`$speed_model\` on \`$speed_preset\`, $speed_budget samples per
search, mars options \`$speed_options\`, seeds $seeds. For each seed, \`mars\` starts
from an encoder \`dplace pretrain\` wrote with that seed (the same encoder
\`mars\` would pre-train by itself), \`mars-nopretrain\` from an untrained
one; both start from the same placer weights. "To reach" is the first
sample (and the search's wall time then) at which the run's best step time
reached the *common target*: the worse of the two runs' final bests, a
level both reached. Pre-training time is listed separately; it is not part
of the search's wall time.

| seed | pre-training (s) | mars best (s) | mars-nopretrain best (s) | target (s) | mars: samples / wall (s) to target | mars-nopretrain: samples / wall (s) to target |
|---:|---:|---:|---:|---:|---:|---:|
SPEED
  sum_m=0; sum_n=0; sum_wm=0; sum_wn=0; count=0
  for seed in $seeds; do
    pt_seconds=$(sed -n 's/^pre-trained [0-9]* steps in \([0-9.]*\) s: .*/\1/p' \
                   "$logs/speed_s$seed.pretrain.out")
    tm=$(step_time_of <"$logs/speed_mars_s$seed.out")
    tn=$(step_time_of <"$logs/speed_mars-nopretrain_s$seed.out")
    logm="$logs/speed_mars_s$seed.jsonl"
    logn="$logs/speed_mars-nopretrain_s$seed.jsonl"
    bm=$(best_of "$logm"); bn=$(best_of "$logn")
    target=$(awk -v a="$bm" -v b="$bn" 'BEGIN{print (a > b ? a : b)}')
    read -r nm wm < <(reach "$logm" "$target")
    read -r nn wn < <(reach "$logn" "$target")
    echo "| $seed | $pt_seconds | $tm | $tn | $(printf %.6f "$target") | $nm / $wm | $nn / $wn |"
    sum_m=$((sum_m + nm)); sum_n=$((sum_n + nn)); count=$((count + 1))
    sum_wm=$(awk -v a="$sum_wm" -v b="$wm" 'BEGIN{print a + b}')
    sum_wn=$(awk -v a="$sum_wn" -v b="$wn" 'BEGIN{print a + b}')
  done
  echo
  awk -v m="$sum_m" -v n="$sum_n" -v wm="$sum_wm" -v wn="$sum_wn" -v c="$count" 'BEGIN {
    printf "Mean over %d seeds: mars reached the target after %.0f samples / %.1f s, ", c, m / c, wm / c
    printf "mars-nopretrain after %.0f samples / %.1f s ", n / c, wn / c
    printf "(mars: %+.1f%% samples, %+.1f%% wall time).\n", 100 * (m - n) / n, 100 * (wm - wn) / wn }'
} >"$out"
echo "wrote $out"
