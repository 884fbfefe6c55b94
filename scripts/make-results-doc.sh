#!/usr/bin/env bash
# Regenerates docs/results.md: every registered placer on every zoo benchmark
# at the machine its paper placed it on, each table printed by
# `dplace place --method all`.
#   scripts/make-results-doc.sh [build/dplace]
set -euo pipefail
dplace=${1:-build/dplace}

# model spec, preset: the papers' benchmarks on their machines
# (Hierarchical Planner: K40s, NMT with 2/4/8 layers on 2/4/8 GPUs;
# EAGLE and Mars: 4 P100s).
benchmarks=(
  "inception_v3 k40x4"
  "resnet k40x4"
  "rnnlm k40x4"
  "nmt k40x2"
  "nmt:layers=4 k40x4"
  "nmt:layers=8 k40x8"
  "inception_v3 p100x4"
  "gnmt p100x4"
  "bert p100x4"
)

{
  cat <<HEAD
# Results: classical placers

Every registered placer at its default settings on every zoo benchmark, on
the machine its paper placed it on, simulated by dplace's simulator.
Generated on $(date -u +%Y-%m-%d) by \`scripts/make-results-doc.sh\`, which
runs \`dplace place --model zoo:MODEL --cluster PRESET --method all\` for
each; do not edit the tables by hand.

Columns: the simulated step time of the placement (OOM when a device's peak
memory exceeds its capacity; the best feasible one is marked), the speed-up
over \`single-gpu\`, the ratio to the placement-independent lower bound
(the larger of the critical path with every op on its fastest device and
the total work spread over every device), the largest per-device peak
memory, and the wall time the placer took on this machine (2 cores).
The learned placers' results are in [learning.md](learning.md); what each
placer does is in [placers.md](placers.md).
HEAD
  tables=$(mktemp -d)
  for b in "${benchmarks[@]}"; do
    read -r model preset <<<"$b"
    # Exit 1 (no feasible placement) still prints the table.
    "$dplace" place --model "zoo:$model" --cluster "$preset" --method all \
      2>/dev/null >"$tables/$model@$preset" || [ $? -eq 1 ]
  done

  echo
  echo "## Summary"
  echo
  echo "Where the placers stand against \`expert\` and \`single-gpu\`, read off"
  echo "the tables below: the fastest feasible placer (ties to the first"
  echo "listed), and which placers beat the expert."
  echo
  echo "| benchmark | single-gpu (s) | expert (s) | fastest placer | its step time (s) | placers faster than expert |"
  echo "|---|---:|---:|---|---:|---|"
  for b in "${benchmarks[@]}"; do
    read -r model preset <<<"$b"
    awk -F'|' -v name="\`$model\` on \`$preset\`" '
      function trim(x) { gsub(/^ +| +$/, "", x); return x }
      /^\| [a-z]/ && $2 !~ /method/ {
        m = trim($2); t = trim($3); sub(/ \(best\)/, "", t)
        times[m] = t; order[n++] = m
        if (t ~ /^[0-9.]+$/ && (best == "" || t + 0 < best + 0)) { best = t; who = m }
      }
      END {
        e = times["expert"]; faster = ""
        for (i = 0; i < n; i++) {
          m = order[i]; t = times[m]
          if (m != "expert" && t ~ /^[0-9.]+$/ && e ~ /^[0-9.]+$/ && t + 0 < e + 0)
            faster = faster (faster == "" ? "" : ", ") m
        }
        printf "| %s | %s | %s | %s | %s | %s |\n", name, times["single-gpu"], e,
               who, best, (e !~ /^[0-9.]+$/ ? "- (expert is OOM)" : faster == "" ? "none" : faster)
      }' "$tables/$model@$preset"
  done

  for b in "${benchmarks[@]}"; do
    read -r model preset <<<"$b"
    echo
    echo "## \`$model\` on \`$preset\`"
    echo
    echo '```'
    echo "\$ dplace place --model zoo:$model --cluster $preset --method all"
    echo '```'
    echo
    cat "$tables/$model@$preset"
  done
  rm -rf "$tables"
} > docs/results.md.tmp
mv docs/results.md.tmp docs/results.md
echo "wrote docs/results.md"
