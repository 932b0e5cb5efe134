#!/usr/bin/env bash
# Installs what sixfold needs to build (Debian 12 packages) and builds it into build/.
# Idempotent: installs only what is missing, rebuilds only what changed. Used by tools/sixfold.sh
# (which builds only the sixfold binary: `setup.sh sixfold`) and tools/test.sh (everything); run
# it alone to just build everything. Arguments, if any, are the CMake targets to build.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${SIXFOLD_BUILD_DIR:-$root/build}

packages=(cmake ninja-build g++ libeigen3-dev libboost-graph-dev libyaml-cpp-dev doctest-dev libcli11-dev
          nlohmann-json3-dev libopenmpi-dev openmpi-bin)
# tools/test.sh adds what only tests use: Chromium renders the HTML report in tests/cli/test_report.cpp.
if [ "${SIXFOLD_SETUP_TEST_TOOLS:-0}" = 1 ]; then packages+=(chromium); fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "sixfold setup: installing ${missing[*]}" >&2
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >&2
fi

# The CUDA backend builds where a CUDA toolkit is installed (nvcc); without one, everything else does.
cuda_args=()
if [ -x /usr/local/cuda/bin/nvcc ] && [ "${SIXFOLD_WITH_CUDA:-ON}" != "OFF" ]; then
  cuda_args=(-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc -DSIXFOLD_WITH_CUDA=ON)
else
  cuda_args=(-DSIXFOLD_WITH_CUDA=OFF)
fi
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "${cuda_args[@]}" >&2
fi
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build "$build" -j "$(nproc)" "${targets[@]}" >&2
