#!/usr/bin/env bash
# Acceptance runs on the GPU machine (no Go there; binaries from `make gpu-bins`), in phases so
# that each fits one device call. Everything is logged under a work directory; what comes back
# is $OUT/summary.log and one tarball of the logs ($OUT/logs.tgz), since the device returns at
# most 8 files.
#   PHASE=throughput  end-to-end cases/s of each GPU target (plain test binary, rapid form), the
#                     decode target at GOMAXPROCS 1, 4 and 16, and the host-only oracle side
#   PHASE=sanitize    compute-sanitizer memcheck and racecheck over the FULL kernel grid, sharded
#                     by test (run concurrently on the one GPU), and octant conform against the
#                     mutant-1 library (a defective build must not certify)
#   PHASE=racecheck   compute-sanitizer racecheck over the full decode and prefill grids only,
#                     sharded by format and dtype (12 processes): unsharded, neither grid finished
#                     in 400 s (one large decode case takes 43 s under racecheck)
#   PHASE=mutate      octant mutate over every mutant, the unmutated build and the conventional
#                     suite, in SHARDS concurrent processes (disjoint --only sets)
#   PHASE=final       the decode throughput (quiet machine first), then mutate, the prefill grid
#                     under both sanitizers and conform against mutant 1, concurrently
# Usage: PHASE=... scripts/gpu-acceptance.sh [OUTDIR]
set -uo pipefail
out=${1:-${OUT:-gpu-out}}
mkdir -p "$out"
work=${WORK:-/tmp/acceptance}
mkdir -p "$work"
log="$out/summary.log"
step() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$log"; }
status=0
lib=$PWD/build/liboctave_cuda.so
finish() {
  tar -C "$work" -czf "$out/logs.tgz" . 2>/dev/null
  step "done, status $status"
  exit $status
}
step "environment ($PHASE)"
{ date -u; git rev-parse HEAD 2>/dev/null; git status --porcelain 2>/dev/null | head -5
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  nproc; } 2>&1 | tee -a "$log"
if [ ! -f "$lib" ]; then
  step "make cuda"
  make cuda > "$work/build.log" 2>&1 || { tail -20 "$work/build.log" | tee -a "$log"; status=1; finish; }
fi
sha256sum "$lib" | tee -a "$log"

case $PHASE in
throughput)
  for t in Decode Store Rotate Reduce Prefill; do
    n=300; [ $t = Decode ] && n=${DECODE_CHECKS:-1000}; [ $t = Prefill ] && n=150
    step "TestGPU$t, $n cases"
    OCTANT_LIB=$lib OCTANT_REGRESSIONS=$work/regressions ./bin/fuzz-plain.test -test.run "^TestGPU$t\$" -test.count=1 -test.v \
      -rapid.checks=$n > "$work/tp-$t.log" 2>&1 || status=1
    grep -E 'rapid\]|time:|FAIL|panic' "$work/tp-$t.log" | head -8 | tee -a "$log"
  done
  for p in 1 4 16; do
    step "TestGPUDecode at GOMAXPROCS $p, 300 cases"
    GOMAXPROCS=$p OCTANT_LIB=$lib ./bin/fuzz-plain.test -test.run '^TestGPUDecode$' -test.count=1 -test.v -rapid.checks=300 -rapid.seed=11 2>&1 \
      | grep -E 'rapid\]|time:|FAIL' | tee -a "$log"
    step "TestOracleDecode (host only) at GOMAXPROCS $p, 300 cases"
    GOMAXPROCS=$p ./bin/fuzz-plain.test -test.run '^TestOracleDecode$' -test.count=1 -test.v -rapid.checks=300 -rapid.seed=11 2>&1 \
      | grep -E 'rapid\]|FAIL' | tee -a "$log"
  done
  step "FuzzDecode (instrumented fuzzing binary), 60 s"
  OCTANT_LIB=$lib OCTANT_REGRESSIONS=$work/regressions ./bin/fuzz.test -test.run '^$' -test.fuzz '^FuzzDecode$' -test.fuzztime 60s \
    -test.fuzzminimizetime 10x -test.parallel 1 -test.fuzzcachedir "$work/fuzzcache" > "$work/fuzz-decode.log" 2>&1 || status=1
  grep -E '^fuzz: elapsed' "$work/fuzz-decode.log" | tail -2 | tee -a "$log"
  grep -E 'FAIL|PASS|^ok' "$work/fuzz-decode.log" | tail -3 | tee -a "$log"
  ;;
sanitize)
  make cuda-mutant MUTANT=1 > "$work/build-m1.log" 2>&1 &
  bpid=$!
  shards=("TestDecodeGrid" "TestDecode(Lengths|Sharp|ArbitraryMaps|Golden|Errors)" "TestPrefill(Grid|Errors)" \
          "Test(Store|Reduce|Rotate|QueryMaps|Empty|Conventional|Device|Struct|Open|ErrorIs|HIP)")
  pids=()
  for tool in memcheck racecheck; do
    for i in "${!shards[@]}"; do
      ( timeout ${SAN_TIMEOUT:-500} compute-sanitizer --tool $tool --error-exitcode 99 --print-limit 20 \
          env OCTANT_LIB=$lib ./bin/kernels.test -test.count=1 -test.run "^(${shards[$i]})\$" -test.timeout 20m -test.v \
          > "$work/san-$tool-$i.log" 2>&1
        echo "$tool shard $i (${shards[$i]}): exit $?" >> "$work/san-exit.log" ) &
      pids+=($!)
    done
  done
  wait $bpid || { echo "mutant-1 build failed" | tee -a "$log"; tail -5 "$work/build-m1.log" | tee -a "$log"; }
  step "octant conform against mutant 1 (reduce leaves padding rows unwritten)"
  ./bin/octant conform --lib build/mutants/liboctave_cuda_m1.so --budget ${CONFORM_BUDGET:-30s} --fixed 4 \
    --out "$work/conform-m1" > "$work/conform-m1.log" 2>&1
  echo "conform exit $? (expected non-zero: not certified)" | tee -a "$log"
  grep -E -i 'certif|fail|replay' "$work/conform-m1.log" | head -12 | cut -c1-400 | tee -a "$log"
  cp "$work/conform-m1/report.md" "$out/conform-m1-report.md" 2>/dev/null
  step "waiting for the sanitizer shards"
  for p in "${pids[@]}"; do wait $p; done
  cat "$work/san-exit.log" | tee -a "$log"
  for f in "$work"/san-*-*.log; do
    echo "-- $(basename $f): $(grep -c -E '^(=== RUN|    === RUN)' $f) tests run, $(grep -c -E -- '--- PASS' $f) passed, $(grep -c -E -- '--- FAIL' $f) failed; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $f | tail -1)" | tee -a "$log"
    grep -q -E '^(ok|PASS)$' "$f" || { status=1; tail -3 "$f" | tee -a "$log"; }
  done
  ;;
racecheck)
  pids=()
  for grid in TestDecodeGrid TestPrefillGrid; do
    for f in k3v3 k3v4 k3v3c; do
      for dt in f16 bf16; do
        ( timeout ${SAN_TIMEOUT:-540} compute-sanitizer --tool racecheck --error-exitcode 99 --print-limit 20 \
            env OCTANT_LIB=$lib ./bin/kernels.test -test.count=1 -test.run "^$grid\$/^$f\$/^$dt\$" -test.timeout 20m -test.v \
            > "$work/race-$grid-$f-$dt.log" 2>&1
          echo "racecheck $grid/$f/$dt: exit $?" >> "$work/san-exit.log" ) &
        pids+=($!)
      done
    done
  done
  for p in "${pids[@]}"; do wait $p; done
  sort "$work/san-exit.log" | tee -a "$log"
  for f in "$work"/race-*.log; do
    echo "-- $(basename $f): $(grep -c -E -- '--- PASS' $f) passed, $(grep -c -E -- '--- FAIL' $f) failed; $(grep -E 'RACECHECK SUMMARY' $f | tail -1)" | tee -a "$log"
    grep -q -E '^(ok|PASS)$' "$f" || status=1
  done
  ;;
final)
  for s in 11 12; do
    step "TestGPUDecode, 1000 cases, seed $s"
    OCTANT_LIB=$lib ./bin/fuzz-plain.test -test.run '^TestGPUDecode$' -test.count=1 -test.v -rapid.checks=1000 -rapid.seed=$s 2>&1 \
      | grep -E 'rapid\]|time:|FAIL' | tee -a "$log"
  done
  step "TestGPUDecode, 1000 cases, seed 11, GOGC=400"
  GOGC=400 OCTANT_LIB=$lib ./bin/fuzz-plain.test -test.run '^TestGPUDecode$' -test.count=1 -test.v -rapid.checks=1000 -rapid.seed=11 2>&1 \
    | grep -E 'rapid\]|time:|FAIL' | tee -a "$log"
  PHASE=mutate MUT_TIMEOUT=${MUT_TIMEOUT:-420} WORK=$work "$0" "$out" &
  mpid=$!
  for tool in memcheck racecheck; do
    ( timeout ${SAN_TIMEOUT:-400} compute-sanitizer --tool $tool --error-exitcode 99 --print-limit 20 \
        env OCTANT_LIB=$lib ./bin/kernels.test -test.count=1 -test.run '^(TestPrefillGrid|TestPrefillErrors)$' -test.timeout 20m -test.v \
        > "$work/san-prefill-$tool.log" 2>&1
      echo "$tool prefill: exit $?" >> "$work/san-exit.log" ) &
  done
  make cuda-mutant MUTANT=1 > "$work/build-m1.log" 2>&1
  ./bin/octant conform --lib build/mutants/liboctave_cuda_m1.so --budget 20s --fixed 4 --out "$work/conform-m1" > "$work/conform-m1.log" 2>&1
  echo "conform against mutant 1: exit $? (1 expected: not certified)" >> "$work/final.log"
  cp "$work/conform-m1/report.md" "$out/conform-m1-report.md" 2>/dev/null
  wait
  cat "$work/final.log" "$work/san-exit.log" | tee -a "$log"
  grep -E -i 'certif|replay' "$work/conform-m1.log" | head -8 | cut -c1-400 | tee -a "$log"
  for f in "$work"/san-prefill-*.log; do
    echo "-- $(basename $f): $(grep -c -E -- '--- PASS' $f) passed, $(grep -c -E -- '--- FAIL' $f) failed; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $f | tail -1)" | tee -a "$log"
  done
  ;;
mutate)
  ids=$(grep -o -E '^#define OCT_MUT_[A-Z0-9_]+ +[0-9]+' csrc/include/octave_mutant.h | awk '{print $3}' | sort -n | tr '\n' ' ')
  n=${SHARDS:-3}
  sets=()
  k=0
  for id in 0 $ids; do sets[$((k % n))]+="${sets[$((k % n))]:+,}$id"; k=$((k+1)); done
  pids=()
  for i in "${!sets[@]}"; do
    step "shard $i: mutants ${sets[$i]}"
    timeout ${MUT_TIMEOUT:-540} ./bin/octant mutate --kind cuda --jobs ${JOBS:-5} --only "${sets[$i]}" --budget-per-mutant ${BUDGET:-75s} \
      --out "$work/mutate-$i" > "$work/mutate-$i.log" 2>&1 &
    pids+=($!)
  done
  for i in "${!pids[@]}"; do wait ${pids[$i]}; echo "shard $i exit $?" | tee -a "$log"; done
  for i in "${!sets[@]}"; do
    cp "$work/mutate-$i/kill-matrix.md" "$out/kill-matrix-$i.md" 2>/dev/null
  done
  ;;
*) echo "PHASE=throughput|sanitize|racecheck|mutate|final expected, found '${PHASE:-}'" >&2; exit 2;;
esac
finish
