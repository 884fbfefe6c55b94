#!/usr/bin/env bash
# Evaluations per second of the MPI environment with 1, 2 and 4 worker
# ranks against the thread-pool environment with 1, 2 and 4 threads, on the
# simulator with an added per-evaluation delay standing in for a real
# measurement (docs/performance.md).
# Usage: scripts/mpi-scaling.sh [BUILD] [DELAY_MS]. Default: build-mpi, 20.
set -euo pipefail
build=${1:-build-mpi}
delay=${2:-20}
bench="$build/mpi_benchmark"
# Root in CI containers; oversubscribed on small hosts; no core binding, so
# the ranks share the cores the way the scheduler sees fit.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for workers in 1 2 4; do
  "$bench" --threads "$workers" --delay-ms "$delay"
  mpirun --oversubscribe --bind-to none -np $((workers + 1)) \
    "$bench" --delay-ms "$delay"
done
