#!/usr/bin/env bash
# Regenerates docs/planners-learning.md: the EAGLE paper's Tables I-IV and
# the Hierarchical Planner's Table 1, laid out as the papers lay them out,
# with the claims about them. Runs no search: every figure comes from the
# paper suite's results file, which scripts/make-results-doc.sh writes,
# read with `dplace bench --show` (docs/bench.md).
#   scripts/make-planners-doc.sh [build/dplace]
# Environment: RESULTS (default build/results/paper.json), OUT (default
# docs/planners-learning.md).
set -euo pipefail
dplace=${1:-build/dplace}
results=${RESULTS:-build/results/paper.json}
out=${OUT:-docs/planners-learning.md}
if [ ! -f "$results" ]; then
  echo "$results: no paper suite results; run scripts/make-results-doc.sh" \
       "first" >&2
  exit 1
fi
# shellcheck source=scripts/results-view.sh
. "$(dirname "$0")/results-view.sh"
eagle="inception_v3@p100x4 gnmt@p100x4 bert@p100x4"
hp="inception_v3@k40x4 resnet@k40x4 rnnlm@k40x4 nmt-2@k40x2 nmt-4@k40x4 nmt-8@k40x8"
# table "BENCHMARKS" "COLUMNS": the paper table of that view (its first
# Markdown table), without the claims.
table() {
  local labels
  local -a models
  mapfile -t models < <(present_models "$1")
  labels=$(present_labels "$2")
  if [ ${#models[@]} -eq 0 ] || [ -z "$labels" ]; then
    echo "Not in the results yet (an unfinished run)."
    return
  fi
  "$dplace" bench --show "$results" --no-details --models "${models[@]}" \
    --methods "$labels" | awk '/^\|/ && !done {print; seen = 1; next} seen {done = 1}'
}
seeds=$(tr -d ' \n' <"$results" | sed -n 's/.*"seeds":\[\([0-9,]*\)\],"started_utc".*/\1/p')
done_runs=$(sed -n 's/^ "runs_done": \([0-9]*\),*$/\1/p' "$results")
total_runs=$(sed -n 's/^ "runs_total": \([0-9]*\),*$/\1/p' "$results")

{
  cat <<HEAD
# The hierarchical planners on dplace's simulator

The EAGLE paper's Tables I-IV (Lan et al.; Inception-V3, GNMT-4 and
BERT-Base on 4 P100s) and the Hierarchical Planner's Table 1 (Mirhoseini et
al., ICLR 2018; K40s), on dplace's simulator. Generated on
$(date -u +%Y-%m-%d) by \`scripts/make-planners-doc.sh\` from the paper
suite's results (\`$results\`, $done_runs of $total_runs runs, seeds
${seeds//,/, }), which

\`\`\`
$(field command | sed 's/ --markdown [^ ]*//')
\`\`\`

began on $(field started_utc | cut -c1-10)$(continued); [results.md](results.md) has the whole
suite, with every baseline and the detail tables (samples to best, wall
times). Do not edit the tables by hand.

**Budgets.** Every learned search ran the papers' 2,400 sampled placements
from a random start (no \`warm_start\`), with its preset's settings
([agents.md](agents.md)); each cell is the simulated step time (s) of the
best placement found, the median over seeds when there are several. The
papers trained for hours (EAGLE: 4-6 hours per model on real P100s).

## EAGLE Table I: groupers (hierarchical model, seq2seq placer)

\`hierarchical\` with its learned feed-forward grouper, METIS
(\`grouper=metis\`) and fluid communities (\`grouper=fluid\`, the paper's
"Networkx").

HEAD
  table "$eagle" "hierarchical|hierarchical (metis grouper)|hierarchical (fluid grouper)"
  cat <<'MID'

## EAGLE Table II: placers (METIS grouper)

The seq2seq placer with attention before the decoder (`attention=before`),
after it (the Hierarchical Planner's), and the GCN placer.

MID
  table "$eagle" "hierarchical (metis, attention before)|hierarchical (metis grouper)|hierarchical (metis, gcn placer)"
  cat <<'MID'

## EAGLE Table III: training algorithms (EAGLE's model)

`eagle` with REINFORCE (`algorithm=reinforce`), PPO (its preset) and PPO
with cross-entropy minimisation (`eagle-ce`).

MID
  table "$eagle" "eagle (reinforce)|eagle|eagle-ce"
  cat <<'MID'

## EAGLE Table IV: final comparison

MID
  table "$eagle" "single-gpu|expert|hierarchical|post|eagle|eagle-ce"
  cat <<'MID'

## Hierarchical Planner Table 1

The benchmarks as the suite pairs them with clusters (the paper used 2
GPUs for Inception-V3, ResNet and RNNLM). The last column is the
planner's reduction against the fastest classical column, the paper's
"Runtime Reduction" (negative: slower).

MID
  table "$hp" "single-cpu|single-gpu|expert|scotch|mincut|hierarchical"
  echo
  # The claims about the columns above, judged on the whole file.
  mapfile -t models < <(present_models "$eagle $hp")
  "$dplace" bench --claims "$results" --models "${models[@]}" --methods \
    "$(present_labels "hierarchical|hierarchical (metis, attention before)|eagle")" |
    sed 's/^## Claims/## Claims of the two papers/'
  cat <<'TAIL'

What these tables reproduce of the papers' claims, and why, is discussed in
[agents.md](agents.md#findings-on-the-planners-benchmarks).
TAIL
} >"$out.tmp"
mv "$out.tmp" "$out"
echo "wrote $out (from $results)"
