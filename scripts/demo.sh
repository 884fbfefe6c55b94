#!/usr/bin/env bash
# The demo of `make demo`: inspect the example training graph, show the
# preset it runs on, and simulate two placements of it, writing a trace.
set -euo pipefail
dplace=${1:-build/dplace}
out=$(dirname "$dplace")/demo
mkdir -p "$out"

run() {
  echo
  echo "\$ dplace $*"
  "$dplace" "$@"
}

run inspect --graph examples/mlp_training.json
run cluster show k80x2
run simulate --graph examples/mlp_training.json --cluster k80x2 \
  --placement examples/mlp_one_gpu.placement.json
run simulate --graph examples/mlp_training.json --cluster k80x2 \
  --placement examples/mlp_two_gpus.placement.json --trace "$out/trace.json"
