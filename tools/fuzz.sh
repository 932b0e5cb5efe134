#!/usr/bin/env bash
# Fuzzes every input format for SECONDS each: builds the libFuzzer targets (clang, ASan + UBSan)
# into build-fuzz/, seeds each corpus from the repository's own files, runs each target and prints
# one line per target (executions, corpus size, findings). Exits non-zero on any finding; a run's
# findings are kept in build-fuzz/findings/TARGET/ (copy them to tests/fuzz/regressions/TARGET/,
# where the test 'fuzz: ...' replays them, once fixed).
# Usage: tools/fuzz.sh SECONDS [TARGET...]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
seconds=${1:?usage: tools/fuzz.sh SECONDS [TARGET...]}
shift
build=${SIXFOLD_FUZZ_BUILD_DIR:-$root/build-fuzz}
all_targets=(plan_yaml model_yaml hardware_yaml hf_config validation_csv validation_rows kineto_trace cli_args)
if [ $# -gt 0 ]; then targets=("$@"); else targets=("${all_targets[@]}"); fi

if ! command -v clang++ >/dev/null; then
  echo "sixfold fuzz: installing clang" >&2
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq clang >&2
fi
# The libraries are the normal build's: run tools/setup.sh once on a fresh machine.

flags="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g -O1"
if [ ! -f "$build/build.ninja" ]; then
  CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=None -DSIXFOLD_FUZZ=ON \
    -DSIXFOLD_WITH_CUDA=OFF -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" >&2
fi
cmake --build "$build" -j "$(nproc)" --target sixfold $(printf 'fuzz_%s ' "${targets[@]}") >&2

# Seeds: the repository's own files of each format, and tests/fuzz/seeds/TARGET.
seed() {
  local target=$1
  shift
  local dir="$build/corpus/$target"
  mkdir -p "$dir"
  for f in "$@"; do [ -f "$f" ] && cp -n "$f" "$dir/$(basename "$f")" 2>/dev/null || true; done
  if [ -d "$root/tests/fuzz/seeds/$target" ]; then cp -n "$root/tests/fuzz/seeds/$target"/* "$dir/" 2>/dev/null || true; fi
  if [ -d "$root/tests/fuzz/regressions/$target" ]; then cp -n "$root/tests/fuzz/regressions/$target"/* "$dir/" 2>/dev/null || true; fi
}
seed plan_yaml "$root"/configs/scenarios/*.yaml
seed model_yaml "$root"/models/zoo/*.yaml
seed hardware_yaml "$root"/configs/hardware/*.yaml "$root"/configs/clusters/*.yaml
seed hf_config "$root"/tests/models/fixtures/*.json
seed kineto_trace "$root"/tests/simulator/fixtures/kineto_h200_synthetic.json
seed cli_args
mkdir -p "$build/corpus/validation_csv"
for csv in "$root"/data/validation/*.csv; do
  [ -f "$csv" ] || continue
  head -3 "$csv" > "$build/corpus/validation_csv/$(basename "$csv")"
done
seed validation_csv
mkdir -p "$build/corpus/validation_rows"
cp -n "$build/corpus/validation_csv"/* "$build/corpus/validation_rows/" 2>/dev/null || true
# A plan file as `plan --export` writes it.
"$build/sixfold" plan --scenario default --refine 0 --export "$build/corpus/plan_yaml/exported-plan.yaml" \
  >/dev/null 2>&1 || true

dict="$root/tests/fuzz/yaml.dict"
status=0
printf '%-15s %9s %12s %8s %8s %6s\n' target seconds executions corpus findings slow
for target in "${targets[@]}"; do
  findings="$build/findings/$target"  # this run's findings only
  rm -rf "$findings"
  mkdir -p "$findings"
  log="$build/fuzz-$target.log"
  extra=()
  case "$target" in
    cli_args) extra=(-close_fd_mask=3) ;;
    plan_yaml | model_yaml | hardware_yaml) extra=(-dict="$dict") ;;
  esac
  set +e
  ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1 \
    "$build/tests/fuzz/fuzz_$target" "$build/corpus/$target" -max_total_time="$seconds" -timeout=30 -rss_limit_mb=4096 \
    -max_len=65536 -artifact_prefix="$findings/" -print_final_stats=1 "${extra[@]}" > "$log" 2>&1
  rc=$?
  set -e
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
  corpus=$(ls "$build/corpus/$target" | wc -l)
  # libFuzzer also writes slow-unit-* for inputs over 10 s; under the 30 s timeout they are not
  # findings (tests/fuzz/README.md), only counted.
  found=$(ls "$findings" | grep -vc '^slow-unit-' || true)
  slow=$(ls "$findings" | grep -c '^slow-unit-' || true)
  printf '%-15s %9s %12s %8s %8s %6s\n' "$target" "$seconds" "${runs:-0}" "$corpus" "$found" "$slow"
  if [ "$rc" -ne 0 ] || [ "$found" -ne 0 ]; then
    status=1
    echo "  finding(s) in $findings (log: $log):" >&2
    grep -E "ERROR: |runtime error|SUMMARY|uncaught|terminate" "$log" | head -5 >&2 || true
  fi
done
exit $status
