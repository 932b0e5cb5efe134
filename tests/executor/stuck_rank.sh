#!/usr/bin/env bash
# A rank stopped in the middle of a run (kill -STOP): the other rank's communication times out,
# and the whole job must end within --timeout + 10 s (MPI_Abort), not hang in MPI_Finalize.
# Usage: stuck_rank.sh SIXFOLD MPIRUN
set -u
sixfold=$1
mpirun=$2
timeout_s=3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/plan.yaml" <<'YAML'
schema_version: 1
model:
  name: tiny
  architecture: {name: tiny, layers: 2, hidden: 32, ffn: 64, heads: 4, kv_heads: 2, vocab: 64, max_seq: 32, norm: rmsnorm, activation: swiglu}
hardware: h100-sxm-80g
gpus: 2
workload: {seq: 16, global_batch: 4, dtype: fp32}
layout: {dp: 2}
YAML
"$mpirun" -np 2 --oversubscribe "$sixfold" run --plan "$work/plan.yaml" --steps 1000000 --timeout "$timeout_s" \
  > "$work/log" 2>&1 &
launcher=$!
# Find world rank 1 among the launcher's children, let it run steps for a while, and stop it.
stopped=""
for _ in $(seq 1 100); do
  sleep 0.2
  for pid in $(pgrep -P "$launcher" 2>/dev/null); do
    if tr '\0' '\n' < "/proc/$pid/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=1'; then stopped=$pid; fi
  done
  if [ -n "$stopped" ]; then break; fi
done
if [ -z "$stopped" ]; then
  echo "stuck_rank: rank 1 never started"; cat "$work/log"; kill "$launcher" 2>/dev/null; exit 1
fi
sleep 1.5
kill -STOP "$stopped"
start=$(date +%s)
limit=$((timeout_s + 10))
while kill -0 "$launcher" 2>/dev/null; do
  if [ $(( $(date +%s) - start )) -gt "$limit" ]; then
    echo "stuck_rank: the job is still up ${limit} s after rank 1 stopped (--timeout ${timeout_s})"
    kill -KILL "$stopped" 2>/dev/null; kill -KILL "$launcher" 2>/dev/null
    cat "$work/log"; exit 1
  fi
  sleep 0.2
done
wait "$launcher"
rc=$?
elapsed=$(( $(date +%s) - start ))
kill -KILL "$stopped" 2>/dev/null
cat "$work/log"
if [ "$rc" -eq 0 ]; then echo "stuck_rank: the job exited 0"; exit 1; fi
grep -q "communication timed out" "$work/log" || { echo "stuck_rank: no timeout message"; exit 1; }
echo "stuck_rank: the job ended ${elapsed} s after rank 1 stopped (exit ${rc})"
