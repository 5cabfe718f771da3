#!/usr/bin/env bash
# One batch on the GPU machine (NVIDIA, nvcc, compute-sanitizer, python3+torch; no Go): build the
# CUDA library, run the kernel test grid against the oracle, the sanitizers, the benchmarks.
# Test binaries are built beforehand where Go is:  make gpu-bins  (bin/kernels.test, bin/oracle.test,
# bin/octant). Usage: scripts/gpu-run.sh [OUTDIR]   (default: $OUT or ./gpu-out)
# Steps can be skipped with SKIP="sanitize bench sdpa oracle".
set -uo pipefail
out=${1:-${OUT:-gpu-out}}
mkdir -p "$out"
log="$out/gpu-run.log"
step() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$log"; }
skip() { [[ " ${SKIP:-} " == *" $1 "* ]]; }
status=0

step "environment"
{ date -u; git rev-parse HEAD 2>/dev/null; git status --porcelain 2>/dev/null | head -5
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
  nvcc --version | tail -2; lscpu | grep -E 'Model name|^CPU\(s\)'; } 2>&1 | tee -a "$log"

step "build (make cuda)"
if ! make cuda 2>&1 | tee -a "$log"; then echo "build failed" | tee -a "$log"; exit 1; fi
lib=$PWD/build/liboctave_cuda.so
sha256sum "$lib" | tee -a "$log"

step "kernel grid (full) against the oracle"
OCTANT_LIB=$lib ./bin/kernels.test -test.count=1 -test.timeout=${GRID_TIMEOUT:-9m} ${GRID_ARGS:-} 2>&1 | tee "$out/grid.log" | tail -40 | tee -a "$log"
[ "${PIPESTATUS[0]}" = 0 ] || status=1

if ! skip sanitize; then
  for tool in memcheck racecheck; do
    step "compute-sanitizer --tool $tool (short grid)"
    compute-sanitizer --tool $tool --error-exitcode 99 --print-limit 20 \
      env OCTANT_LIB=$lib ./bin/kernels.test -test.short -test.count=1 -test.timeout=${SAN_TIMEOUT:-8m} ${SAN_ARGS:-} 2>&1 \
      | tee "$out/sanitize-$tool.log" | tail -15 | tee -a "$log"
    [ "${PIPESTATUS[0]}" = 0 ] || status=1
  done
fi

if ! skip bench; then
  step "octant bench"
  ./bin/octant bench --lib "$lib" --json "$out/bench.json" 2>&1 | tee -a "$log"
fi
if ! skip sdpa; then
  step "torch SDPA fp16 decode, same shapes"
  PYTHONUNBUFFERED=1 python3 scripts/bench_sdpa.py --json "$out/sdpa.json" 2>&1 | tee -a "$log"
fi
if ! skip oracle; then
  step "oracle benchmarks on one host core"
  for b in ./bin/oracle*.test; do
    echo "-- $b" | tee -a "$log"
    taskset -c 3 "$b" -test.run '^$' -test.bench 'QuantizeSlot|DequantizeSlot|ExactDecode32k' \
      -test.benchtime 2s -test.cpu 1 2>&1 | tee -a "$log"
  done
fi
step "done, status $status"
exit $status
