#!/usr/bin/env bash
# Fault injection and bad input over the dplace command (docs/robustness.md,
# "Faults"). Produces the counts that page states.
#
# Faults: searches of post, colocrl and mcmc on examples/mlp_training.json
# and k80x2 (with --log, --checkpoint and --out) are stopped by a signal at
# a chosen system call, injected with strace: the first write of the log
# (before any checkpoint), the second write of a checkpoint (in the middle
# of writing it), the rename that completes it, a write of the log after
# which the last log line is cut in half (a torn line), three SIGKILLs at
# random log writes; SIGTERM at the first log write and at two random
# ones, SIGINT at a random one (each must stop the search after its batch
# with exit 143 / 130 and the line that says how to continue it), and a
# SIGTERM followed by a second one at the next write (which must end the
# process at once); a full disk (a tmpfs in a mount namespace, unshare
# -rm) during the second checkpoint; and, where dplace has MPI, an MPI
# worker that exits. Each search is then resumed from its checkpoint (by
# the command it printed, when it printed one; run again when it wrote no
# checkpoint) and must end with the placement and the log (wall times
# aside) of an uninterrupted search.
#
# Bad input: graph, cluster, placement and ONNX files a user could produce
# (cut short, empty, not JSON, keys named twice, wrong types and values),
# checkpoints with a byte changed at random places or cut short, another
# search's checkpoint, values out of range, outputs that cannot be written
# or that another process is writing. Each must exit 2 with nothing on
# stdout and one line "dplace: error: ..." on stderr that gives a reason.
#
# Usage: scripts/fault-injection.sh [DPLACE]   (default: build/dplace)
# Prints one line per case, then the counts; exits 1 if any case fell short.
# Takes a few minutes; needs strace for the injected faults (skipped, and
# said, without it).
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DPLACE=$(realpath "${1:-$ROOT/build/dplace}")
GRAPH=$ROOT/examples/mlp_training.json
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
RANDOM=50  # The random kill points and byte positions are the same each run.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

faults=0 identical=0 bad=0 handled=0 failed=0

# mcmc checkpoints every 10 updates, as the agents do, not at most once a
# second (its default): its 600 samples take under a second on a fast
# machine, which would then write only the final checkpoint, and the full
# disk during the second one would never come.
declare -A METHOD=(
  [post]="--method post --budget-samples 360"
  [colocrl]="--method colocrl --option hidden=8 --option embedding=4 --budget-samples 120"
  [mcmc]="--method mcmc --budget-samples 600 --checkpoint-seconds 0"
)

# The search of method $1, writing its files in the current folder.
search() {
  # shellcheck disable=SC2086
  echo "$DPLACE place --model $GRAPH --cluster k80x2 --seed 1 ${METHOD[$1]}" \
    "--log d.jsonl --checkpoint C.ckpt --out p.json"
}

strip_wall() { sed -E 's/"wall_s":[^,}]*,?//' "$1"; }

# Resumes the search of method $1 in folder $2 (by the command it printed
# when a signal stopped it; or runs it again when it left no checkpoint)
# and compares it with the uninterrupted one.
resume_and_compare() {
  local method=$1 dir=$2 name=$3 note=""
  cd "$dir" || return
  local printed=""
  [ -f killed.err ] && printed=$(sed -n 's/^.*; to continue it: dplace //p' killed.err)
  if [ -n "$printed" ]; then
    note=" (resumed by the command it printed)"
    eval "\"\$DPLACE\" $printed" > resumed.out 2> resumed.err
  elif [ -f C.ckpt ]; then
    $(search "$method") --resume C.ckpt > resumed.out 2> resumed.err
  else
    note=" (no checkpoint yet: run again)"
    $(search "$method") > resumed.out 2> resumed.err
  fi
  local rc=$?
  note="$note $(grep -o 'resumed at [0-9]*' resumed.out)"
  if grep -q 'warning: log' resumed.err; then note="$note, torn log line dropped"; fi
  faults=$((faults + 1))
  if [ $rc = 0 ] && cmp -s p.json "$WORK/$method/ref/p.json" &&
     cmp -s <(strip_wall d.jsonl) <(strip_wall "$WORK/$method/ref/d.jsonl"); then
    identical=$((identical + 1))
    echo "fault    $method $name:$note: identical"
  else
    failed=$((failed + 1))
    echo "fault    $method $name:$note: DIFFERENT (exit $rc: $(head -c 300 resumed.err))"
  fi
  cd "$WORK" || exit 1
}

# Runs the search of method $1 in a new folder under strace, stopped by
# signal $3 at the $4th `$5` system call on file $6 (and on file $7, when
# given: the calls on both count); then resumes it. A single SIGTERM or
# SIGINT must stop the search with exit 143 / 130 and the line that says
# how to continue it.
inject() {
  local method=$1 name=$2 signal=$3 when=$4 call=$5 file=$6 also=${7:-}
  local dir=$WORK/$method/$name
  mkdir -p "$dir" && cd "$dir" || exit 1
  local paths=(-P "$dir/$file" -P "$file")
  [ -n "$also" ] && paths+=(-P "$dir/$also" -P "$also")
  # -P twice: strace matches a write by its file's full path, a rename by
  # the path as the call gives it. Bash's note of the killed job is dropped.
  (strace -f -o /dev/null "${paths[@]}" -e trace="$call" \
    -e inject="$call:signal=$signal:when=$when" \
    $(search "$method") > killed.out 2> killed.err; echo $? > killed.rc) 2> /dev/null
  if [[ "$signal" =~ ^(TERM|INT)$ && "$when" =~ ^[0-9]+$ ]]; then
    local want=143
    [ "$signal" = INT ] && want=130
    if [ "$(cat killed.rc)" != $want ] ||
       ! grep -q "^dplace: SIG$signal: the search stopped after [0-9]* samples of [0-9]*; checkpoint C.ckpt written; to continue it: dplace place " killed.err; then
      echo "fault    $method $name: expected exit $want and the line saying how to continue, got exit $(cat killed.rc): $(head -c 300 killed.err)"
      faults=$((faults + 1)) failed=$((failed + 1))
      cd "$WORK" || exit 1
      return
    fi
  fi
  if [ "$name" = torn-log-line ]; then
    local last
    last=$(tail -n 1 d.jsonl | wc -c)
    truncate -s "-$((last / 2))" d.jsonl
  fi
  resume_and_compare "$method" "$dir" "$name"
}

# The search of method $1 on a tmpfs that holds one checkpoint but not two.
full_disk() {
  local method=$1 dir=$WORK/$1/full-disk
  mkdir -p "$dir/full" && cd "$dir" || exit 1
  local pages=$((($(stat -c %s "$WORK/$method/ref/C.ckpt") + 4095) / 4096 + 1))
  unshare -rm sh -c "mount -t tmpfs -o size=$((4 * pages))k none full &&
    $(search "$method" | sed 's| C.ckpt| full/C.ckpt|') > killed.out 2> killed.err;
    echo \$? > killed.rc; cp full/C.ckpt C.ckpt"
  if [ "$(cat killed.rc)" != 2 ] || ! grep -q 'No space left on device' killed.err; then
    echo "fault    $method full-disk: expected exit 2 and \"No space left on device\", got exit $(cat killed.rc): $(cat killed.err)"
    faults=$((faults + 1)) failed=$((failed + 1))
    cd "$WORK" || exit 1
    return
  fi
  resume_and_compare "$method" "$dir" "full-disk (exit 2: $(sed 's/^dplace: error: //' killed.err))"
}

# An MPI worker exits when handed the job's 130th placement or a later one;
# the job ends and is resumed
# under mpirun.
mpi_worker() {
  local dir=$WORK/post/mpi-worker-exits
  mkdir -p "$dir" && cd "$dir" || exit 1
  mpirun --oversubscribe --bind-to none -np 3 $(search post) --env mpi \
    --mpi-exit-worker 1:130 > killed.out 2>&1
  faults=$((faults + 1))
  mpirun --oversubscribe --bind-to none -np 3 $(search post) --env mpi \
    --resume C.ckpt > resumed.out 2> resumed.err
  local rc=$?
  if [ $rc = 0 ] && cmp -s p.json "$WORK/post/ref/p.json" &&
     cmp -s <(strip_wall d.jsonl) <(strip_wall "$WORK/post/ref/d.jsonl"); then
    identical=$((identical + 1))
    echo "fault    post mpi-worker-exits: $(grep -o 'resumed at [0-9]*' resumed.out): identical"
  else
    failed=$((failed + 1))
    echo "fault    post mpi-worker-exits: DIFFERENT (exit $rc: $(head -c 300 resumed.err))"
  fi
  cd "$WORK" || exit 1
}

# Runs a dplace command (the arguments) that must refuse its input: exit 2,
# nothing on stdout, one line on stderr with a reason.
expect_bad() {
  local name=$1
  shift
  bad=$((bad + 1))
  "$@" > "$WORK/bad.out" 2> "$WORK/bad.err"
  local rc=$?
  local line
  line=$(head -n 1 "$WORK/bad.err")
  if [ $rc = 2 ] && [ ! -s "$WORK/bad.out" ] &&
     [ "$(wc -l < "$WORK/bad.err")" = 1 ] &&
     [[ "$line" =~ ^dplace:\ error:\ .*[^\ :]$ ]]; then
    handled=$((handled + 1))
    echo "bad      $name: ${line#dplace: error: }" | cut -c 1-220
  else
    failed=$((failed + 1))
    echo "bad      $name: NOT HANDLED (exit $rc): $(head -c 400 "$WORK/bad.err")"
  fi
}

# $1 with the byte at offset $2 changed (xor 1), written to $3.
flip_byte() {
  cp "$1" "$3"
  local byte
  byte=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
  printf "$(printf '\\%03o' $((byte ^ 1)))" |
    dd of="$3" bs=1 seek="$2" conv=notrunc status=none
}

cd "$WORK" || exit 1

# --- Faults -------------------------------------------------------------
for method in post colocrl mcmc; do
  mkdir -p "$WORK/$method/ref" && cd "$WORK/$method/ref" || exit 1
  $(search "$method") > ref.out 2>&1 || { echo "reference $method failed"; cat ref.out; exit 1; }
  cd "$WORK" || exit 1
  if ! command -v strace > /dev/null; then
    echo "fault    $method: strace is not installed: injected faults skipped"
  else
    # How many writes the log takes, for random points among them.
    (cd "$WORK/$method/ref" && rm -f d.jsonl C.ckpt p.json &&
      strace -f -o writes.txt -P "$PWD/d.jsonl" -e trace=write \
        $(search "$method") > /dev/null 2>&1)
    writes=$(grep -c 'write(' "$WORK/$method/ref/writes.txt")
    inject "$method" kill-before-first-checkpoint KILL 1 write d.jsonl
    inject "$method" kill-while-writing-checkpoint KILL 2 write C.ckpt.tmp
    inject "$method" kill-at-checkpoint-rename KILL 2 rename C.ckpt.tmp
    inject "$method" torn-log-line KILL $((writes / 2)) write d.jsonl
    for i in 1 2 3; do
      inject "$method" "kill-$i" KILL $((2 + RANDOM % (writes - 2))) write d.jsonl
    done
    inject "$method" sigterm TERM $((2 + RANDOM % (writes - 2))) write d.jsonl
    inject "$method" sigint INT $((2 + RANDOM % (writes - 2))) write d.jsonl
    inject "$method" sigterm-at-first-batch TERM 1 write d.jsonl
    inject "$method" sigterm-2 TERM $((2 + RANDOM % (writes - 2))) write d.jsonl
    # The second SIGTERM comes at the next write, of the log or of the
    # final checkpoint: it ends the process at once.
    n=$((2 + RANDOM % (writes - 2)))
    inject "$method" sigterm-twice TERM "$n..$((n + 1))" write d.jsonl C.ckpt.tmp
  fi
  if unshare -rm true 2> /dev/null; then
    full_disk "$method"
  else
    echo "fault    $method full-disk: skipped: no mount namespace (unshare -rm)"
  fi
done
# grep reads all of ldd's output: with -q it could stop at the first match,
# ldd would die of SIGPIPE, and pipefail would call the pipeline false.
if command -v mpirun > /dev/null && ldd "$DPLACE" | grep libmpi > /dev/null; then
  mpi_worker
else
  echo "fault    post mpi-worker-exits: skipped: no mpirun or no MPI in this dplace"
fi

# --- Bad input ----------------------------------------------------------
place=("$DPLACE" place --cluster k80x2 --method m-etf --model)
cluster_json=$WORK/k80x2.json
"$DPLACE" cluster show k80x2 --json > "$cluster_json"
placement=$WORK/p.placement.json
"$DPLACE" place --model "$GRAPH" --cluster k80x2 --method m-etf --out "$placement" > /dev/null

graph_case() {  # name, sed expression on the example graph
  sed -e "$2" "$GRAPH" > "$WORK/g-$1.json"
  expect_bad "graph $1" "${place[@]}" "$WORK/g-$1.json"
}
head -c 3000 "$GRAPH" > "$WORK/g-cut.json"
expect_bad "graph cut short" "${place[@]}" "$WORK/g-cut.json"
: > "$WORK/g-empty.json"
expect_bad "graph empty" "${place[@]}" "$WORK/g-empty.json"
echo "hello" > "$WORK/g-text.json"
expect_bad "graph not JSON" "${place[@]}" "$WORK/g-text.json"
expect_bad "graph missing" "${place[@]}" "$WORK/none.json"
expect_bad "graph a folder" "${place[@]}" "$WORK"
graph_case key-twice '0,/"flops": 0,/s//"flops": 0, "flops": 5,/'
graph_case version-twice 's/"version": 1,/"version": 1, "version": 2,/'
graph_case negative-bytes '0,/"bytes": 16777216/s//"bytes": -16777216/'
graph_case unknown-field '0,/"flops": 0,/s//"flop": 0,/'
graph_case wrong-format 's/dplace.graph/dplace.grahp/'
graph_case version-2 's/"version": 1,/"version": 2,/'
graph_case flops-text '0,/"flops": 0,/s//"flops": "many",/'
graph_case flops-infinite '0,/"flops": 0,/s//"flops": 1e999,/'
graph_case shape-negative '0,/      512,/s//      -512,/'
graph_case unknown-phase '0,/"phase": "forward"/s//"phase": "sideways"/'
graph_case unknown-device-kind '0,/"cpu"/s//"tpu"/'
graph_case name-twice 's/"name": "layer_0\/weights"/"name": "input"/'
graph_case input-unknown 's/"inputs": \[\]/"inputs": ["ghost"]/'
graph_case ops-not-array 's/"ops": \[/"ops": {"a": [/; $s/}$/}}/'
graph_case bytes-huge '0,/"bytes": 16777216/s//"bytes": 99999999999999999999999/'

cluster_case() {  # name, sed expression on k80x2's JSON
  sed -e "$2" "$cluster_json" > "$WORK/c-$1.json"
  expect_bad "cluster $1" "$DPLACE" place --model "$GRAPH" --method m-etf \
    --cluster "$WORK/c-$1.json"
}
head -c 500 "$cluster_json" > "$WORK/c-cut.json"
expect_bad "cluster cut short" "$DPLACE" place --model "$GRAPH" --method m-etf --cluster "$WORK/c-cut.json"
expect_bad "cluster unknown preset" "$DPLACE" place --model "$GRAPH" --method m-etf --cluster k80x3
cluster_case key-twice '0,/"kind": "cpu",/s//"kind": "cpu", "kind": "gpu",/'
cluster_case zero-memory '0,/"memory_bytes": 26000000000/s//"memory_bytes": 0/'
cluster_case negative-flops '0,/"peak_flops": 563200000000.0/s//"peak_flops": -1/'
cluster_case unknown-kind '0,/"kind": "cpu"/s//"kind": "qpu"/'
cluster_case device-name-twice 's/"name": "gpu:1"/"name": "gpu:0"/'
cluster_case wrong-format 's/dplace.cluster/dplace.clustr/'
cluster_case bandwidth-text '0,/"memory_bandwidth": 76800000000.0/s//"memory_bandwidth": "fast"/'

placement_case() {  # name, sed expression on an m-etf placement
  sed -e "$2" "$placement" > "$WORK/p-$1.json"
  expect_bad "placement $1" "$DPLACE" simulate --model "$GRAPH" --cluster k80x2 \
    --placement "$WORK/p-$1.json"
}
head -c 300 "$placement" > "$WORK/p-cut.json"
expect_bad "placement cut short" "$DPLACE" simulate --model "$GRAPH" --cluster k80x2 --placement "$WORK/p-cut.json"
placement_case op-twice 's/"input": "cpu:0"/"input": "gpu:0", "input": "cpu:0"/'
placement_case unknown-device 's/"gpu:1"/"gpu:9"/'
placement_case unknown-op 's/"input": /"inputz": /'
placement_case graph-hash 's/"graph_hash": "[0-9a-f]*"/"graph_hash": "0000000000000000"/'
placement_case cpu-op-on-gpu 's/"input": "cpu:0"/"input": "gpu:0"/'
placement_case another-cluster 's/"cluster": "k80x2"/"cluster": "k80x4"/'
expect_bad "placement on another cluster" "$DPLACE" simulate --model "$GRAPH" --cluster k80x4 --placement "$placement"

onnx=$ROOT/testdata/onnx/resnet18.onnx
head -c 20000 "$onnx" > "$WORK/cut.onnx"
expect_bad "onnx cut short" "$DPLACE" import "$WORK/cut.onnx" -o "$WORK/g.json"
cp "$WORK/post/ref/C.ckpt" "$WORK/zip.onnx"
expect_bad "onnx that is a ZIP archive" "$DPLACE" import "$WORK/zip.onnx" -o "$WORK/g.json"
: > "$WORK/empty.onnx"
expect_bad "onnx empty" "$DPLACE" import "$WORK/empty.onnx" -o "$WORK/g.json"
cp "$GRAPH" "$WORK/json.onnx"
expect_bad "onnx that is JSON" "$DPLACE" import "$WORK/json.onnx" -o "$WORK/g.json"
expect_bad "onnx --batch 0" "$DPLACE" import "$onnx" --batch 0 -o "$WORK/g.json"
expect_bad "onnx --batch -4" "$DPLACE" import "$onnx" --batch -4 -o "$WORK/g.json"
expect_bad "onnx --optimizer" "$DPLACE" import "$onnx" --optimizer lbfgs -o "$WORK/g.json"
expect_bad "onnx -o in a missing folder" "$DPLACE" import "$onnx" -o "$WORK/no/g.json"

# Checkpoints: 14 random bytes changed in each agent's, 10 in mcmc's, each
# cut short, another method's, other options, another seed. Resumed in a
# folder of their own (a refused resume writes nothing).
mkdir -p "$WORK/scratch" && cd "$WORK/scratch" || exit 1
for method in post colocrl mcmc; do
  ckpt=$WORK/$method/ref/C.ckpt
  size=$(stat -c %s "$ckpt")
  count=14
  [ "$method" = mcmc ] && count=10
  for _ in $(seq "$count"); do
    at=$(((RANDOM * 32768 + RANDOM) % size))
    flip_byte "$ckpt" "$at" "$WORK/flipped.ckpt"
    expect_bad "checkpoint $method: byte $at of $size changed" \
      $(search "$method") --resume "$WORK/flipped.ckpt"
  done
  head -c $((size / 2)) "$ckpt" > "$WORK/cut.ckpt"
  expect_bad "checkpoint $method: cut short" $(search "$method") --resume "$WORK/cut.ckpt"
  expect_bad "checkpoint $method: another seed" \
    $(search "$method" | sed 's/--seed 1/--seed 2/') --resume "$ckpt"
  expect_bad "checkpoint $method: missing" $(search "$method") --resume "$WORK/none.ckpt"
done
expect_bad "checkpoint post: other --option" \
  $(search post) --option batch=24 --resume "$WORK/post/ref/C.ckpt"
expect_bad "checkpoint colocrl: other --option" \
  $(search colocrl | sed 's/hidden=8/hidden=16/') --resume "$WORK/colocrl/ref/C.ckpt"
expect_bad "checkpoint mcmc: other --option" \
  $(search mcmc) --option beta=3 --resume "$WORK/mcmc/ref/C.ckpt"
expect_bad "checkpoint of post resumed by colocrl" \
  $(search colocrl) --resume "$WORK/post/ref/C.ckpt"
expect_bad "checkpoint of post resumed by mcmc" \
  $(search mcmc) --resume "$WORK/post/ref/C.ckpt"
expect_bad "checkpoint of mcmc resumed by post" \
  $(search post) --resume "$WORK/mcmc/ref/C.ckpt"
expect_bad "checkpoint that is a graph" $(search post) --resume "$GRAPH"

# Logs: a torn line that is not the last is not a crash's.
cp "$WORK/post/ref/d.jsonl" d.jsonl
sed -i '5s/.*/{"bes/' d.jsonl
expect_bad "log with a torn line inside" $(search post) --resume "$WORK/post/ref/C.ckpt"

# Values and outputs.
agent=("$DPLACE" place --model "$GRAPH" --cluster k80x2 --method post)
expect_bad "--seed -1" "${agent[@]}" --seed -1
expect_bad "--seed 2^64" "${agent[@]}" --seed 18446744073709551616
expect_bad "--seed text" "${agent[@]}" --seed one
expect_bad "--budget-samples 0" "${agent[@]}" --budget-samples 0
expect_bad "--budget-seconds -3" "${agent[@]}" --budget-seconds -3
expect_bad "--controllers 0" "${agent[@]}" --controllers 0
expect_bad "--mpi-timeout -1" "${agent[@]}" --mpi-timeout -1
expect_bad "--option unknown" "${agent[@]}" --option ce_evry=6
expect_bad "--option out of range" "${agent[@]}" --option workers=0
expect_bad "--option twice" "${agent[@]}" --option batch=12 --option batch=24
expect_bad "--method unknown" "$DPLACE" place --model "$GRAPH" --cluster k80x2 --method post-it
expect_bad "--model unknown zoo model" "$DPLACE" place --model zoo:alexnet --cluster k80x2 --method m-etf
expect_bad "--out in a missing folder" "${agent[@]}" --budget-samples 24 --out /nonexistent/dir/p.json
expect_bad "--out a folder" "${agent[@]}" --budget-samples 24 --out "$WORK"
expect_bad "--trace in a missing folder" "${agent[@]}" --budget-samples 24 --trace "$WORK/no/t.json"
expect_bad "--log in a missing folder" "${agent[@]}" --budget-samples 24 --log "$WORK/no/d.jsonl"
expect_bad "--out and --trace one file" "${agent[@]}" --out x.json --trace x.json
expect_bad "zoo export -o a folder" "$DPLACE" zoo export mlp -o "$WORK"
expect_bad "report -o in a missing folder" "$DPLACE" report "$WORK/none.json" -o "$WORK/no/r.html"
for output in --log --checkpoint --out; do
  file=held$output
  expect_bad "a second writer of $output" flock "$file.lock" \
    "${agent[@]}" --budget-samples 24 --log held--log --checkpoint held--checkpoint --out held--out
done

echo
echo "faults injected: $faults, resumed identical: $identical"
echo "bad inputs tried: $bad, handled (exit 2, one line with a reason): $handled"
[ "$failed" = 0 ]
