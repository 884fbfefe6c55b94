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
HEAD
  for b in "${benchmarks[@]}"; do
    read -r model preset <<<"$b"
    echo
    echo "## \`$model\` on \`$preset\`"
    echo
    echo '```'
    echo "\$ dplace place --model zoo:$model --cluster $preset --method all"
    echo '```'
    echo
    # Exit 1 (no feasible placement) still prints the table.
    "$dplace" place --model "zoo:$model" --cluster "$preset" --method all \
      2>/dev/null || [ $? -eq 1 ]
  done
} > docs/results.md.tmp
mv docs/results.md.tmp docs/results.md
echo "wrote docs/results.md"
