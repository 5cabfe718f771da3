// Package pyref holds a test subject for Octant's judges: a second, independent implementation
// of the Octave ops store, rotate, decode (tiers portable and wmma-model), reduce and query maps,
// in Python and numpy, written from docs/format.md and docs/contract.md and run in a worker
// through the adapter contract (docs/adapters.md):
//
//	host:/abs/path/internal/pyref/testdata/pyref_adapter.py[?defect=NAME]
//
// Without a defect option it is meant to be correct: the kernel grids (-short), the GPU fuzz
// targets' runs and seed corpora, the decode isolation and the must-not-matter properties for
// store, rotate, reduce and decode pass on it, and `octant conform` through
// its spec certifies it on the domain it declares (prefill is not declared). Each defect option
// plants one realistic defect (the adapter's DEFECTS: a scale rounded toward zero, an inclusive
// causal bound, a wrong GQA mapping, a stale workspace read, a reported and a silent tier
// fallback, an exception on a valid block size), and at least one judge must fail on it with a
// message that names what is wrong.
//
// The package has no Go API; its test runs the judges as subprocesses (prebuilt test binaries of
// ./grids and ./fuzz, and cmd/octant) with OCTANT_LIB set to the adapter's spec and OCTANT_PYTHON
// to an interpreter that has numpy (OCTANT_PYTHON when it has, else /usr/bin/python3; it skips
// when neither has). It runs only with its flag, -pyref.judges (make pyref-test), so that
// `go test ./...` does not spend its minutes.
package pyref
