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
#   runs.json       {"llama_1b": ..., "llama3_70b_tp8_pp4_rank0": ...}: `sixfold run --backend cuda
#                   --json` of a ~1B Llama-style model (Llama-3.2-1B's shape) on one GPU, 2 steps at
#                   seq 256, and of rank 0 of Llama-3-70B under TP8 PP4 emulated alone (--emulate-rank
#                   0: its compute and memory; communication modeled, not measured); null for a run
#                   that failed or ran out of time (stderr in env.txt, exit codes in summary.json)
#   h200-calibrated.yaml  `sixfold calibrate --backend cuda` profile; its log, raw measurements (JSON)
#                   and a prediction with it beside the built-in profile are appended to bench.txt
#   summary.json    exit codes of each step
# Every step has its own timeout, cut further so that the whole script ends within 10 minutes.
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
# Seconds left of the script's 10 minutes (570 s, leaving a margin for start-up and copying).
remaining() { echo $(( 570 - SECONDS )); }
# timeout of at most $1 seconds, less when the script's budget is shorter.
capped() { local cap=$1 left; left=$(( $(remaining) - 15 )); (( left < cap )) && cap=$left; (( cap < 1 )) && cap=1; echo "$cap"; }

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
  (cd "$build" && timeout 240 ctest -L gpu --output-on-failure --timeout 220) > "$out/ctest-gpu.log" 2>&1
  test_rc=$?
else
  {
    echo "build folder configured under '$configured_root', repository is at '$root':"
    echo "running the gpu test executables directly (77 = skipped, no GPU)"
    test_rc=0
    [[ ${#tests[@]} -gt 0 ]] || { echo "no test_*_gpu executable under $build/tests"; test_rc=1; }
    for t in "${tests[@]}"; do
      echo "== $t"
      (cd "$root" && timeout "$(capped 220)" "$t")
      rc=$?
      echo "== exit code $rc"
      [[ $rc -eq 0 ]] || test_rc=$rc
    done
  } > "$out/ctest-gpu.log" 2>&1
fi

bench_rc=127
json_rc=127
if [[ -x "$bench" ]]; then
  timeout "$(capped 90)" "$bench" > "$out/bench.txt" 2>&1
  bench_rc=$?
  timeout "$(capped 90)" "$bench" --json > "$out/bench.json" 2> "$out/bench.stderr.txt"
  json_rc=$?
  [[ -s "$out/bench.stderr.txt" ]] && cat "$out/bench.stderr.txt" >> "$out/bench.txt"
  rm -f "$out/bench.stderr.txt"
else
  echo "missing $bench" > "$out/bench.txt"
fi

# The executor on the GPU. The model runtime keeps tensors on the host and runs GEMMs on the GPU
# (executor/backend/cuda/cuda_backend.hpp), so the runs are kept short: seq 256, 1-2 steps.
sixfold="$build/sixfold"
run_1b_rc=127
run_70b_rc=127
if [[ -x "$sixfold" ]]; then
  tmp="$(mktemp -d)"
  # Llama-3.2-1B's shape (meta-llama/Llama-3.2-1B config.json, Hugging Face): 16 layers, hidden
  # 2048, 32 heads, 8 KV heads, FFN 8192, vocab 128256, tied embeddings, rope theta 500000.
  cat > "$tmp/llama-1b-config.json" <<CFG
{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 2048, "intermediate_size": 8192,
 "num_hidden_layers": 16, "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 64,
 "vocab_size": 128256, "max_position_embeddings": 131072, "rms_norm_eps": 1e-05, "rope_theta": 500000.0,
 "hidden_act": "silu", "tie_word_embeddings": true}
CFG
  if (( $(remaining) > 60 )); then
    echo "== sixfold run --backend cuda, ~1B Llama-style" >> "$out/env.txt"
    timeout "$(capped 200)" "$sixfold" run --backend cuda --model "$tmp/llama-1b-config.json" --hardware h200-sxm-141g \
      --gpus 1 --seq 256 --global-batch 2 --micro-batch 1 --steps 2 --json > "$tmp/run-1b.json" 2>> "$out/env.txt"
    run_1b_rc=$?
  fi
  # Rank 0 holds ~2.2e9 parameters, but the runtime draws every tensor whole before slicing it
  # (executor/runtime/param_init.hpp), ~1.8e10 normal draws: expect this step to need minutes of CPU.
  if (( $(remaining) > 60 )); then
    echo "== sixfold run --backend cuda --emulate-rank 0, llama3-70b TP8 PP4" >> "$out/env.txt"
    timeout "$(capped 150)" "$sixfold" run --backend cuda --model llama3-70b --hardware h200-sxm-141g --gpus 32 \
      --tp 8 --pp 4 --seq 256 --global-batch 4 --micro-batch 1 --steps 1 --emulate-rank 0 --json \
      > "$tmp/run-70b-rank0.json" 2>> "$out/env.txt"
    run_70b_rc=$?
  fi
  # One file for both (the device tool returns at most 8 files).
  {
    echo '{"llama_1b":'
    if [[ $run_1b_rc -eq 0 && -s "$tmp/run-1b.json" ]]; then cat "$tmp/run-1b.json"; else echo null; fi
    echo ', "llama3_70b_tp8_pp4_rank0":'
    if [[ $run_70b_rc -eq 0 && -s "$tmp/run-70b-rank0.json" ]]; then cat "$tmp/run-70b-rank0.json"; else echo null; fi
    echo '}'
  } > "$out/runs.json"
  rm -rf "$tmp"
else
  echo "missing $sixfold: executor runs skipped" >> "$out/env.txt"
fi

# GPU calibration into a profile (budget: under 3 minutes), then one prediction with it and with
# the built-in profile. Only the YAML is its own file (the device tool returns at most 8 files).
calib_rc=127
if [[ -x "$build/sixfold" ]] && (( $(remaining) > 60 )); then
  calib_tmp="$(mktemp -d)"
  {
    echo
    echo "== sixfold calibrate --backend cuda"
    (cd "$root" && timeout "$(capped 170)" "$build/sixfold" calibrate --backend cuda -o "$calib_tmp/h200-calibrated.yaml")
    calib_rc=$?
    echo "== exit code $calib_rc"
    if [[ $calib_rc -eq 0 ]]; then
      cp "$calib_tmp/h200-calibrated.yaml" "$out/h200-calibrated.yaml"
      echo "== h200-calibrated.measurements.json"
      cat "$calib_tmp/h200-calibrated.measurements.json"
      for hw in h200-sxm-141g "$out/h200-calibrated.yaml"; do
        echo "== sixfold predict --model pythia-1.4b --gpus 1 --seq 2048 --micro-batch 4 --hardware $hw"
        (cd "$root" && timeout "$(capped 30)" "$build/sixfold" predict --model pythia-1.4b --gpus 1 --seq 2048 \
          --micro-batch 4 --hardware "$hw")
      done
    fi
  } >> "$out/bench.txt" 2>&1
  rm -rf "$calib_tmp"
fi

cat > "$out/summary.json" <<JSON
{"schema": "sixfold.gpu_check.v1", "nvidia_smi_rc": $smi_rc, "gpu_tests_rc": $test_rc, "bench_rc": $bench_rc, "bench_json_rc": $json_rc,
 "run_1b_rc": $run_1b_rc, "run_70b_rank0_rc": $run_70b_rc, "calibrate_rc": $calib_rc, "seconds": $SECONDS}
JSON
cat "$out/summary.json"
[[ $test_rc -eq 0 && $bench_rc -eq 0 ]]
