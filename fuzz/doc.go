// Package fuzz runs the properties of Octave KV cases as rapid tests and as `go test -fuzz`
// targets: it draws cases from package cases, judges the GPU ones with package harness, and turns
// a failure into a reproducer file (cases.Reproducer) that replays with one command.
//
// # Properties and targets
//
// The oracle-only properties of the registry ([cases.Properties]), each written here once as a func(*rapid.T),
// are exposed as TestX (rapid.Check) and FuzzX (rapid.MakeFuzz: the fuzzer's bytes become rapid's
// choices):
//
//   - [PropSlotRoundTrip] (TestSlotRoundTrip, FuzzSlotRoundTrip): quantize → slot bytes →
//     dequantize equals LUT·scale/64 of the codes, read from the bytes by an independent reading
//     of docs/format.md §5; the rotation matches docs/format.md §3 bit for bit; re-quantizing is stable;
//     oracle.AcceptSlot says Identical.
//   - [PropSlotAcceptance] (TestSlotAcceptance, FuzzSlotAcceptance): single bit flips of code
//     and scale bytes are Unexplained unless an independent, exact reading of docs/format.md §10
//     re-derives a tie; pad bytes are ignored; non-finite groups decode to zero.
//   - [PropQueryMaps] (TestQueryMaps, FuzzQueryMaps): oracle.BuildQueryMaps against a brute-force
//     reading of docs/contract.md §4, on valid and invalid inputs.
//   - [PropMergePartials] (TestMergePartials, FuzzMergePartials): oracle.DecodePartials over any
//     geometry, merged by oracle.MergePartials, equals oracle.ExactDecode within a float64 bound
//     derived in cases/check_merge.go and stated in every failure.
//
// Run them with
//
//	go test ./fuzz                                    # 100 cases each, a few seconds
//	go test ./fuzz -run TestMergePartials -rapid.checks=5000
//	go test ./fuzz -run '^$' -fuzz '^FuzzQueryMaps$' -fuzztime 1m -parallel 1
//	make fuzz FUZZTIME=30s                            # every Fuzz target in turn (mk/fuzz.mk)
//
// The boundary tests (boundaries_test.go) draw thousands of values from every generator and fail
// if one stops reaching a boundary it promises. Every FuzzX target's seed corpus,
// testdata/fuzz/FuzzX/<name>, holds named boundary cases (the smallest case rapid finds with each
// property: seeds_test.go), which plain `go test` replays; TestFuzzSeedsMean keeps each file
// meaning its name.
//
// # The GPU targets
//
// [cases.GPUProperties] are the GPU targets FuzzStore, FuzzRotate, FuzzDecode, FuzzReduce and
// FuzzPrefill (and their rapid forms TestGPUStore, …): each draws a [cases.Recipe] ([cases.GPUStoreCases],
// [cases.GPURotateCases], [cases.GPUDecodeCases], [cases.GPUReduceCases], [cases.GPUPrefillCases]), builds its call and
// hands it to the one judge, package harness (harness.CheckAll: every implementation of the op in
// $OCTANT_LIB, each judged under its declared numeric profile with a derived bound that a failure
// states, padding rows exactly zero, canaries, inputs and gaps intact, the same bits twice). This
// package keeps only generators and properties; the judging is harness's, shared with the kernel
// grids, `octant conform` and `octant replay`. TestOracleX run the same judges with no library
// (the oracle's float32 models held to the bounds every tier is held to), so CI exercises them.
// Without $OCTANT_LIB the GPU targets skip.
//
//	OCTANT_LIB=build/liboctave_emu.so go test ./fuzz -run TestGPUDecode -rapid.checks=50
//	make fuzz-gpu FUZZTIME=2m                          # on the GPU machine (make cuda first)
package fuzz
