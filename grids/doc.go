// Package grids holds the kernel tests: every op and tier of a kernel library, run through the
// binding (package kernels) and judged by package harness against the oracle. It has no code of
// its own; the tests are the package.
//
// # What they check
//
//   - The grids: covering arrays over each op's axes (TestStoreGrid, TestDecodeGrid,
//     TestPrefillGrid), length sweeps and long context (TestDecodeLongFirst, TestDecodeLengths,
//     TestDecodeLong, TestPrefillLong), the worked example and the upstream golden vectors
//     (TestStoreWorkedExample, TestStoreGolden, TestDecodeGolden), reduce, rotate and the query
//     maps (TestReduce, TestRotate, TestQueryMaps), per-row isolation (TestDecodeIsolation): each
//     output within its tier's declared numeric profile, every input and canary byte unchanged.
//   - Every error the C ABI promises (TestStoreErrors, TestDecodeErrors, TestPrefillErrors,
//     TestReduceRotateErrors, TestAlignmentErrors, TestEmptyCalls): the status, and a message
//     naming the field.
//   - The models of the matrix instructions and the block-index division, through the library's
//     test entry points (TestWMMAModel, TestMMAModel, TestWGMMAModel, TestBlockIndexDivision: the
//     internal test files, package grids), which run before the external ones (package
//     grids_test).
//   - The conventional suite (TestConventional*): upstream-shaped tests, the comparison of
//     `octant mutate --conventional`, not part of Octant's verdict.
//
// TestDecodeLongFirst is the first external test go test runs (a_long_first_test.go sorts first),
// and the first run of every kill run of `octant mutate`, which runs this package's test binary
// (bin/grids.test, `make gpu-bins`), selects it with only internal tests before it
// (TestLongFirstOrder checks both).
//
// # Running them
//
// They need a kernel library (the CPU emulator or a GPU build) named by OCTANT_LIB; without it
// every test that calls one skips. -short selects the small grids (the emulator, CI: `make
// emu-test`); without it the full grids run (the GPU: `make gpu-test`).
//
//	make emu && OCTANT_LIB=$PWD/build/liboctave_emu.so go test -short ./grids   (CPU emulator)
//	make cuda && OCTANT_LIB=$PWD/build/liboctave_cuda.so go test ./grids        (GPU)
//	OCTANT_LIB=/path/liboctave_cuda.so bin/grids.test -test.count=1             (make gpu-bins)
//
// OCTANT_TIERS=a,b judges only the named tiers; -args -octant.seed=N changes every case's inputs;
// -grid.shard, -grid.done, -grid.deadline and -grid.serial select grid cases for long runs under
// compute-sanitizer (gridsel_test.go). A failing case prints the command line that reruns it alone.
package grids
