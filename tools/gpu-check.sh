#!/usr/bin/env bash
# GPU check of sixfold, meant to run on the device machine (one GPU, driver and PyTorch's CUDA
# libraries, no toolkit) from the repository root, over a build folder made here beforehand by
# tools/build-device.sh and carried along:
#
#   here:    tools/build-device.sh --slim
#   device:  run(command="tools/gpu-check.sh $OUT", carry=["build-device"], timeout_s=600)
#
# Usage: tools/gpu-check.sh OUTDIR [BUILD_DIR]   (BUILD_DIR defaults to build-device)
# It writes into OUTDIR (at most 8 flat files, as the device tool returns them):
#   nvidia-smi.txt  GPU, driver, clocks, memory
#   env.txt         library search path and what the binaries link against
#   ctest-gpu.log   the gpu-labelled tests (ctest -L gpu --output-on-failure), or, when the build
#                   folder was configured under another absolute path (CTest files hold absolute
#                   paths), the same test executables run directly
#   bench.txt       gpu_kernels_bench table;  bench.json  the same as JSON
#   summary.json    exit codes of each step
# Every step has its own timeout so that the whole script ends within 10 minutes (about 7 at most).
set -uo pipefail

if [[ $# -lt 1 ]]; then
  sed -n '2,20p' "${BASH_SOURCE[0]}"
  exit 2
fi
out="$1"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${2:-$root/build-device}"
[[ "$build" = /* ]] || build="$root/$build"
mkdir -p "$out"
out="$(cd "$out" && pwd)"

# PyTorch wheels ship the CUDA libraries as site-packages/nvidia/<lib>/lib; put them on the path.
for python in python3 python; do
  command -v "$python" >/dev/null 2>&1 || continue
  while IFS= read -r site; do
    for dir in "$site"/nvidia/*/lib; do
      [[ -d "$dir" ]] && LD_LIBRARY_PATH="$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    done
  done < <("$python" -c 'import site; print("\n".join(site.getsitepackages() + [site.getusersitepackages()]))' 2>/dev/null)
  break
done
export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}"

{
  timeout 30 nvidia-smi
  echo
  timeout 30 nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem,power.limit --format=csv
} > "$out/nvidia-smi.txt" 2>&1
smi_rc=$?

tests=()
while IFS= read -r t; do tests+=("$t"); done < <(find "$build/tests" -type f -name 'test_*_gpu' -perm -u+x 2>/dev/null | sort)
bench="$build/bench/gpu_kernels_bench"
{
  echo "root: $root"
  echo "build: $build"
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  for bin in "${tests[@]}" "$bench"; do
    [[ -x "$bin" ]] || continue
    echo "== ldd $bin"
    ldd "$bin" 2>&1
  done
} > "$out/env.txt" 2>&1

# CTest needs the build folder at the absolute path where it was configured.
configured_root="$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt" 2>/dev/null)"
if [[ "$configured_root" == "$root" ]]; then
  (cd "$build" && timeout 300 ctest -L gpu --output-on-failure --timeout 280) > "$out/ctest-gpu.log" 2>&1
  test_rc=$?
else
  {
    echo "build folder configured under '$configured_root', repository is at '$root':"
    echo "running the gpu test executables directly (77 = skipped, no GPU)"
    test_rc=0
    [[ ${#tests[@]} -gt 0 ]] || { echo "no test_*_gpu executable under $build/tests"; test_rc=1; }
    for t in "${tests[@]}"; do
      echo "== $t"
      (cd "$root" && timeout 280 "$t")
      rc=$?
      echo "== exit code $rc"
      [[ $rc -eq 0 ]] || test_rc=$rc
    done
  } > "$out/ctest-gpu.log" 2>&1
fi

bench_rc=127
json_rc=127
if [[ -x "$bench" ]]; then
  timeout 150 "$bench" > "$out/bench.txt" 2>&1
  bench_rc=$?
  timeout 150 "$bench" --json > "$out/bench.json" 2> "$out/bench.stderr.txt"
  json_rc=$?
  [[ -s "$out/bench.stderr.txt" ]] && cat "$out/bench.stderr.txt" >> "$out/bench.txt"
  rm -f "$out/bench.stderr.txt"
else
  echo "missing $bench" > "$out/bench.txt"
fi

cat > "$out/summary.json" <<JSON
{"schema": "sixfold.gpu_check.v1", "nvidia_smi_rc": $smi_rc, "gpu_tests_rc": $test_rc, "bench_rc": $bench_rc, "bench_json_rc": $json_rc}
JSON
cat "$out/summary.json"
[[ $test_rc -eq 0 && $bench_rc -eq 0 ]]
