#!/usr/bin/env bash
# Builds the CPU tests with AddressSanitizer and UndefinedBehaviorSanitizer (GCC, no recovery: the
# first finding fails the test) into build-asan/ and runs them. MPI launches run without leak
# checks (Open MPI's own allocations at exit are not ours); GPU tests are not built.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${SIXFOLD_ASAN_BUILD_DIR:-$root/build-asan}
# -O1 and line tables only: the build is the slow part on CI's two cores.
flags="-O1 -g1 -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=None -DSIXFOLD_WITH_CUDA=OFF \
    -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" >&2
fi
cmake --build "$build" -j "$(nproc)" >&2
cd "$build"
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 ctest --output-on-failure -j "$(nproc)" --timeout 1800 -LE "mpi|gpu"
ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 ctest --output-on-failure -j "$(nproc)" --timeout 1800 -L mpi
