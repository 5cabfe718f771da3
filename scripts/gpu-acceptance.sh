#!/usr/bin/env bash
# Every batch on the GPU machine (NVIDIA, nvcc, compute-sanitizer, python3+torch; no Go there:
# binaries from `make gpu-bins`, carried in bin/), in phases so that each fits one device call.
# The library is built there (make cuda) when build/liboctave_cuda.so is missing (REBUILD=1:
# always). Everything is logged under a work directory ($WORK, default /tmp/acceptance); what
# comes back is $OUT/summary.log, one tarball of the logs ($OUT/logs-$PHASE.tgz) and a few named
# files, since the device returns at most 8 files.
#   PHASE=batch       the binding's own tests (bin/kernels.test) and the full kernel grids
#                     (bin/grids.test), compute-sanitizer memcheck and racecheck over the -short
#                     grids, octant bench, torch SDPA on the same shapes, the oracle benchmarks on
#                     one host core (SKIP="sanitize bench sdpa oracle" skips steps; GRID_ARGS
#                     and GRID_TIMEOUT for the grids, SAN_ARGS, SAN_TIMEOUT)
#   PHASE=fuzz        each GPU fuzz target (TARGETS, FUZZTIME, default 2m) with the instrumented
#                     binary; the broken-build check (FuzzDecode against mutant 1, then its printed
#                     replay command on the mutant and on the real library; MUTANT_DEMO=0 skips);
#                     CHECKS cases of each rapid GPU test (THROUGHPUT=0 skips)
#   PHASE=throughput  end-to-end cases/s of each GPU target (plain test binary, rapid form), the
#                     decode target at GOMAXPROCS 1, 4 and 16, and the host-only oracle side
#   PHASE=sanitize    compute-sanitizer memcheck and racecheck over the FULL kernel grid, sharded
#                     by test (run concurrently on the one GPU), and octant conform against the
#                     mutant-1 library (a defective build must not certify)
#   PHASE=gridbench   the full kernel grids without a sanitizer, then octant bench (SPECS, SPLITS)
#   PHASE=racecheck   compute-sanitizer racecheck over the full decode and prefill grids (and
#                     memcheck over the decode tests with MEMCHECK=1), in round-robin shards with
#                     a deadline, resumable (DONE_RACE, DONE_MEM): unsharded, neither grid
#                     finished in 400 s (one large decode case takes 43 s under racecheck)
#   PHASE=profile     octant bench of big and q1s100k over a splits sweep, then Nsight Compute
#                     (full set) on one decode launch of big at NCU_SPLITS (default 64) splits
#   PHASE=mutate      octant mutate over every mutant, the unmutated build and the conventional
#                     suite, in SHARDS concurrent processes (disjoint --only sets)
#   PHASE=final       the decode throughput (quiet machine first), then mutate, the prefill grid
#                     under both sanitizers and conform against mutant 1, concurrently
#   PHASE=soak        every GPU rapid property and must-not-matter property against the library,
#                     concurrently, SOAK_CHECKS (a "Test=checks" list; defaults sum to 100,000 cases)
#                     with progress lines (OCTANT_PROGRESS=30s) and a deadline (SOAK_TIMEOUT);
#                     cases per op, wall time and failures in the summary
#   PHASE=judge       after a change to the judges (package harness): the decode throughput (1000
#                     cases, seeds 11 and 12, quiet machine first), then the full kernel grids and
#                     octant conform (CONFORM_BUDGET) concurrently, the fuzz seed corpora and the
#                     regression corpus on the library, FUZZTIME of each GPU fuzz target (the new
#                     interesting inputs come back in fuzzcache.tgz)
#   PHASE=native      the native-tier batch (issue 14): the decode throughput (quiet machine first),
#                     then concurrently the full kernel grids (both tiers, long context included),
#                     compute-sanitizer memcheck and racecheck over the -short grids and the WMMA
#                     model tests (SAN_DEADLINE), octant conform for sm_90 and for gfx1100 on the
#                     model (carry build/isa/gfx1100); then the fuzz seed corpora and the regression
#                     corpus, and FUZZTIME of each GPU fuzz target
#   PHASE=mma         the mma tier (issue 15): the library and its fp16-K variant (-DOCT_DM_INT8K=0,
#                     built beside it), TestMMA and the full decode and prefill grids on the mma tier of each,
#                     octant bench of both (SPECS, default big,q1s100k,q4s100k,q2ks100k,q2ks100k-pf)
#                     beside scripts/bench_sdpa.py, Nsight Compute (set full, source counters) on
#                     one launch of big for each, compute-sanitizer memcheck and racecheck over the
#                     short decode and prefill grids on mma, and the decode throughput (DECODE_CHECKS)
#   PHASE=adapter     Octant's own kernels as vLLM ops (issue 39): the C++ torch extension with
#                     vLLM's op schemas (kernels/worker/testdata/octave_torch_ext.cpp) built with
#                     torch.utils.cpp_extension over the library; octant conform for gfx1100 on the
#                     model (carry build/isa), --fixed CONFORM_FIXED (100) --budget 0s, on the
#                     library directly and through vllm_ops.py, compared case for case
#                     (scripts/certcompare.py); then the decode throughput (TestGPUDecode, the rapid
#                     form of FuzzDecode, DECODE_CHECKS (1000) cases, seed 11) directly, through
#                     capi.py in torch mode (the whole domain: the bridge's own cost) and through
#                     vllm_ops.py (SKIP="conform" leaves the certificates out)
#   PHASE=adapter-mutate  octant mutate --through the vLLM-schema spec over MUTANTS (decode
#                     mutants of the portable and WMMA tiers), without fuzzing (BUDGET, 0s)
#   PHASE=certificates  the committed certificates of sm_90, gfx1100 and gfx942 (both on the
#                     model; carry build/isa) made again after a kernel change (docs/conformance.md,
#                     "Committed certificates"), as $OUT/certificates.tgz, beside the MFMA model's
#                     tests (TestMFMA*) with compute-sanitizer memcheck, racecheck and synccheck
#   PHASE=mfma        the gfx942 mfma tier on its model (issue 40): TestMFMA* bare and under
#                     compute-sanitizer memcheck, racecheck and synccheck; the full decode, reduce
#                     and prefill grids (long context to 131072 tokens) on mfma-model; the sanitizers
#                     over the -short decode and prefill grids on mfma-model; the fuzz seeds, the
#                     regression corpus, FuzzDecode, FuzzPrefill and FuzzIsolation (FUZZTIME, 30s)
#                     and the rapid, must-not-matter and isolation properties on mfma-model
#                     (SKIP="grid sanitize fuzz props" skips steps)
#   PHASE=campaign    one host's GPUs as a campaign (issue 41; nvidia-h100-x2 or larger): the MFMA
#                     model's tests (TestMFMA*) with compute-sanitizer memcheck and racecheck;
#                     octant conform --fixed CONFORM_FIXED (30) --cases CASES (30) once unsharded and
#                     once with --devices over every GPU, compared case for case; octant fuzz
#                     --devices (FuzzDecode, FUZZTIME 60s); octant props, one shard per GPU
#                     (CHECKS 100), merged; octant mutate, one shard per GPU over MUTANTS, merged
#                     (SHARDS: props and mutate shards, default one per GPU and at least 2, shard i
#                     on GPU i mod the count; on one GPU two shards share it and the checkout)
# The fuzz targets run in fuzz/ (as go test runs a package's binary), where their seed corpora are.
# Usage: PHASE=... scripts/gpu-acceptance.sh [OUTDIR]
set -uo pipefail
phases="batch|fuzz|throughput|sanitize|gridbench|racecheck|profile|mutate|final|judge|soak|native|mma|mfma|adapter|adapter-mutate|campaign|certificates"
known=0
IFS='|' read -ra names <<< "$phases"
for n in "${names[@]}"; do [ "$n" = "${PHASE:-}" ] && known=1; done
[ $known = 1 ] || { echo "PHASE=$phases expected, found '${PHASE:-}'" >&2; exit 2; }
out=${1:-${OUT:-gpu-out}}
mkdir -p "$out"
work=${WORK:-/tmp/acceptance}
mkdir -p "$work"
log="$out/summary.log"
step() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$log"; }
status=0
lib=$PWD/build/liboctave_cuda.so
finish() {
  tar -C "$work" -czf "$out/logs-$PHASE.tgz" . 2>/dev/null
  step "done, status $status"
  exit $status
}
step "environment ($PHASE)"
{ date -u; git rev-parse HEAD 2>/dev/null; git status --porcelain 2>/dev/null | head -5
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
  nvcc --version 2>/dev/null | tail -1; lscpu 2>/dev/null | grep -E 'Model name'; nproc; } 2>&1 | tee -a "$log"
skip() { [[ " ${SKIP:-} " == *" $1 "* ]]; }
if [ ! -f "$lib" ] || [ "${REBUILD:-0}" = 1 ]; then
  step "make cuda"
  make cuda > "$work/build.log" 2>&1 || { tail -20 "$work/build.log" | tee -a "$log"; status=1; finish; }
fi
sha256sum "$lib" | tee -a "$log"

# Shared by the judge and native phases: the decode throughput (TestGPUDecode, DECODE_CHECKS
# cases, seeds 11 and 12), the grid log's counts, and the fuzz seed corpora and regression corpus
# on the library followed by FUZZTIME (default $1) of each GPU fuzz target, in fuzz/.
decode_throughput() {
  for sd in 11 12; do
    step "TestGPUDecode, ${DECODE_CHECKS:-1000} cases, seed $sd"
    OCTANT_LIB=$lib OCTANT_REGRESSIONS=$work/regressions ./bin/fuzz-plain.test -test.run '^TestGPUDecode$' -test.count=1 -test.v \
      -rapid.checks=${DECODE_CHECKS:-1000} -rapid.seed=$sd > "$work/tp-$sd.log" 2>&1 || status=1
    grep -E 'rapid\]|judged in|time:|FAIL|panic' "$work/tp-$sd.log" | head -6 | tee -a "$log"
  done
}
grid_summary() {
  echo "grid: $(grep -c -E -- '--- PASS' "$work/grid.log") passed, $(grep -c -E -- '--- FAIL' "$work/grid.log") failed, $(grep -c -E -- '--- SKIP' "$work/grid.log") skipped" | tee -a "$log"
  grep -E -- '--- FAIL|^(ok|PASS|FAIL)|panic' "$work/grid.log" | head -20 | cut -c1-300 | tee -a "$log"
}
seeds_and_fuzz() {
  step "fuzz seed corpora and the regression corpus on the library"
  (cd fuzz && OCTANT_LIB=$lib ../bin/fuzz-plain.test -test.count=1 -test.run '^Fuzz|TestReplayRegressions|TestFuzzSeedsMean' -test.v) > "$work/seeds.log" 2>&1 || status=1
  echo "$(grep -c -E -- '--- PASS' "$work/seeds.log") passed, $(grep -c -E -- '--- FAIL' "$work/seeds.log") failed" | tee -a "$log"
  grep -E -- '--- FAIL|long-context' "$work/seeds.log" | head | tee -a "$log"
  for t in ${TARGETS:-FuzzDecode FuzzStore FuzzRotate FuzzReduce FuzzPrefill}; do
    step "$t for ${FUZZTIME:-$1}"
    (cd fuzz && OCTANT_LIB=$lib OCTANT_REGRESSIONS=$work/regressions ../bin/fuzz.test -test.run '^$' -test.fuzz "^$t\$" -test.fuzztime ${FUZZTIME:-$1} \
      -test.fuzzminimizetime 10x -test.parallel 1 -test.fuzzcachedir "$work/fuzzcache") > "$work/$t.log" 2>&1 || status=1
    grep -E '^fuzz: elapsed' "$work/$t.log" | tail -1 | tee -a "$log"
    grep -E -- '--- FAIL|^(ok|PASS|FAIL)$|replay:' "$work/$t.log" | head -4 | cut -c1-300 | tee -a "$log"
  done
}

# The C++ torch extension with vLLM's op schemas, built over the CUDA torch of this machine, and
# the specs that judge the library through it (vllm_ops.py) and through capi.py in torch mode.
torch_ext() {
  ext_dir=$PWD/build/torch_ext_cuda
  step "torch, and the C++ torch extension with vLLM's op schemas (torch.utils.cpp_extension)"
  python3 -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda, torch.cuda.get_device_name(0))' 2>&1 | tee -a "$log"
  mkdir -p "$ext_dir"
  timeout 300 python3 -c "from torch.utils.cpp_extension import load; load('octave_torch_ext', ['kernels/worker/testdata/octave_torch_ext.cpp'], extra_include_paths=['csrc/include'], build_directory='$ext_dir', is_python_module=False)" \
    > "$work/ext.log" 2>&1 || { tail -20 "$work/ext.log" | tee -a "$log"; status=1; finish; }
  py=$PWD/kernels/worker/py/octant_adapters
  vllm_spec="torch:$py/vllm_ops.py?ext=$ext_dir/octave_torch_ext.so&lib=$lib&tiers=portable,wmma-model&prefill=wmma-model&device=cuda:0"
  capi_spec="torch:$py/capi.py?lib=$lib&device=cuda:0"
  echo "vllm spec: $vllm_spec" | tee -a "$log"
}

mfma_tests() {
  for tool in none memcheck racecheck synccheck; do
    step "TestMFMA* ($tool)"
    pre=""; [ $tool != none ] && pre="compute-sanitizer --tool $tool --error-exitcode 9"
    (cd grids && OCTANT_LIB=$lib timeout -k 10 ${MFMA_TIMEOUT:-300} $pre ../bin/grids.test -test.run 'MFMA' -test.count=1 -test.v) > "$work/mfma-$tool.log" 2>&1
    echo "exit $?: $(grep -c -- '--- PASS' "$work/mfma-$tool.log") passed, $(grep -c -- '--- FAIL' "$work/mfma-$tool.log") failed, $(grep -c -- '--- SKIP' "$work/mfma-$tool.log") skipped" | tee -a "$log"
    grep -E -- '--- FAIL|ERROR SUMMARY|^(ok|PASS|FAIL)$' "$work/mfma-$tool.log" | head -5 | cut -c1-300 | tee -a "$log"
  done
}

case $PHASE in
certificates)
  step "octant conform: sm_90 and gfx1100 (model), at once"
  ./bin/octant conform --lib $lib --budget ${CERT_BUDGET:-45s} --fixed 8 --out "$work/cert/sm_90" > "$work/cert-sm_90.log" 2>&1 & p1=$!
  ./bin/octant conform --lib $lib --arch gfx942 --isa-dir build/isa --budget ${CERT_BUDGET:-45s} --fixed 8 --out "$work/cert/gfx942" > "$work/cert-gfx942.log" 2>&1 & p2=$!
  ./bin/octant conform --lib $lib --arch gfx1100 --isa-dir build/isa --budget ${CERT_BUDGET:-45s} --fixed 8 --out "$work/cert/gfx1100" > "$work/cert-gfx1100.log" 2>&1
  echo "gfx1100 exit $?" | tee -a "$log"; wait $p1; echo "sm_90 exit $?" | tee -a "$log"; wait $p2; echo "gfx942 exit $?" | tee -a "$log"
  for a in sm_90 gfx1100 gfx942; do tail -1 "$work/cert-$a.log" | cut -c1-400 | tee -a "$log"; done
  tar -C "$work/cert" -czf "$out/certificates.tgz" sm_90 gfx1100 gfx942
  skip mfma || mfma_tests
  ;;
campaign)
  ngpu=$(nvidia-smi -L | wc -l); devs=$(seq -s, 0 $((ngpu - 1)))
  # props and mutate run SHARDS shards (default: one per GPU, at least 2), shard i on GPU i mod ngpu
  nsh=${SHARDS:-$(( ngpu > 1 ? ngpu : 2 ))}
  echo "devices: $devs; props and mutate shards: $nsh" | tee -a "$log"
  skip mfma || mfma_tests
  flags="--lib $lib --fixed ${CONFORM_FIXED:-30} --cases ${CASES:-30} --seed ${SEED:-7}"
  for side in one devices; do
    extra=""; [ $side = devices ] && extra="--devices $devs"
    step "octant conform $flags $extra"
    t0=$(date +%s)
    timeout -k 10 ${CONFORM_TIMEOUT:-240} ./bin/octant conform $flags $extra --out "$work/conform-$side" > "$work/conform-$side.log" 2>&1
    echo "conform $side exit $? in $(( $(date +%s) - t0 )) s" | tee -a "$log"
    grep -E 'shard|CERTIFIED' "$work/conform-$side.log" | tail -8 | cut -c1-400 | tee -a "$log"
  done
  cp "$work/conform-devices/certificate.json" "$out/certificate-devices.json" 2>/dev/null
  python3 scripts/certcompare.py "$work/conform-one/certificate.json" "$work/conform-devices/certificate.json" > "$work/certcompare.log" 2>&1 || status=1
  tail -8 "$work/certcompare.log" | cut -c1-300 | tee -a "$log"
  step "octant fuzz --devices $devs --target FuzzDecode --fuzztime ${FUZZTIME:-60s}"
  timeout -k 10 300 ./bin/octant fuzz --devices $devs --target FuzzDecode --fuzztime ${FUZZTIME:-60s} --lib $lib --test-bin bin/fuzz.test \
    --out "$work/fuzz" > "$work/fuzz.log" 2>&1
  echo "fuzz exit $?" | tee -a "$log"; tail -8 "$work/fuzz.log" | cut -c1-300 | tee -a "$log"
  step "octant props, $nsh shards, --checks ${CHECKS:-100}, merged"
  for i in $(seq 0 $((nsh - 1))); do
    CUDA_VISIBLE_DEVICES=$((i % ngpu)) timeout -k 10 300 ./bin/octant props --shard $i/$nsh --seed 5 --checks ${CHECKS:-100} --lib $lib \
      --bin bin/fuzz-plain.test --out "$work/props-$i" > "$work/props-$i.log" 2>&1 &
  done; wait
  ./bin/octant merge "$work/props" $(for i in $(seq 0 $((nsh - 1))); do echo "$work/props-$i"; done) > "$work/props-merge.log" 2>&1
  echo "props merge exit $?" | tee -a "$log"; tail -6 "$work/props-merge.log" | cut -c1-300 | tee -a "$log"
  skip mutate || { step "octant mutate, $nsh shards in one checkout, mutants ${MUTANTS:-1,8,12,13}, merged"
  for i in $(seq 0 $((nsh - 1))); do
    CUDA_VISIBLE_DEVICES=$((i % ngpu)) timeout -k 10 ${MUT_TIMEOUT:-300} ./bin/octant mutate --kind cuda --jobs 8 --only "${MUTANTS:-1,8,12,13}" --shard $i/$nsh \
      --budget-per-mutant 0s --conventional=false --out "$work/mutate-$i" > "$work/mutate-$i.log" 2>&1 &
  done; wait
  ./bin/octant merge "$work/mutate" $(for i in $(seq 0 $((nsh - 1))); do echo "$work/mutate-$i"; done) > "$work/mutate-merge.log" 2>&1
  echo "mutate merge exit $?" | tee -a "$log"; tail -4 "$work/mutate-merge.log" | cut -c1-300 | tee -a "$log"
  cp "$work/mutate/kill-matrix.md" "$out/kill-matrix-merged.md" 2>/dev/null; }
  ;;
adapter)
  torch_ext
  skip conform || for side in direct adapter; do
    l=$lib; [ $side = adapter ] && l=$vllm_spec
    step "octant conform --arch gfx1100 ($side), --fixed ${CONFORM_FIXED:-100} --budget 0s"
    timeout -k 10 ${CONFORM_TIMEOUT:-200} ./bin/octant conform --lib "$l" --arch gfx1100 --isa-dir build/isa --tiers portable,wmma-model \
      --fixed ${CONFORM_FIXED:-100} --budget 0s --out "$work/conform-$side" > "$work/conform-$side.log" 2>&1
    echo "conform $side exit $?" | tee -a "$log"
    tail -1 "$work/conform-$side.log" | cut -c1-700 | tee -a "$log"
    cp "$work/conform-$side/certificate.json" "$out/certificate-$side.json" 2>/dev/null
  done
  skip conform || { python3 scripts/certcompare.py "$work/conform-direct/certificate.json" "$work/conform-adapter/certificate.json" > "$work/certcompare.log" 2>&1 || status=1
    tail -14 "$work/certcompare.log" | cut -c1-300 | tee -a "$log"; }
  for v in "direct:$lib" "capi:$capi_spec" "vllm:$vllm_spec"; do
    side=${v%%:*} l=${v#*:}
    step "TestGPUDecode $side, ${DECODE_CHECKS:-1000} cases, seed 11 (OCTANT_TIERS=portable,wmma-model)"
    OCTANT_LIB="$l" OCTANT_TIERS=portable,wmma-model OCTANT_REGRESSIONS=$work/regressions-$side timeout -k 10 ${TP_TIMEOUT:-150} \
      ./bin/fuzz-plain.test -test.run '^TestGPUDecode$' -test.count=1 -test.v -rapid.checks=${DECODE_CHECKS:-1000} -rapid.seed=11 \
      > "$work/tp-$side.log" 2>&1 || status=1
    grep -E 'rapid\]|judged in|outside the declared|time:|FAIL|panic' "$work/tp-$side.log" | head -6 | cut -c1-300 | tee -a "$log"
  done
  ;;
adapter-mutate)
  torch_ext
  through=${vllm_spec/lib=$lib/lib=\{lib\}}
  step "octant mutate --through (vllm_ops.py), mutants ${MUTANTS:-8,10,12,13,15,16,17,18,34}"
  timeout -k 10 ${MUT_TIMEOUT:-480} ./bin/octant mutate --kind cuda --jobs ${JOBS:-16} --only "${MUTANTS:-8,10,12,13,15,16,17,18,34}" \
    --budget-per-mutant ${BUDGET:-0s} --conventional=false --through "$through" --out "$work/mutate" > "$work/mutate.log" 2>&1
  echo "mutate exit $?" | tee -a "$log"
  grep -E '^mutant|^built in' "$work/mutate.log" | cut -c1-300 | tee -a "$log"
  cp "$work/mutate/kill-matrix.md" "$out/kill-matrix-through.md" 2>/dev/null
  ;;
batch)
  step "the binding's own tests, then the kernel grid (full) against the oracle"
  OCTANT_LIB=$lib ./bin/kernels.test -test.count=1 > "$work/grid.log" 2>&1 || status=1
  OCTANT_LIB=$lib ./bin/grids.test -test.count=1 -test.timeout=${GRID_TIMEOUT:-9m} ${GRID_ARGS:-} >> "$work/grid.log" 2>&1 || status=1
  tail -40 "$work/grid.log" | tee -a "$log"
  if ! skip sanitize; then
    for tool in memcheck racecheck; do
      step "compute-sanitizer --tool $tool (short grid)"
      compute-sanitizer --tool $tool --error-exitcode 99 --print-limit 20 \
        env OCTANT_LIB=$lib ./bin/grids.test -test.short -test.count=1 -test.timeout=${SAN_TIMEOUT:-8m} ${SAN_ARGS:-} \
        > "$work/sanitize-$tool.log" 2>&1 || status=1
      tail -15 "$work/sanitize-$tool.log" | tee -a "$log"
    done
  fi
  if ! skip bench; then
    step "octant bench"
    ./bin/octant bench --lib "$lib" --json "$work/bench.json" 2>"$work/bench.err" | tee -a "$log" || status=1
    cp "$work/bench.json" "$out/bench.json" 2>/dev/null
  fi
  if ! skip sdpa; then
    step "torch SDPA fp16 decode, same shapes"
    PYTHONUNBUFFERED=1 python3 scripts/bench_sdpa.py --json "$work/sdpa.json" 2>&1 | tee -a "$log"
    cp "$work/sdpa.json" "$out/sdpa.json" 2>/dev/null
  fi
  if ! skip oracle; then
    step "oracle benchmarks on one host core"
    taskset -c 3 ./bin/oracle.test -test.run '^$' -test.bench 'QuantizeSlot|DequantizeSlot|ExactDecode32k' \
      -test.benchtime 2s -test.cpu 1 2>&1 | tee -a "$log"
  fi
  ;;
fuzz)
  export OCTANT_REPLAY_CMD="bin/octant replay" OCTANT_REGRESSIONS=$work/regressions
  mut=$PWD/build/mutants/liboctave_cuda_m1.so
  if [ "${MUTANT_DEMO:-1}" = 1 ] && [ ! -f "$mut" ]; then
    step "make cuda-mutant MUTANT=1"
    make cuda-mutant MUTANT=1 > "$work/build-m1.log" 2>&1 || { tail -5 "$work/build-m1.log" | tee -a "$log"; status=1; finish; }
  fi
  for t in ${TARGETS:-FuzzDecode FuzzStore FuzzRotate FuzzReduce FuzzPrefill}; do
    step "$t for ${FUZZTIME:-2m} against $lib"
    (cd fuzz && OCTANT_LIB=$lib ../bin/fuzz.test -test.run '^$' -test.fuzz "^$t\$" -test.fuzztime ${FUZZTIME:-2m} -test.fuzzminimizetime 10x \
      -test.parallel 1 -test.fuzzcachedir "$work/fuzzcache") > "$work/$t.log" 2>&1 || status=1
    grep -v '^fuzz: elapsed: [0-9]*s, execs' "$work/$t.log" | tail -25 | tee -a "$log"
    grep '^fuzz: elapsed' "$work/$t.log" | tail -2 | tee -a "$log"
  done
  if [ "${MUTANT_DEMO:-1}" = 1 ]; then
    step "broken build: FuzzDecode against mutant 1 ($mut)"
    t0=$(date +%s%N)
    (cd fuzz && OCTANT_LIB=$mut OCTANT_REGRESSIONS=$work/mutant-regressions ../bin/fuzz.test -test.run '^$' -test.fuzz '^FuzzDecode$' -test.fuzztime 60s \
      -test.fuzzminimizetime 10x -test.parallel 1 -test.fuzzcachedir "$work/fuzzcache-mutant") > "$work/mutant.log" 2>&1
    rc=$?; t1=$(date +%s%N)
    echo "exit $rc after $(( (t1 - t0) / 1000000 )) ms (expected: a failure)" | tee -a "$log"
    [ $rc != 0 ] || status=1
    grep -m3 -E 'gpu-decode:|^ *replay:' "$work/mutant.log" | tee -a "$log"
    cmd=$(grep -m1 -o 'replay: .*' "$work/mutant.log" | sed 's/^replay: //')
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
      OCTANT_LIB=$lib OCTANT_REGRESSIONS=$work/tp-regressions ./bin/fuzz-plain.test -test.run "^TestGPU$t\$" -test.count=1 -test.v \
        -rapid.checks=${CHECKS:-300} 2>&1 | grep -E 'rapid\]|FAIL' | sed "s/^/$t: /" | tee -a "$log"
    done
  fi
  ;;
throughput)
  for t in Decode Store Rotate Reduce Prefill; do
    n=300; [ $t = Decode ] && n=${DECODE_CHECKS:-1000}; [ $t = Prefill ] && n=150
    step "TestGPU$t, $n cases"
    OCTANT_LIB=$lib OCTANT_REGRESSIONS=$work/regressions ./bin/fuzz-plain.test -test.run "^TestGPU$t\$" -test.count=1 -test.v \
      -rapid.checks=$n > "$work/tp-$t.log" 2>&1 || status=1
    grep -E 'rapid\]|judged in|time:|FAIL|panic' "$work/tp-$t.log" | head -8 | tee -a "$log"
  done
  for p in 1 4 16; do
    step "TestGPUDecode at GOMAXPROCS $p, 300 cases"
    GOMAXPROCS=$p OCTANT_LIB=$lib ./bin/fuzz-plain.test -test.run '^TestGPUDecode$' -test.count=1 -test.v -rapid.checks=300 -rapid.seed=11 2>&1 \
      | grep -E 'rapid\]|judged in|time:|FAIL' | tee -a "$log"
    step "TestOracleDecode (host only) at GOMAXPROCS $p, 300 cases"
    GOMAXPROCS=$p ./bin/fuzz-plain.test -test.run '^TestOracleDecode$' -test.count=1 -test.v -rapid.checks=300 -rapid.seed=11 2>&1 \
      | grep -E 'rapid\]|FAIL' | tee -a "$log"
  done
  step "FuzzDecode (instrumented fuzzing binary), 60 s"
  (cd fuzz && OCTANT_LIB=$lib OCTANT_REGRESSIONS=$work/regressions ../bin/fuzz.test -test.run '^$' -test.fuzz '^FuzzDecode$' -test.fuzztime 60s \
    -test.fuzzminimizetime 10x -test.parallel 1 -test.fuzzcachedir "$work/fuzzcache") > "$work/fuzz-decode.log" 2>&1 || status=1
  grep -E '^fuzz: elapsed' "$work/fuzz-decode.log" | tail -2 | tee -a "$log"
  grep -E 'FAIL|PASS|^ok' "$work/fuzz-decode.log" | tail -3 | tee -a "$log"
  ;;
sanitize)
  make cuda-mutant MUTANT=1 > "$work/build-m1.log" 2>&1 &
  bpid=$!
  # each shard is "binary:pattern": the kernel tests (bin/grids.test), the binding's own (bin/kernels.test)
  shards=("grids:TestDecodeGrid" "grids:TestDecode(Lengths|Sharp|ArbitraryMaps|Golden|Errors)" "grids:TestPrefill(Grid|Errors)" \
          "grids:Test(Store|Reduce|Rotate|QueryMaps|Empty|Conventional)[A-Za-z]*" "kernels:Test(Device|Struct|Open|ErrorIs|HIP|Buffer)[A-Za-z]*")
  pids=()
  for tool in memcheck racecheck; do
    for i in "${!shards[@]}"; do
      ( timeout ${SAN_TIMEOUT:-500} compute-sanitizer --tool $tool --error-exitcode 99 --print-limit 20 \
          env OCTANT_LIB=$lib ./bin/${shards[$i]%%:*}.test -test.count=1 -test.run "^(${shards[$i]#*:})\$" -test.timeout 20m -test.v \
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
gridbench)
  step "kernel tests, full grids (no sanitizer)"
  OCTANT_LIB=$lib ./bin/grids.test -test.count=1 -test.v > "$work/grid.log" 2>&1 || status=1
  echo "$(grep -c -E -- '--- PASS' "$work/grid.log") passed, $(grep -c -E -- '--- FAIL' "$work/grid.log") failed, $(grep -c -E -- '--- SKIP' "$work/grid.log") skipped" | tee -a "$log"
  grep -E -- '--- FAIL|^(ok|PASS|FAIL)' "$work/grid.log" | head -20 | tee -a "$log"
  step "octant bench"
  ./bin/octant bench --lib "$lib" --specs ${SPECS:-big,q1s100k,q4s100k,q2ks100k} --splits ${SPLITS:-auto,64} --reps 20 \
    --json "$work/bench.json" 2>"$work/bench.err" | tee -a "$log" || status=1
  cp "$work/bench.json" "$out/bench.json"
  ;;
racecheck)
  # compute-sanitizer over the full grids, each grid split into round-robin shards (-grid.shard) run
  # as concurrent processes on the one GPU, one case at a time per process (-test.parallel 1) so
  # that cases finish one by one; cases that would start after -grid.deadline skip, so every
  # process ends and its sanitizer writes its summary. DONE_RACE / DONE_MEM: files of cases that
  # passed in an earlier run (passed-*.txt of that run), skipped. Tools: racecheck over both
  # grids (ND and NP shards) and the other decode tests; memcheck (MEMCHECK=1) over the decode
  # tests (2 shards).
  dl=${DEADLINE:-400s}
  jobs=()  # "tool;pattern;extra flags;name"
  for i in $(seq 0 $((${ND:-6} - 1))); do jobs+=("racecheck;TestDecodeGrid;-grid.shard=$i/${ND:-6};dgrid$i"); done
  for i in $(seq 0 $((${NP:-5} - 1))); do jobs+=("racecheck;TestPrefillGrid;-grid.shard=$i/${NP:-5};pgrid$i"); done
  if [ "${OTHERS:-1}" = 1 ]; then
    jobs+=("racecheck;TestDecodeLengths;;dlengths" "racecheck;TestDecode(Sharp|ArbitraryMaps|Golden|Errors);;dother")
  fi
  if [ "${MEMCHECK:-0}" = 1 ]; then
    [ "${MEMGRID:-1}" = 1 ] && jobs+=("memcheck;TestDecodeGrid;-grid.shard=0/2;dgrid0" "memcheck;TestDecodeGrid;-grid.shard=1/2;dgrid1")
    jobs+=("memcheck;TestDecodeLengths;;dlengths" "memcheck;TestDecode(Sharp|ArbitraryMaps|Golden|Errors);;dother")
  fi
  pids=()
  for jb in "${jobs[@]}"; do
    IFS=';' read -r tool pat extra name <<< "$jb"
    done_file=${DONE_RACE:-}; [ $tool = memcheck ] && done_file=${DONE_MEM:-}
    dflag=""; [ -n "$done_file" ] && [ -f "$done_file" ] && dflag="-grid.done=$PWD/$done_file"
    ( timeout ${SAN_TIMEOUT:-560} compute-sanitizer --tool $tool --error-exitcode 99 --print-limit 20 \
        env OCTANT_LIB=$lib ./bin/grids.test -test.count=1 -test.run "^($pat)\$" -test.parallel 1 -test.timeout 30m -test.v \
        -grid.serial -grid.deadline=$dl $extra $dflag > "$work/$tool-$name.log" 2>&1
      echo "$tool $name ($pat $extra): exit $?" >> "$work/san-exit.log" ) &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait $p; done
  sort "$work/san-exit.log" | tee -a "$log"
  for f in "$work"/racecheck-*.log "$work"/memcheck-*.log; do
    [ -f "$f" ] || continue
    echo "-- $(basename $f): $(grep -c -E -- '^ +--- PASS' $f) passed, $(grep -c -E -- '--- FAIL' $f) failed, $(grep -c -E -- '^ +--- SKIP.*' $f) skipped; $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' $f | tail -1)" | tee -a "$log"
    grep -E -- '--- FAIL|Race reported|Invalid|Error:' "$f" | head -5 | tee -a "$log"
    grep -q -E '^(ok|PASS)$' "$f" || status=1
  done
  for tool in racecheck memcheck; do
    cat "$work"/$tool-*.log 2>/dev/null | grep -E -- '^ +--- PASS: Test(Decode|Prefill)Grid/' | awk '{print $3}' | sort > "$out/passed-$tool.txt"
    echo "$tool: $(wc -l < "$out/passed-$tool.txt") grid cases passed in this run" | tee -a "$log"
  done
  cat "$work"/racecheck-*.log | grep -c 'past -grid.deadline' | sed 's/^/racecheck cases skipped at the deadline: /' | tee -a "$log"
  ;;
final)
  for s in 11 12; do
    step "TestGPUDecode, 1000 cases, seed $s"
    OCTANT_LIB=$lib ./bin/fuzz-plain.test -test.run '^TestGPUDecode$' -test.count=1 -test.v -rapid.checks=1000 -rapid.seed=$s 2>&1 \
      | grep -E 'rapid\]|judged in|time:|FAIL' | tee -a "$log"
  done
  step "TestGPUDecode, 1000 cases, seed 11, GOGC=400"
  GOGC=400 OCTANT_LIB=$lib ./bin/fuzz-plain.test -test.run '^TestGPUDecode$' -test.count=1 -test.v -rapid.checks=1000 -rapid.seed=11 2>&1 \
    | grep -E 'rapid\]|judged in|time:|FAIL' | tee -a "$log"
  PHASE=mutate MUT_TIMEOUT=${MUT_TIMEOUT:-420} WORK=$work "$0" "$out" &
  mpid=$!
  for tool in memcheck racecheck; do
    ( timeout ${SAN_TIMEOUT:-400} compute-sanitizer --tool $tool --error-exitcode 99 --print-limit 20 \
        env OCTANT_LIB=$lib ./bin/grids.test -test.count=1 -test.run '^(TestPrefillGrid|TestPrefillErrors)$' -test.timeout 20m -test.v \
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
profile)
  step "octant bench, splits sweep"
  ./bin/octant bench --lib "$lib" --specs big,q1s100k,q4s100k --splits ${SPLITS:-auto,64,132,264,528} --reps 20 \
    --json "$work/bench.json" 2>"$work/bench.err" | tee -a "$log" || status=1
  step "ncu (set full) on one decode launch of big, ${NCU_SPLITS:-64} splits"
  timeout ${NCU_TIMEOUT:-240} ncu --kernel-name regex:octave_decode_dot4 --launch-skip 2 --launch-count 1 --set full \
    -o "$work/big" -f ./bin/octant bench --lib "$lib" --specs big --splits ${NCU_SPLITS:-64} --reps 2 --warmup 1 \
    --copy-bytes 0 > "$work/ncu-run.log" 2>&1 || { status=1; tail -5 "$work/ncu-run.log" | tee -a "$log"; }
  ncu --import "$work/big.ncu-rep" --page details > "$work/ncu-details.txt" 2>&1
  ncu --import "$work/big.ncu-rep" --page source --print-source sass --csv > "$work/ncu-sass.csv" 2>&1
  grep -E -i 'Duration|Throughput|Issue Slots|Issued Ipc|No Eligible|Achieved Occupancy|Registers|Warp Cycles Per Issued|Stall|Executed Instructions' \
    "$work/ncu-details.txt" | head -60 | tee -a "$log"
  cp "$work/ncu-details.txt" "$out/ncu-details.txt"
  ;;
soak)
  checks=${SOAK_CHECKS:-"TestGPURotate=30000 TestGPUDecode=5000 TestGPUReduce=12000 TestGPUStore=8000 TestGPUPrefill=4000 TestMustNotMatterDecode=3000 TestMustNotMatterPrefill=1000 TestMustNotMatterStore=1000 TestMustNotMatterReduce=1000"}
  step "soak: $checks"
  t0=$(date +%s)
  pids=()
  for tc in $checks; do
    t=${tc%%=*}; n=${tc##*=}
    ( cd fuzz && OCTANT_PROGRESS=${OCTANT_PROGRESS:-30s} OCTANT_LIB=$lib OCTANT_REGRESSIONS=$work/regressions OCTANT_REPLAY_CMD="bin/octant replay" \
        timeout ${SOAK_TIMEOUT:-540} ../bin/fuzz-plain.test -test.run "^$t\$" -test.count=1 -test.v -test.timeout 60m -rapid.checks=$n \
        > "$work/soak-$t.log" 2>&1; echo "$t exit $?" >> "$work/soak-exit.log" ) &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait $p; done
  echo "wall $(( $(date +%s) - t0 )) s" | tee -a "$log"
  sort "$work/soak-exit.log" | tee -a "$log"
  total=0
  for tc in $checks; do
    t=${tc%%=*}
    ok=$(grep -o -E 'passed [0-9]+ tests' "$work/soak-$t.log" | grep -o -E '[0-9]+' | tail -1)
    last=$(grep -E '^progress:' "$work/soak-$t.log" | tail -1)
    echo "$t: ${ok:-not finished} passed; $(grep -m1 -E 'rapid\] (failed|OK)' "$work/soak-$t.log" | cut -c1-300); last progress: $last" | tee -a "$log"
    total=$(( total + ${ok:-0} ))
  done
  echo "soak: $total cases passed in all" | tee -a "$log"
  grep -h -E -A3 '^--- FAIL' "$work"/soak-*.log | head -40 | cut -c1-400 | tee -a "$log"
  ;;
judge)
  decode_throughput
  step "kernel grids (full) and octant conform (${CONFORM_BUDGET:-90s}), concurrently"
  ( OCTANT_LIB=$lib timeout ${GRID_TIMEOUT:-300} ./bin/grids.test -test.count=1 -test.v > "$work/grid.log" 2>&1; echo "grid exit $?" > "$work/grid.exit" ) &
  gpid=$!
  timeout ${CONFORM_TIMEOUT:-300} ./bin/octant conform --lib "$lib" --budget ${CONFORM_BUDGET:-90s} --out "$work/conform" > "$work/conform.log" 2>&1
  echo "conform exit $?" | tee -a "$log"
  grep -E '^(conform|evidence|missing|too few|decode|prefill|store|reduce|rotate) ' "$work/conform.log" | tail -14 | cut -c1-300 | tee -a "$log"
  cp "$work/conform/certificate.json" "$out/certificate.json" 2>/dev/null
  cp "$work/conform/report.md" "$out/report.md" 2>/dev/null
  wait $gpid
  cat "$work/grid.exit" | tee -a "$log"
  grid_summary
  seeds_and_fuzz 40s
  tar -C "$work" -czf "$out/fuzzcache.tgz" fuzzcache regressions 2>/dev/null
  ;;
native)
  decode_throughput
  step "concurrently: full kernel grids, sanitizers over the -short grids, conform sm_90 and gfx1100 (model)"
  ( OCTANT_LIB=$lib timeout ${GRID_TIMEOUT:-330} ./bin/grids.test -test.count=1 -test.v > "$work/grid.log" 2>&1; echo "grid exit $?" > "$work/grid.exit" ) &
  pids=($!)
  for tool in memcheck racecheck; do
    ( timeout ${SAN_TIMEOUT:-330} compute-sanitizer --tool $tool --error-exitcode 99 --print-limit 20 \
        env OCTANT_LIB=$lib ./bin/grids.test -test.short -test.count=1 -test.v -test.timeout 20m \
        -test.run '^(TestDecodeGrid|TestPrefillGrid|TestPrefillTiles|TestWMMAModel|TestWMMATierListed)$' -grid.deadline=${SAN_DEADLINE:-250s} \
        > "$work/san-$tool.log" 2>&1
      echo "$tool: exit $?" >> "$work/san-exit.log" ) &
    pids+=($!)
  done
  timeout ${CONFORM_TIMEOUT:-200} ./bin/octant conform --lib "$lib" --budget ${CONFORM_BUDGET:-60s} --out "$work/conform" > "$work/conform.log" 2>&1
  echo "conform sm_90 exit $?" | tee -a "$log"
  grep -E -i '^(conform|evidence|missing|too few|verdict)|CERTIFIED' "$work/conform.log" | tail -8 | cut -c1-300 | tee -a "$log"
  cp "$work/conform/report.md" "$out/report-sm90.md" 2>/dev/null
  timeout ${CONFORM_TIMEOUT:-200} ./bin/octant conform --lib "$lib" --arch gfx1100 --isa-dir build/isa --budget ${CONFORM_BUDGET:-60s} --out "$work/conform-gfx1100" > "$work/conform-gfx1100.log" 2>&1
  echo "conform gfx1100 (model) exit $?" | tee -a "$log"
  grep -E -i '^(conform|evidence|missing|too few|verdict)|CERTIFIED' "$work/conform-gfx1100.log" | tail -8 | cut -c1-300 | tee -a "$log"
  cp "$work/conform-gfx1100/report.md" "$out/report-gfx1100.md" 2>/dev/null
  for p in "${pids[@]}"; do wait $p; done
  cat "$work/grid.exit" "$work/san-exit.log" | tee -a "$log"
  grid_summary
  grep -E -- '--- (PASS|FAIL): Test(Decode|Prefill)Long/' "$work/grid.log" | cut -c1-200 | tee -a "$log"
  for f in "$work"/san-memcheck.log "$work"/san-racecheck.log; do
    echo "-- $(basename $f): $(grep -c -E -- '--- PASS' $f) passed, $(grep -c -E -- '--- FAIL' $f) failed, $(grep -c 'past -grid.deadline' $f) past the deadline; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $f | tail -1)" | tee -a "$log"
    grep -q -E '^(ok|PASS)$' "$f" || { status=1; grep -E -- '--- FAIL|Invalid|Race|Error' "$f" | head -5 | tee -a "$log"; }
  done
  seeds_and_fuzz 20s
  cp "$work/grid.log" "$out/grid.log" 2>/dev/null; gzip -f "$out/grid.log"
  tar -C "$work" -czf "$out/fuzzcache.tgz" fuzzcache regressions 2>/dev/null
  ;;
mfma)
  # The steps run side by side (one GPU, many cores): the model's tests, the full grids and the
  # three sanitizers, then the properties and the fuzz targets.
  pids=()
  skip mfma || { mfma_tests > /dev/null 2>&1 & pids+=($!); }
  if ! skip grid; then
    (cd grids && OCTANT_LIB=$lib OCTANT_TIERS=mfma-model timeout -k 10 ${GRID_TIMEOUT:-400} ../bin/grids.test -test.count=1 -test.v \
      -test.run '^TestDecode|^TestReduce|^TestPrefill' -test.timeout 30m > "$work/grid.log" 2>&1; echo "grid exit $?" > "$work/grid.exit") & pids+=($!)
  fi
  if ! skip sanitize; then
    for tool in memcheck racecheck synccheck; do
      (cd grids && OCTANT_LIB=$lib OCTANT_TIERS=mfma-model timeout -k 10 ${SAN_TIMEOUT:-300} compute-sanitizer --tool $tool --error-exitcode 9 \
        ../bin/grids.test -test.short -test.count=1 -test.v -test.run '^TestDecodeGrid$|^TestDecodeLengths$|^TestPrefillGrid$' > "$work/san-$tool.log" 2>&1
        echo "$tool exit $?" > "$work/san-$tool.exit") & pids+=($!)
    done
  fi
  for p in "${pids[@]}"; do wait $p; done
  skip mfma || for tool in none memcheck racecheck synccheck; do
    echo "TestMFMA* ($tool): $(grep -c -- '--- PASS' "$work/mfma-$tool.log") passed, $(grep -c -- '--- FAIL' "$work/mfma-$tool.log") failed; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$work/mfma-$tool.log" | tail -1)" | tee -a "$log"
  done
  if ! skip grid; then
    step "the full decode, reduce and prefill grids on mfma-model (long context to 131072 tokens)"
    cat "$work/grid.exit" | tee -a "$log"; grep -q "exit 0" "$work/grid.exit" || status=1
    grid_summary
    grep -E -- '--- (PASS|FAIL): Test(Decode|Prefill)Long(First)?/' "$work/grid.log" | grep mfma | head -12 | cut -c1-200 | tee -a "$log"
  fi
  if ! skip sanitize; then
    for tool in memcheck racecheck synccheck; do
      step "compute-sanitizer $tool, the -short decode and prefill grids on mfma-model"
      echo "$(cat "$work/san-$tool.exit"): $(grep -c -- '--- PASS' "$work/san-$tool.log") passed, $(grep -c -- '--- FAIL' "$work/san-$tool.log") failed; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$work/san-$tool.log" | tail -1)" | tee -a "$log"
      grep -q "exit 0" "$work/san-$tool.exit" || { status=1; grep -E -- '--- FAIL|Invalid|Race|Error' "$work/san-$tool.log" | head -5 | cut -c1-300 | tee -a "$log"; }
    done
  fi
  if ! skip props; then
    step "the rapid, must-not-matter and isolation properties on mfma-model (CHECKS ${CHECKS:-200})"
    (cd fuzz && OCTANT_LIB=$lib OCTANT_TIERS=mfma-model timeout -k 10 ${PROPS_TIMEOUT:-300} ../bin/fuzz-plain.test -test.count=1 -test.v \
      -test.run '^(TestGPU|TestMustNotMatter|TestIsolationDecode|TestIsolationSmallCases)' -rapid.checks=${CHECKS:-200}) > "$work/props.log" 2>&1 || status=1
    echo "$(grep -c -E -- '^--- PASS' "$work/props.log") passed, $(grep -c -E -- '^--- FAIL' "$work/props.log") failed, $(grep -c -E -- '^--- SKIP' "$work/props.log") skipped" | tee -a "$log"
    grep -E -- '^--- FAIL|rapid\]' "$work/props.log" | head -8 | cut -c1-300 | tee -a "$log"
  fi
  skip fuzz || OCTANT_TIERS=mfma-model TARGETS=${TARGETS:-"FuzzDecode FuzzPrefill FuzzIsolation"} seeds_and_fuzz 30s
  cp "$work/grid.log" "$out/grid.log" 2>/dev/null; gzip -f "$out/grid.log"
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
mma)
  v8=$work/liboctave_cuda_f16k.so
  step "nvcc: the fp16-K variant (-DOCT_DM_INT8K=0, profile wmma-f16q)"
  nvcc -x cu -arch=sm_90 -O3 -std=c++17 -shared -Xcompiler -fPIC -Icsrc/include -Icsrc -DOCTAVE_TARGETS='"sm_90"' -DOCT_DM_INT8K=0 \
    csrc/*.hip csrc/*.cpp -o "$v8" > "$work/build-f16k.log" 2>&1 || { tail -20 "$work/build-f16k.log" | tee -a "$log"; status=1; finish; }
  for l in "$lib" "$v8"; do cuobjdump --dump-resource-usage "$l" 2>&1 | grep -A1 "decode_mma_k3v4" | tee -a "$log"; done
  skip throughput || decode_throughput
  for v in default:$lib f16k:$v8; do
    name=${v%%:*} l=${v#*:}
    step "$name: TestMMA and the full decode and prefill tests on the mma tier"
    OCTANT_LIB=$l OCTANT_TIERS=mma ./bin/grids.test -test.count=1 -test.v -test.run '^TestMMA|^TestDecode|^TestPrefill' > "$work/grid-$name.log" 2>&1 || status=1
    echo "$(grep -c -E -- '--- PASS' "$work/grid-$name.log") passed, $(grep -c -E -- '--- FAIL' "$work/grid-$name.log") failed" | tee -a "$log"
    step "$name: octant bench"
    ./bin/octant bench --lib "$l" --specs ${SPECS:-big,q1s100k,q4s100k,q2ks100k,q2ks100k-pf} --reps 20 --json "$work/bench-$name.json" \
      2>"$work/bench-$name.err" | tee -a "$log" || status=1
    step "$name: ncu (set full) on one mma decode launch of big"
    timeout ${NCU_TIMEOUT:-150} ncu --clock-control none --kernel-name regex:octave_decode_mma --launch-skip 2 --launch-count 1 --set full \
      -o "$work/big-$name" -f ./bin/octant bench --lib "$l" --specs big --tiers mma --reps 2 --warmup 1 --copy-bytes 0 > "$work/ncu-$name.log" 2>&1 || status=1
    ncu --import "$work/big-$name.ncu-rep" --page details > "$work/ncu-details-$name.txt" 2>&1
    grep -E -i 'Duration|DRAM Throughput|Issue Slots|Issued Ipc|Achieved Occupancy|Registers Per|Executed Instructions  ' "$work/ncu-details-$name.txt" | head -10 | tee -a "$log"
    rm -f "$work/big-$name.ncu-rep"
  done
  skip sdpa || { step "torch SDPA, the same shapes"; PYTHONUNBUFFERED=1 python3 scripts/bench_sdpa.py --json "$work/sdpa.json" 2>&1 | grep -E "flash|HBM" | tee -a "$log"; }
  skip sanitize || step "compute-sanitizer memcheck and racecheck, short decode and prefill grids on mma"
  skip sanitize || for tool in memcheck racecheck; do
    OCTANT_LIB=$lib OCTANT_TIERS=mma timeout ${SAN_TIMEOUT:-200} compute-sanitizer --tool $tool --error-exitcode 9 ./bin/grids.test -test.short \
      -test.count=1 -test.run '^TestDecodeGrid|^TestReduce|^TestPrefill' > "$work/san-$tool.log" 2>&1 || status=1
    tail -2 "$work/san-$tool.log" | tee -a "$log"
  done
  ;;
esac
finish
