#!/usr/bin/env bash
# Regenerates docs/results.md from the `paper` bench suite (src/dplace/suite/suites.json):
# the papers' tables (Hierarchical Planner Table 1, Post Table 1, EAGLE
# Tables I-IV) with every method of the suite, run by `dplace bench`, and
# the claims sections bench generates from the results (docs/bench.md).
# The run continues its results file (bench --resume): kill the script and
# run it again with the same flags to go on where it stopped; remove
# $RESULTS/paper.json to start over.
#   scripts/make-results-doc.sh [build/dplace] [bench flags...]
# Extra flags go to `dplace bench` to reduce the run, e.g.
#   scripts/make-results-doc.sh build/dplace --budget-samples 100 --seeds 2
# Environment: OUT (default docs/results.md), RESULTS (where the JSON and the
# HTML report go, default build/results), RUN (default yes; no: run
# nothing, only write the document from the results file as it stands, an
# unfinished run included, with `dplace bench --show`; pass the same flags).
set -euo pipefail
dplace=${1:-build/dplace}
shift || true
out=${OUT:-docs/results.md}
results=${RESULTS:-build/results}
mkdir -p "$results"
json="$results/paper.json"
tables=$(mktemp)
trap 'rm -f "$tables"' EXIT

start=$(date -u +%Y-%m-%dT%H:%M:%SZ)
# The checkout's commit when the run started (git cannot tell which commit
# the binary was built from; build it from the checkout first). Changes to
# the documents do not count.
revision=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git status --porcelain --untracked-files=no -- . ':!docs' \
             ':!README.md' 2>/dev/null)" ]; then
  revision="$revision, with uncommitted changes in the tree"
fi
run=${RUN:-yes}
if [ "$run" = no ]; then
  "$dplace" bench --show "$json" --markdown "$tables"
  "$dplace" report "$json" -o "$results/paper.html" >/dev/null
else
  "$dplace" bench --suite paper "$@" -o "$json" --resume --markdown "$tables" \
    --report "$results/paper.html" >/dev/null
fi
command="dplace bench --suite paper${*:+ $*}"
seconds=$(sed -n 's/^ "wall_seconds": \([0-9.]*\),*$/\1/p' "$json" | head -1)
done_runs=$(sed -n 's/^ "runs_done": \([0-9]*\),*$/\1/p' "$json")
total_runs=$(sed -n 's/^ "runs_total": \([0-9]*\),*$/\1/p' "$json")

{
  if [ "$run" = no ]; then
    how="which ran nothing: it wrote the tables of the results file of"
    shown=" The tables were read from it with \`dplace bench --show $json\`."
    prefix="RUN=no "
  else
    how="which ran"
    shown=""
    prefix=""
  fi
  cat <<HEAD
# Results: the papers' comparisons

Generated on ${start%T*} by \`${prefix}scripts/make-results-doc.sh${*:+ $*}\`
(the checkout at commit $revision), $how

\`\`\`
$command -o $json --resume --markdown TABLES --report $results/paper.html
\`\`\`

$done_runs of its $total_runs runs done in $(printf '%.0f' "$seconds") s of bench time on this
machine ($(nproc) cores), over all the parts the run took (bench continues its
results file where a part stopped).$shown The tables are the tool's; do not
edit them by hand. The suite is \`src/dplace/suite/suites.json\`;
[bench.md](bench.md) explains it and the columns.
HEAD
  case " $* " in
  *" --budget-"*)
    cat <<NOTE

**Reduced run.** The suite asks for the papers' budgets (2400 samples per
learned search, 3 seeds); this run overrode them with \`$*\` to fit the
time available. A search that stopped on a seconds budget ran fewer samples
than its sample budget: the detail tables give the samples each ran
("samples to best": when it found its best / how many it ran). Read a
learned placer's column as where it stands after that budget, not as what
it can reach (see [learning.md](learning.md) for full-budget curves of
some of them).
NOTE
    ;;
  "  ") ;;
  *)
    cat <<NOTE

**Part of the suite.** This run passed \`$*\` to bench: the papers'
budgets (2400 samples per learned search), but not the whole suite (3 seeds
per learned placer, every benchmark and method). Running the script again
without these flags continues the same results file with the rest (more
seeds continue a run of fewer; [bench.md](bench.md)).
NOTE
    ;;
  esac
  cat <<'COLUMNS'

Every step time is dplace's simulation of one training step of the best
placement a method found, in seconds: the median over seeds, with the range
in brackets when there are several; OOM when no run's placement fits in
memory; `-` when the placer refused (its note says why). The last column of
each paper table compares the fastest learned placer with the fastest
classical one ("best baseline"): the reduction of the step time, positive
when the learned placer is faster. Per benchmark, the detail table adds the
gap to the placement-independent lower bound, the samples and wall time a
learned placer took to reach its best, and each method's wall time on this
machine.

COLUMNS
  cat "$tables"
} >"$out.tmp"
mv "$out.tmp" "$out"
echo "wrote $out (results: $json, report: $results/paper.html)"
