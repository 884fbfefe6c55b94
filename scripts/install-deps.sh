#!/usr/bin/env bash
# Installs what dplace needs to build and test, from Debian 12 packages only.
# Usage: install-deps.sh [fuzz]. Idempotent: installs nothing when
# everything is present, and runs `apt-get update` at most once, only when
# something is missing.
set -euo pipefail

packages=(
  # Toolchain: a minimal Debian has neither a compiler nor CMake.
  g++ make cmake pkg-config
  # Libraries of the core.
  nlohmann-json3-dev libcli11-dev
  # minizip: lists a search checkpoint's ZIP records before LibTorch reads it.
  libminizip-dev
  # ONNX import: libonnx (its generated protobuf classes) and protobuf.
  libonnx-dev libprotobuf-dev
  # Classical placers: Scotch, METIS, and GLPK for m-SCT's LP relaxation;
  # COIN-OR CBC for the MILP placer.
  libscotch-dev libmetis-dev libglpk-dev coinor-libcbc-dev
  # Learning agents: LibTorch (CPU), and OpenBLAS as the system BLAS: Debian's
  # LibTorch links libblas.so.3, which is the slow reference BLAS unless an
  # optimised one provides it (seq2seq policy: 2.3 -> 5.1 samples/s);
  # libblas-dev: cblas.h, for the recurrences' matrix-vector products.
  libtorch-dev libopenblas0-pthread libblas-dev
  # Distributed search (--env mpi, docs/mpi.md): Open MPI and mpirun.
  libopenmpi-dev openmpi-bin
  # Tests and benchmarks.
  libgtest-dev libgmock-dev libbenchmark-dev
  # The reports' rendering check: headless Chromium screenshots a report,
  # libpng decodes the PNG (report_render_test).
  chromium libpng-dev
  # `place --json` checked against docs/place.schema.json
  # (place_json_schema_test). (python3-torch, for the device-map round trip
  # of docs/onnx.md, is optional: that test skips without it.)
  python3-jsonschema
)
# `install-deps.sh fuzz` (make fuzz): clang with libFuzzer and its
# sanitizer runtimes, and llvm-symbolizer for readable crash reports. The
# sanitizer build of `make test` uses g++, whose runtimes come with it.
if [ "${1:-}" = "fuzz" ]; then
  packages+=(clang libclang-rt-14-dev llvm)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    sudo="sudo"
  else
    echo "install-deps: missing packages (${missing[*]}) and not root; install them or run as root" >&2
    exit 1
  fi
fi

echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
