#!/usr/bin/env bash
# Fuzzing on the GPU machine (no Go there): the GPU targets of ./fuzz, prebuilt with coverage
# instrumentation (make gpu-bins: bin/fuzz.test, bin/octant), one target at a time with
# -parallel=1, against build/liboctave_cuda.so; then the broken-build check: FuzzDecode against
# mutant 1 (reduce leaves padding rows unwritten, corpus/mutants.md), and the replay command it
# prints, run on the mutant and on the real library.
# Usage: scripts/gpu-fuzz.sh [OUTDIR]; TARGETS="FuzzDecode ..." FUZZTIME=2m BUILD=0 MUTANT_DEMO=0.
set -uo pipefail
out=${1:-${OUT:-gpu-out}}
case $out in /*) ;; *) out=$PWD/$out;; esac
mkdir -p "$out"
log="$out/gpu-fuzz.log"
step() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$log"; }
status=0
export OCTANT_REPLAY_CMD="bin/octant replay" OCTANT_REGRESSIONS=$out/regressions
if [ "${BUILD:-1}" = 1 ]; then
  step "build (make cuda, make cuda-mutant MUTANT=1)"
  make cuda 2>&1 | tail -2 | tee -a "$log" || exit 1
  [ "${MUTANT_DEMO:-1}" = 0 ] || make cuda-mutant MUTANT=1 2>&1 | tail -1 | tee -a "$log" || exit 1
fi
lib=$PWD/build/liboctave_cuda.so
for t in ${TARGETS:-FuzzDecode FuzzStore FuzzRotate FuzzReduce FuzzPrefill}; do
  step "$t for ${FUZZTIME:-2m} against $lib"
  OCTANT_LIB=$lib ./bin/fuzz.test -test.run '^$' -test.fuzz "^$t\$" -test.fuzztime ${FUZZTIME:-2m} -test.fuzzminimizetime 10x -test.parallel 1 \
    -test.fuzzcachedir "$out/fuzzcache" 2>&1 | tee "$out/$t.log" | grep -v '^fuzz: elapsed: [0-9]*s, execs' | tail -25 | tee -a "$log"
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
  grep '^fuzz: elapsed' "$out/$t.log" | tail -2 | tee -a "$log"
done
if [ "${MUTANT_DEMO:-1}" = 1 ]; then
  mut=$PWD/build/mutants/liboctave_cuda_m1.so
  step "broken build: FuzzDecode against mutant 1 ($mut)"
  t0=$(date +%s%N)
  OCTANT_LIB=$mut OCTANT_REGRESSIONS=$out/mutant-regressions ./bin/fuzz.test -test.run '^$' -test.fuzz '^FuzzDecode$' -test.fuzztime 60s -test.fuzzminimizetime 10x \
    -test.parallel 1 -test.fuzzcachedir "$out/fuzzcache-mutant" > "$out/mutant.log" 2>&1
  rc=$?; t1=$(date +%s%N)
  echo "exit $rc after $(( (t1 - t0) / 1000000 )) ms (expected: a failure)" | tee -a "$log"
  grep -m3 -E 'gpu-decode:|^ *replay:' "$out/mutant.log" | tee -a "$log"
  cmd=$(grep -m1 -o 'replay: .*' "$out/mutant.log" | sed 's/^replay: //')
  if [ -n "$cmd" ]; then
    step "the printed replay command: $cmd"
    $cmd 2>&1 | cut -c1-300 | tee -a "$log"
    step "the same reproducer on the real library"
    ${cmd/$mut/$lib} 2>&1 | cut -c1-300 | tee -a "$log"
  fi
fi
if [ "${THROUGHPUT:-1}" = 1 ]; then
  step "throughput: ${CHECKS:-300} cases per target (rapid tests: generation, GPU, oracle, end to end)"
  for t in Store Rotate Decode Reduce Prefill; do
    OCTANT_LIB=$lib OCTANT_REGRESSIONS=$out/tp-regressions ./bin/fuzz.test -test.run "^TestGPU$t\$" -test.count=1 -test.v \
      -rapid.checks=${CHECKS:-300} 2>&1 | grep -E 'rapid\]|FAIL' | sed "s/^/$t: /" | tee -a "$log"
  done
fi
step "done, status $status"
exit $status
