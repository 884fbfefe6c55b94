#!/usr/bin/env bash
# Checks that each generated document whose results are kept in
# docs/results-data/ is what its script writes from them (RUN=no): the
# peer section of docs/results.md, docs/fidelity.md, the scale section of
# docs/performance.md, docs/learning.md, and the paper suite's
# docs/results.md, docs/planners-learning.md and docs/mars.md when its
# results are kept. Writes into a temporary copy; changes nothing.
#   scripts/check-docs-data.sh SOURCE_DIR DPLACE
set -euo pipefail
src=${1:?usage: scripts/check-docs-data.sh SOURCE_DIR DPLACE}
dplace=$(realpath "${2:?usage: scripts/check-docs-data.sh SOURCE_DIR DPLACE}")
cd "$src"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
check() {  # check DOC SCRIPT [KEPT...]: SCRIPT with RUN=no rewrites DOC alike
  local doc=$1 script=$2 kept
  shift 2
  for kept in "$@"; do
    if [ ! -f "$kept" ]; then
      echo "skip $doc: no $kept"
      return
    fi
  done
  cp "$doc" "$tmp/doc"
  if ! OUT="$tmp/doc" RUN=no RESULTS="$tmp/results" WORK="$tmp/work" \
       "$script" "$dplace" \
       >"$tmp/log" 2>&1; then
    echo "FAIL $doc: $script failed:"
    cat "$tmp/log"
    failed=1
  elif ! cmp -s "$doc" "$tmp/doc"; then
    echo "FAIL $doc: RUN=no $script does not write it as committed:"
    diff "$doc" "$tmp/doc" | head -20
    failed=1
  else
    echo "ok   $doc ($script)"
  fi
}
check docs/results.md scripts/make-peer-doc.sh docs/results-data/peer.json.gz
check docs/fidelity.md scripts/make-fidelity-doc.sh \
  docs/results-data/fidelity.tar.gz
check docs/performance.md scripts/make-scale-doc.sh \
  docs/results-data/scale.json.gz
check docs/learning.md scripts/make-learning-doc.sh \
  docs/results-data/learning.tar.gz
check docs/results.md scripts/make-results-doc.sh \
  docs/results-data/paper.json.gz
check docs/planners-learning.md scripts/make-planners-doc.sh \
  docs/results-data/paper.json.gz
check docs/mars.md scripts/make-mars-doc.sh docs/results-data/paper.json.gz \
  docs/results-data/mars-speed.tar.gz
exit $failed
