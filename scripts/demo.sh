#!/usr/bin/env bash
# The demo of `make demo`: inspect the example training graph, show the
# preset it runs on, simulate two placements of it (writing a trace), then
# place a zoo model with a classical placer and a learned one.
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
# A real placement end to end: the papers' 2-layer NMT (27k ops, too big for
# one K40) placed by Baechi's m-ETF and by a Post search of 10,000 samples
# (about 12 s on 2 cores), which beats the human expert's 0.8556 s.
run place --model zoo:nmt --cluster k40x2 --method m-etf \
  --out "$out/nmt.m-etf.placement.json" --trace "$out/nmt.m-etf.trace.json"
run place --model zoo:nmt --cluster k40x2 --method post --budget-samples 10000 \
  --seed 1 --log "$out/nmt.post.jsonl" --out "$out/nmt.post.placement.json"
