#!/usr/bin/env bash
# Regenerates docs/learning.md: learning curves of the learned placers (post,
# post-ce, post-pg, spotlight, colocrl) on Post's benchmarks, Inception-V3 on
# k80x4 and NMT-2 on k80x2, and the best step time each reaches against the
# classical placers (expert, m-etf, m-sct, scotch).
#   scripts/make-learning-doc.sh [build/dplace]
# Environment: BUDGET (samples per Post-family search, default 2400, Post's),
# COLOCRL_BUDGET (default 2400), SEED (default 1), OUT (default
# docs/learning.md), WORK (the runs' outputs and JSONL logs, default
# build/learning), KEPT (default docs/results-data/learning.tar.gz: those
# outputs and logs, kept in the repository; a run writes it), RUN (default
# yes; no: run nothing, write the document from KEPT, byte for byte what
# the run wrote).
set -euo pipefail
dplace=${1:-build/dplace}
budget=${BUDGET:-2400}
colocrl_budget=${COLOCRL_BUDGET:-2400}
seed=${SEED:-1}
out=${OUT:-docs/learning.md}
logs=${WORK:-${LOGS:-build/learning}}
kept=${KEPT:-docs/results-data/learning.tar.gz}
run=${RUN:-yes}
mkdir -p "$logs" "$(dirname "$kept")"

benchmarks=("inception_v3 k80x4" "nmt:layers=2 k80x2")
agents=(post post-ce post-pg spotlight colocrl)
baselines=(single-gpu expert m-etf m-sct scotch)
checkpoints=(60 120 240 480 720 960 1200 1440 1680 1920 2160 2400)

# ColocRL reads groups as a sequence: co-location groups (one per LSTM cell
# with the "step_" scope rule) for NMT, but Inception-V3's co-location
# groups number in the thousands, so there it reads 256 METIS groups, as the
# Hierarchical Planner's placer does.
colocrl_options() {
  case "$1" in
    inception_v3) echo "--option grouping=metis --option groups=256" ;;
    *) echo "" ;;
  esac
}

# "1.234567" from a dplace place output, or "OOM" / "-".
step_time_of() {
  awk '/^step time: /{t=$3} /^infeasible/{oom=1}
       END{if (t == "") print "-"; else if (oom) print "OOM"; else print t}'
}

# From a JSONL log: at each checkpoint n, the mean step time of the feasible
# samples in (previous checkpoint, n], the share of them that were OOM, and
# the best step time so far.
curve() {
  awk -v cps="${checkpoints[*]}" '
    BEGIN { n = split(cps, cp, " "); k = 1 }
    {
      match($0, /"step_time":[^,}]*/); t = substr($0, RSTART + 12, RLENGTH - 12)
      feasible = ($0 ~ /"feasible":true/)
      i = NR
      if (feasible) { sum += t; cnt++; if (best == "" || t < best) best = t }
      else oom++
      if (k <= n && i == cp[k]) {
        printf "%d %s %.0f %s\n", cp[k], (cnt ? sprintf("%.4f", sum / cnt) : "-"),
               100 * oom / (cnt + oom), (best == "" ? "-" : sprintf("%.4f", best))
        sum = 0; cnt = 0; oom = 0; k++
      }
    }' "$1"
}

# The runs: each method's `place` output (and a search's log) in $logs,
# then kept, with the settings and the date, in KEPT.
# shellcheck source=scripts/kept-results.sh
. "$(dirname "$0")/kept-results.sh"
if [ "$run" = no ]; then
  kept_unpack "$kept" "$logs" "learning runs"
else
  rm -f "$logs"/*.out "$logs"/*.jsonl "$logs"/*.ckpt
  for b in "${benchmarks[@]}"; do
    read -r model preset <<<"$b"
    name=${model//[:=]/_}
    for m in "${baselines[@]}"; do
      echo "learning: $model@$preset $m" >&2
      "$dplace" place --model "zoo:$model" --cluster "$preset" \
        --method "$m" >"$logs/${name}_$m.out" 2>/dev/null || true
    done
    for a in "${agents[@]}"; do
      n=$budget
      extra=""
      if [ "$a" = colocrl ]; then
        n=$colocrl_budget
        extra=$(colocrl_options "$model")
      fi
      echo "learning: $model@$preset $a ($n samples)" >&2
      # shellcheck disable=SC2086
      "$dplace" place --model "zoo:$model" --cluster "$preset" \
        --method "$a" --budget-samples "$n" --seed "$seed" \
        --log "$logs/${name}_$a.jsonl" $extra >"$logs/${name}_$a.out" \
        2>/dev/null || true
    done
  done
  printf 'date %s\nbudget %s\ncolocrl_budget %s\nseed %s\n' \
    "$(date -u +%Y-%m-%d)" "$budget" "$colocrl_budget" "$seed" \
    >"$logs/settings"
  kept_pack "$kept" "$logs" settings '*.out' '*.jsonl'
fi
setting() { sed -n "s/^$1 //p" "$logs/settings"; }
budget=$(setting budget)
colocrl_budget=$(setting colocrl_budget)
seed=$(setting seed)

{
  cat <<HEAD
# Learning curves of the learned placers

Post's experiment (Gao et al., 2018, Figure 2 and Table 1) on dplace's
simulator: each learned placer searches with its paper's settings and a
budget of $budget sampled placements (ColocRL: $colocrl_budget), seed $seed,
on the machines Post used (K80s). Generated on $(setting date) by
\`scripts/make-learning-doc.sh\`, which runs
\`dplace place --model zoo:MODEL --cluster PRESET --method AGENT
--budget-samples N --log L.jsonl\` and reads the logs, kept in
\`docs/results-data/learning.tar.gz\` (\`RUN=no\` rewrites this document
from them); do not edit by hand.

Each curve table gives, at a number of samples, the mean simulated step time
of the feasible placements sampled since the previous row (what Post's
Figure 2 plots), the share of those samples that ran out of memory, and the
best step time found so far. Rewards are -sqrt(step time); an OOM placement
is charged 100 s.
HEAD
  for b in "${benchmarks[@]}"; do
    read -r model preset <<<"$b"
    name=${model//[:=]/_}
    echo
    echo "## \`$model\` on \`$preset\`"
    echo
    echo "| method | best step time (s) | samples | search wall time (s) |"
    echo "|---|---:|---:|---:|"
    for m in "${baselines[@]}"; do
      t=$(step_time_of <"$logs/${name}_$m.out")
      echo "| $m | $t | - | - |"
    done
    for a in "${agents[@]}"; do
      n=$budget
      [ "$a" = colocrl ] && n=$colocrl_budget
      result=$(cat "$logs/${name}_$a.out")
      t=$(step_time_of <<<"$result")
      wall=$(sed -n 's/.* in \([0-9.]*\) s$/\1/p' <<<"$result" | head -1)
      groups=$(sed -n 's/.* updates, \([0-9]*\) groups).*/\1/p' <<<"$result")
      echo "| $a ($groups groups) | $t | $n | ${wall:--} |"
    done
    for a in "${agents[@]}"; do
      echo
      echo "### \`$a\` on \`$model\`"
      echo
      echo "| samples | mean sampled step time (s) | OOM share | best so far (s) |"
      echo "|---:|---:|---:|---:|"
      curve "$logs/${name}_${a}.jsonl" |
        while read -r s mean oom best; do
          echo "| $s | $mean | $oom% | $best |"
        done
    done
  done
} >"$out"
echo "wrote $out"
