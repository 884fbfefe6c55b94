#!/usr/bin/env bash
# Regenerates docs/fidelity.md: how well the simulator, fed a profile of
# this machine, predicts step times measured by real execution. Detects the
# local cluster (cluster detect), profiles each model (profile), then
# simulates and measures single-device, placer and random placements
# (fidelity) and writes the tables, statistics and scatter plots.
#   scripts/make-fidelity-doc.sh [build/dplace]
# Run it on a quiet machine: other jobs on the cores distort the
# measurements (and so the errors). Environment:
#   SAMPLES      placements per model (default 20)
#   STEPS        measured steps per placement and round (default 3)
#   PROFILE_STEPS  profiled steps per device (default 60: a longer window
#                lets a passing slow spell of the machine skew the profile,
#                and so every simulated time, less)
#   CPU_DEVICES  logical CPU devices cpu:0..N-1 (default 2)
#   RESNET       the ResNet model (default zoo:resnet:depth=18,batch=1,image=32)
#   NMT          the NMT model (default: 2 layers, batch 8, 128 units,
#                vocabulary 2000, 10 source and target steps)
#   ROUNDS       passes measuring every placement (default 36 for ResNet,
#                48 for NMT, whose steps are shorter: many short passes in
#                shuffled orders spread the machine's spells over all
#                placements alike, and give each placement more chances
#                of a round the machine did not disturb)
#   STATISTIC    what a placement's rounds make its time: fastest-quarter
#                (default: the mean of the fastest quarter), fastest or
#                median
#   SEED         seed of the random placements (default 1)
#   OUT          default docs/fidelity.md (plots beside it)
#   WORK         detected cluster, profiles and logs, default
#                build/fidelity-doc
#   KEPT         default docs/results-data/fidelity.tar.gz: what the
#                document is made from (the text outputs of detect,
#                profile and fidelity, the machine and the settings),
#                kept in the repository; a run writes it
#   RUN          default yes; no: measure nothing, write the document from
#                KEPT (byte for byte what the run wrote; the plots, which
#                fidelity draws, stay as they are)
set -euo pipefail
dplace=${1:-build/dplace}
samples=${SAMPLES:-20}
steps=${STEPS:-3}
profile_steps=${PROFILE_STEPS:-60}
cpu_devices=${CPU_DEVICES:-2}
resnet=${RESNET:-zoo:resnet:depth=18,batch=1,image=32}
nmt=${NMT:-zoo:nmt:layers=2,batch=8,units=128,vocab=2000,source_steps=10,target_steps=10}
seed=${SEED:-1}
statistic=${STATISTIC:-fastest-quarter}
out=${OUT:-docs/fidelity.md}
work=${WORK:-build/fidelity-doc}
docs_dir=$(dirname "$out")
kept=${KEPT:-docs/results-data/fidelity.tar.gz}
run=${RUN:-yes}
mkdir -p "$work" "$docs_dir" "$(dirname "$kept")"
# What the document reads besides $work's files: saved with them in KEPT.
saved=(commit elapsed cpu_model threads memory cpu_devices devices samples
       steps profile_steps seed statistic detected_latencies dplace models)

# shellcheck source=scripts/kept-results.sh
. "$(dirname "$0")/kept-results.sh"
if [ "$run" = no ]; then
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  kept_unpack "$kept" "$work" "fidelity results"
  # shellcheck disable=SC1091
  source "$work/meta.sh"
else
devices=$(seq -s, -f 'cpu:%g' 0 $((cpu_devices - 1)))
started=$(date +%s)

echo "detecting the local cluster ..." >&2
"$dplace" cluster detect --cpu-devices "$cpu_devices" -o "$work/local.json" \
  > "$work/detect.txt"
# Four more detections, to show how far the links' benchmark moves.
# "1.2 + 5.8": a detected link's latency and hand-off (µs; detect prints
# no hand-off when it is 0).
link_costs() {
  sed -n -e 's/^cpu:0 -> cpu:1: [^,]*, \([0-9.]*\) us, hand-off \([0-9.]*\) us, .*/\1 + \2/p' \
    -e 's/^cpu:0 -> cpu:1: [^,]*, \([0-9.]*\) us, copied .*/\1 + 0/p'
}
detected_latencies=$(link_costs < "$work/detect.txt")
for _ in 1 2 3 4; do
  detected_latencies+=", $("$dplace" cluster detect --cpu-devices "$cpu_devices" \
    -o "$work/detect-again.json" 2> /dev/null | link_costs)"
done


models=("resnet $resnet ${ROUNDS:-36}" "nmt $nmt ${ROUNDS:-48}")
for entry in "${models[@]}"; do
  read -r name spec rounds <<< "$entry"
  echo "profiling $name ($spec) ..." >&2
  "$dplace" profile --model "$spec" --devices "$devices" --steps "$profile_steps" \
    --statistic "$statistic" --round-steps 1 \
    -o "$work/$name.profile.json" > "$work/$name.profile.txt" \
    2> "$work/$name.profile.err"
  echo "fidelity of $name: $samples placements ..." >&2
  "$dplace" fidelity --model "$spec" --cluster "$work/local.json" \
    --profile "$work/$name.profile.json" --samples "$samples" \
    --steps "$steps" --rounds "$rounds" --statistic "$statistic" \
    --seed "$seed" --calibrate-links --placements "$work/$name-placements" \
    --svg "$docs_dir/fidelity-$name.svg" --markdown "$work/$name.md" \
    > "$work/$name.fidelity.txt" 2> "$work/$name.fidelity.err"
done
elapsed=$(( $(date +%s) - started ))
cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
threads=$(nproc)
memory=$(awk '/^MemTotal:/ { printf "%.1f GB", $2 * 1024 / 1e9 }' /proc/meminfo)
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
declare -p "${saved[@]}" > "$work/meta.sh"
files=(meta.sh detect.txt)
for entry in "${models[@]}"; do
  read -r name _ <<< "$entry"
  files+=("$name.profile.txt" "$name.fidelity.txt" "$name.fidelity.err"
          "$name.md")
done
kept_pack "$kept" "$work" "${files[@]}"
fi
rounds_text=$(for entry in "${models[@]}"; do
  read -r name _ rounds <<< "$entry"
  echo "$rounds for $name"
done | paste -sd, | sed 's/,/, /g')
case $statistic in
  fastest)
    statistic_phrase="its fastest step, the steps of all its rounds pooled"
    profile_phrase="its fastest step" ;;
  fastest-quarter)
    statistic_phrase="the mean of its fastest quarter of steps, the steps of all its rounds pooled"
    profile_phrase="the mean of its fastest quarter of steps" ;;
  *)
    statistic_phrase="its median step, the steps of all its rounds pooled"
    profile_phrase="its median step" ;;
esac

# "MAPE 8.1%, max error 21.3%, Spearman 0.940, Kendall 0.830 (n = 20)" of a
# fidelity output, as table cells.
summary_cells() {
  sed -n 's/^MAPE \([^,]*\), max error \([^,]*\), Spearman \([^,]*\), Kendall \([^ ]*\) (n = \([0-9]*\))$/\1 | \2 | \3 | \4 | \5/p' "$1"
}
# The re-measurement line's MAPE and Spearman, as table cells ("- | -"
# with one round).
retest_cells() {
  local cells
  cells=$(sed -n 's/^re-measured (even rounds against odd rounds): MAPE \([^,]*\), max error [^,]*, Spearman \([^,]*\),.*/\1 | \2/p' "$1")
  echo "${cells:-- | -}"
}
# The other statistics' MAPE, Spearman and re-measured Spearman as one
# table cell ("fastest round: 3.7% / 0.908 / 0.811; median: ..."; "-"
# with one round).
other_cells() {
  local cells
  cells=$(sed -n 's/^with the \(.*\) instead of the .*: MAPE \([^,]*\), max error [^,]*, Spearman \([^,]*\),.*re-measured Spearman \([^ ]*\)$/\1: \2 \/ \3 \/ \4/p' "$1" |
    sed 's/ of the \(rounds\|steps\):/:/' | paste -sd';' | sed 's/;/; /g')
  echo "${cells:--}"
}
# The fitted link latency factor ("x2.71").
scale_of() {
  sed -n 's/^links calibrated in the same rounds: every latency \([^ ]*\) .*/\1/p' "$1"
}
# The fitted shared-host factor on op times ("x1.150"; "-" without).
slowdown_of() {
  local cell
  cell=$(sed -n 's/^links calibrated in the same rounds: .*; ops \(x[0-9.]*\) on a device where.*/\1/p' "$1")
  echo "${cell:--}"
}
# The figures with the cluster's own link latencies, MAPE and Spearman as
# table cells.
uncalibrated_cells() {
  local cells
  cells=$(sed -n "s/^simulated with the cluster's own link latencies instead: MAPE \([^,]*\), max error [^,]*, Spearman \([^,]*\),.*/\1 | \2/p" "$1")
  echo "${cells:-- | -}"
}
# The mean op time ratios by devices used ("x0.93 on 1 device, x1.03 on 2
# devices"; "-" without them).
op_time_cell() {
  local cell
  cell=$(sed -n 's/^op time, measured over simulated: //p' "$1" |
    sed 's/ ([0-9]* placements\{0,1\})//g')
  echo "${cell:--}"
}
# "met" or "not met" for MAPE <= 15% and Spearman >= 0.9.
targets_of() {
  sed -n 's/^MAPE \([0-9.]*\)%, .*Spearman \([-0-9.]*\),.*/\1 \2/p' "$1" |
    awk '{ print ($1 <= 15 && $2 >= 0.9) ? "met" : "not met" }'
}

{
  cat <<EOF
# Simulator fidelity: simulated vs measured step times

Generated by \`scripts/make-fidelity-doc.sh\` (at commit $commit, in
${elapsed} s; do not edit by hand). It asks how well \`dplace\`'s
simulator, fed a profile of this machine, predicts the step times that
real execution measures (\`src/dplace/exec\`: every op of the training
graph runs a LibTorch kernel of its shapes on random data).

**Machine.** $cpu_model, $threads hardware thread(s), $memory of memory;
no GPU. The cluster is $cpu_devices logical CPU devices
(\`$devices\`), each a worker thread with its share of the hardware
threads (\`dplace cluster detect\`).
CPU+GPU placements are measured in fidelity-gpu.md (one H200).

**Method.** For each model: \`dplace profile\` times every op on each CPU
device ($profile_steps steps, the median per op plus an equal share of the step
time between ops; with \`--statistic $statistic\` every op is then scaled
alike so that a device's ops sum to $profile_phrase, the same statistic
as the measurements below; an op's time is the mean over the devices)
and writes the profile the simulator uses; then \`dplace fidelity\` takes
$samples placements (each device alone, the placers m-topo, m-etf, m-sct,
scotch, metis and expert where they succeed, the topological order cut
at 25, 50 and 75% between the first and the last device, then random
placements per co-location group and per op, seed $seed), simulates each
with the profile and measures each in rounds ($rounds_text), every round
measuring every placement once, the first in order and the others each
in its own shuffled order, so that a slow or fast spell of the machine
falls on different placements in each (one warm-up step, then $steps
timed steps). A placement's time is $statistic_phrase
(\`--statistic $statistic\`). Other work on the machine only ever adds
time, so the fastest steps are the ones it disturbed least; the mean
of the fastest quarter is moved less than the single fastest step by
one lucky step. The "other statistics" column gives the figures for the
other choices (MAPE / Spearman / re-measured Spearman).

**Links and the shared host calibrated in the same rounds**
(\`--calibrate-links\`). Every round also measures three placements that
are not among the 20 (\`dplace cluster calibrate\`'s): every op on
\`cpu:0\` (the reference), a random per-op placement of another seed
than the random samples', and the topological order cut at 40% between
\`cpu:0\` and \`cpu:1\` (the split placement, few edges cut; the samples
cut at 25, 50 and 75%). The split placement's time over the reference's,
beyond what the simulator gives it, is the shared-host slowdown: on this
machine a placement that uses both logical devices runs every op slower
than one that uses one (both devices' threads stay active through the
step, and the two cores share the machine's caches and memory), and the
simulator multiplies the op times of every placement that uses both
devices by that factor (the "ops beside another
device" column). Then
one factor on every link latency is fitted by bisection so that the
simulated ratio of the random placement's time to the reference's equals the measured one
(each the statistic of its steps, all rounds pooled), fitted again to the odd and to the even
rounds alone, and moved from 1 only as far as all three fits agree.
Every placement is then simulated on the calibrated cluster; the
"uncalibrated" columns give the figures with the detected cluster's
latencies and no shared-host slowdown. The cost of a cross-device edge on this virtual machine
drifts (five \`cluster detect\` runs in a row before the measurements
gave latency + hand-off of $detected_latencies µs from \`cpu:0\` to
\`cpu:1\`), and one benchmark taken before the measurements does not
follow it; a fit over the same rounds can. The factor scales each link's
latency and hand-off alike. No measurement of
the 20 placements enters the fit. Errors are
(simulated − measured) / measured; MAPE is their mean absolute value;
Spearman and Kendall (tau-b) compare the rankings, which is what a placer
needs from the simulator. Targets: Spearman ≥ 0.9 and MAPE ≤ 15%.
The "re-measured" columns compare the even rounds with the odd rounds
(each half's steps pooled and made one time the same way), the same placements measured
twice: how well this machine agrees with itself, about the best a
simulator can be expected to match here (against all the rounds it can
do a little better).

**How the executor is modelled, and what is not.** On logical CPU
devices the consumer device's thread makes each cross-device copy (the
executor's \`CopyIn\`), ahead of the ops waiting on that thread.
\`cluster detect\` writes its links with \`"copier": "destination"\`, so
the simulator puts each copy at the front of the consumer's ready queue
and charges it to that device's time. Two figures per link, both
measured by \`cluster detect\`: the copy's time on the consumer's
thread (latency + bytes / bandwidth, fitted to that thread's time per
copy in steps that copy many tensors of one size, 256 bytes to 64 MiB),
and the hand-off, the wait from a tensor being ready until the
consumer's thread has it, which holds no thread (what a lone
cross-device edge adds to a chain of one-element ops alternating
between the devices, beyond its copy). \`--calibrate-links\` then
scales both by one factor, fitted in the same rounds as the placements
(above). The profile gives each
op an equal share of the step time no op accounts for (the worker
thread taking its next op), so a one-device placement simulates at the
profiled step (made by the same statistic). Not modelled: the machine's
drift. The profile is
taken once, before the placements are measured, and a slower or faster
spell of the machine in between shifts every simulated time against
every measured one (compare the single-device rows, and a placement's
rounds). Real steps run with a caching CPU allocator
(\`src/dplace/exec/caching_allocator.h\`): with glibc's malloc alone,
page faults on freed-and-reallocated tensors took a varying share of
every step.

**Op time.** The "op time" column divides a placement's measured op time
per step (each op from its start until its outputs are handed on,
summed over the devices, the rounds made one by the same statistic) by
its simulated op time (the profile's times of the same ops): x1.00 where
the profile's op times hold in that placement. Under each table their
mean over the placements that use one device and over those that use
two; what a step's error has beyond the op time's comes from the waits
and copies between the devices.

Commands:

\`\`\`
$dplace cluster detect --cpu-devices $cpu_devices -o local.json
$dplace profile --model MODEL --devices $devices --steps $profile_steps --statistic $statistic --round-steps 1 -o MODEL.profile.json
$dplace fidelity --model MODEL --cluster local.json --profile MODEL.profile.json --samples $samples --steps $steps --rounds ROUNDS --statistic $statistic --seed $seed --calibrate-links --svg fidelity-MODEL.svg --markdown MODEL.md
\`\`\`

## Summary

| model | spec | MAPE | max error | Spearman | Kendall | placements | targets | link latencies | ops beside another device | uncalibrated MAPE | uncalibrated Spearman | re-measured MAPE | re-measured Spearman | op time, measured / simulated | other statistics |
|---|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---|---|
EOF
  for entry in "${models[@]}"; do
    read -r name spec _ <<< "$entry"
    echo "| $name | \`$spec\` | $(summary_cells "$work/$name.fidelity.txt") | $(targets_of "$work/$name.fidelity.txt") | $(scale_of "$work/$name.fidelity.txt") | $(slowdown_of "$work/$name.fidelity.txt") | $(uncalibrated_cells "$work/$name.fidelity.txt") | $(retest_cells "$work/$name.fidelity.txt") | $(op_time_cell "$work/$name.fidelity.txt") | $(other_cells "$work/$name.fidelity.txt") |"
  done
  cat <<EOF

## The detected cluster

\`\`\`
$(cat "$work/detect.txt")
\`\`\`

EOF
  for entry in "${models[@]}"; do
    read -r name spec _ <<< "$entry"
    echo "## $name"
    echo
    echo "\`$spec\`; profile:"
    echo
    echo '```'
    grep -v '^profile: ' "$work/$name.profile.txt"
    echo '```'
    echo
    sed 's/^### /Placements of /' "$work/$name.md"
    if [ -s "$work/$name.fidelity.err" ] &&
       grep -q 'warning' "$work/$name.fidelity.err"; then
      echo
      echo "Warnings:"
      echo
      grep 'warning' "$work/$name.fidelity.err" | sed 's/^dplace: warning: /- /'
    fi
    echo
    echo "![simulated vs measured step time, $name](fidelity-$name.svg)"
    echo
  done
} > "$out"
echo "wrote $out in ${elapsed} s" >&2
