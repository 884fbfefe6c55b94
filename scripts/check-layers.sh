#!/usr/bin/env bash
# Checks the layer order of src/dplace: the folders of the README's "Source
# tree", listed lowest first, are the layers, and a file may include
# headers of its own folder's layer and of the layers listed above it,
# never of one listed below (a subfolder such as io/onnx/ is a layer of its
# own; rl/agents/<paper>/ are all one layer). Tests and benchmarks
# (*_test.cc, *_benchmark.cc) may also include testing/, the helpers they
# share. Every folder that holds sources must be listed, and every listed
# folder must exist. No source file may pass 1,000 lines (a longer one is
# two concepts, or one that wants splitting by step). make test runs it
# (ctest -R layer_order).
#
# Usage: scripts/check-layers.sh [ROOT]     ROOT: the checkout (default .)
#        scripts/check-layers.sh --self-test
# Exit 0 when the tree keeps the order; 1 with one line per violation.
set -euo pipefail

if [ "${1:-}" = --self-test ]; then
  # A tree of two layers where the lower includes the higher must fail,
  # and pass once the include is gone.
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  mkdir -p "$tmp/src/dplace/low" "$tmp/src/dplace/high" \
    "$tmp/src/dplace/testing"
  printf '## Source tree\n\n```\nlow/   a\nhigh/  b\ntesting/  c\n```\n' \
    >"$tmp/README.md"
  printf '#include "dplace/low/a.h"\n' >"$tmp/src/dplace/high/b.h"
  printf '#include "dplace/testing/t.h"\n' >"$tmp/src/dplace/low/a_test.cc"
  printf '#include "dplace/high/b.h"\n' >"$tmp/src/dplace/low/a.h"
  printf '#include "dplace/high/b.h"\n' >"$tmp/src/dplace/testing/t.h"
  if "$0" "$tmp" >/dev/null; then
    echo "self-test: an upward include passed" >&2
    exit 1
  fi
  printf '// nothing above\n' >"$tmp/src/dplace/low/a.h"
  if ! "$0" "$tmp"; then
    echo "self-test: a tree in order failed" >&2
    exit 1
  fi
  seq 1001 | sed 's|^|// |' >"$tmp/src/dplace/low/long.cc"
  if "$0" "$tmp" >/dev/null; then
    echo "self-test: a file of 1,001 lines passed" >&2
    exit 1
  fi
  exit 0
fi

root=${1:-.}
cd "$root"

# The layers, lowest first: the folders at the start of each line of the
# first code block after "## Source tree", as "RANK FOLDER" lines. Folders
# on one line ("cli/, cli/commands/") are one layer; "rl/agents/<paper>/"
# stands for every folder under rl/agents/.
layers=$(awk '
  /^## Source tree/ { in_section = 1; next }
  in_section && /^```/ { blocks++; if (blocks == 2) exit; next }
  in_section && blocks == 1 &&
      match($0, /^[a-z_\/<>]+\/(, [a-z_\/<>]+\/)*/) {
    rank++
    n = split(substr($0, 1, RLENGTH), folders, ", ")
    for (i = 1; i <= n; i++) print rank, folders[i]
  }' README.md)
if [ -z "$layers" ]; then
  echo "README.md: no folders in the \"## Source tree\" code block" >&2
  exit 1
fi

status=0
# The folders that hold sources, then every include of a dplace header, as
# one stream for awk: "DIR d" lines, then grep's "FILE:#include ..." lines.
{
  find src/dplace -name '*.cc' -o -name '*.h' | xargs -n1 dirname | sort -u |
    sed 's|^src/dplace/\(.*\)$|DIR \1/|'
  grep -rHo '^#include "dplace/[^"]*"' src/dplace --include='*.cc' \
    --include='*.h'
} | awk -v layers="$layers" '
    BEGIN {
      n = split(layers, lines, "\n")
      for (i = 1; i <= n; i++) {
        split(lines[i], f, " ")
        pattern[i] = f[2]
        prefix[i] = f[2]
        # "<name>/" matches any one folder there.
        wildcard[i] = sub(/<[^>]*>\/$/, "", prefix[i])
        rank[i] = f[1] + 0
      }
    }
    # The rank of a folder or file path under src/dplace: that of the
    # longest listed prefix; 0 when none.
    function rank_of(path,    best, best_rank, i) {
      best = ""; best_rank = 0
      for (i = 1; i <= n; i++) {
        if (index(path, prefix[i]) == 1 && length(prefix[i]) > length(best)) {
          best = prefix[i]; best_rank = rank[i]
        }
      }
      return best_rank
    }
    function listed(dir,    i) {
      for (i = 1; i <= n; i++) {
        if (dir == pattern[i]) return 1
        if (wildcard[i] && index(dir, prefix[i]) == 1 && dir != prefix[i] &&
            split(substr(dir, length(prefix[i]) + 1), parts, "/") == 2) {
          return 1
        }
      }
      return 0
    }
    $1 == "DIR" {
      seen[$2] = 1
      if (!listed($2)) {
        print "src/dplace/" $2 " holds sources but is not in the README'"'"'s Source tree"
        bad = 1
      }
      next
    }
    {
      file = $0; sub(/:.*/, "", file)
      header = $0; sub(/^[^"]*"dplace\//, "", header); sub(/"$/, "", header)
      from = rank_of(substr(file, length("src/dplace/") + 1))
      to = rank_of(header)
      if (from == 0 || to == 0) next  # Not listed: reported above.
      if (header ~ /^testing\// && file ~ /_(test|benchmark)\.cc$/) next
      if (to > from) {
        printf "%s includes dplace/%s, of a higher layer (listed after its own folder in the README'"'"'s Source tree)\n",
               file, header
        bad = 1
      }
    }
    END {
      for (i = 1; i <= n; i++) {
        if (!wildcard[i] && !(pattern[i] in seen)) {
          print "README.md: " pattern[i] " is in the Source tree but src/dplace/" pattern[i] " holds no sources"
          bad = 1
        }
      }
      exit bad
    }' || status=1
# No source file over 1,000 lines.
long=$(find src/dplace -name '*.cc' -o -name '*.h' | sort | xargs wc -l |
  awk '$2 != "total" && $1 > 1000 { print $2 " has " $1 " lines, over 1,000" }')
if [ -n "$long" ]; then
  echo "$long"
  status=1
fi
exit $status
