#!/usr/bin/env bash
# Runs every parser fuzzer, the search checkpoint's included, for SECONDS
# each, one after the other, at the lowest CPU priority (make fuzz;
# docs/robustness.md).
#
#   fuzz/run.sh BUILD_DIR SECONDS [TARGET...]
#
# Corpora live in BUILD_DIR/corpus/<target>/, seeded from fuzz/seeds/, the
# project's fixtures and every past crash (testdata/fuzz-regressions/), and
# grow from run to run. Crashing inputs land in BUILD_DIR/crashes/<target>/;
# copy each into testdata/fuzz-regressions/<target>/ once fixed. Each run's
# executions are appended to BUILD_DIR/fuzz-log.tsv. Exits 1 when any
# fuzzer found a crash.
set -euo pipefail
cd "$(dirname "$0")/.."

build=${1:?usage: fuzz/run.sh BUILD_DIR SECONDS [TARGET...]}
seconds=${2:?usage: fuzz/run.sh BUILD_DIR SECONDS [TARGET...]}
shift 2
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(graph_json cluster_json placement_json profile_json onnx_import
           checkpoint)
fi

# Fixtures that seed each target besides fuzz/seeds/<target>/. The ONNX
# fixtures (20-110 kB) are left out: they run at ~30 executions/s against
# ~1000/s for the small hand-written seeds (onnx_import_test imports them).
fixtures() {
  case "$1" in
    graph_json) ls examples/mlp_training.json ;;
    placement_json) ls examples/*.placement.json ;;
  esac
}

failed=0
for t in "${targets[@]}"; do
  corpus="$build/corpus/$t"
  crashes="$build/crashes/$t"
  mkdir -p "$corpus" "$crashes"
  for f in fuzz/seeds/"$t"/* testdata/fuzz-regressions/"$t"/* \
           $(fixtures "$t"); do
    [ -f "$f" ] && cp -n "$f" "$corpus/" || true
  done
  flags=(-dict=fuzz/json.dict)
  [ "$t" = onnx_import ] && flags=(-max_len=4096)
  # Seeds: checkpoints of 18 and 50 kB (a tiny post and colocrl search).
  [ "$t" = checkpoint ] && flags=(-dict=fuzz/checkpoint.dict -max_len=65536)
  lsan=${LSAN_OPTIONS:-}
  [ "$t" = checkpoint ] && lsan=suppressions=fuzz/checkpoint.lsan.supp
  log="$build/fuzz-$t.log"
  echo "fuzz: $t for ${seconds}s (log $log)"
  rc=0
  LSAN_OPTIONS=$lsan nice -n 19 "$build/${t}_fuzzer" "${flags[@]}" \
    -max_total_time="$seconds" -print_final_stats=1 -timeout=30 \
    -rss_limit_mb=4096 -artifact_prefix="$crashes/" "$corpus" \
    >"$log" 2>&1 || rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  printf '%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$t" "$seconds" \
    "${runs:-?}" "$rc" >>"$build/fuzz-log.tsv"
  echo "fuzz: $t: ${runs:-?} executions, exit $rc"
  if [ "$rc" -ne 0 ]; then
    failed=1
    grep -m1 -A3 "ERROR\|fuzz property violated\|runtime error" "$log" || true
  fi
done
exit $failed
