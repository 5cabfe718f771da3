// Package harness is Octant's one judge of the Octave kernels: every caller that runs a kernel
// and decides whether its output is right — the kernel grid tests (package grids), the fuzz
// targets (package fuzz), `octant conform`, `octant replay` and `octant mutate` (through the
// test binaries it runs) — goes through the functions here, so that a case means the same thing
// wherever it comes from. It is in the style of Go's crypto/internal/cryptotest: one test body,
// every implementation.
//
// # Contract
//
//   - A [Lib] is a kernel library, its device 0 and the tiers the device offers ([Open];
//     [Lib.Only] restricts it to named tiers, an unknown name an error listing the tiers offered).
//     The caller opens it: a command from its --lib flag, a test binary from its settings
//     (harnesstest.EnvLib).
//   - A [Call] is one call of an op with concrete inputs: [DecodeCall], [PrefillCall],
//     [StoreCall], [ReduceCall], [RotateCall]. Whoever builds it (a grid, a rapid generator, the
//     seeded conformance generator, a reproducer), the judge is the same.
//   - [Impls] lists the implementations of an op: with no library the oracle alone (its float32
//     model of the op's arithmetic, held to the same judgement, so CI exercises every judge
//     without a GPU); with a library, each tier that offers the op (decode, prefill) or the
//     library's one implementation (store, rotate, reduce).
//   - [Check] runs a call on one implementation and returns a [Verdict]; [CheckAll] does so for
//     every implementation (decode and prefill: concurrently, the models of every declared
//     profile started first; the library serialises the device calls). Each library run uploads every input between canary bytes
//     (kernels.BufferSet), fills outputs with NaN (0xFF bytes), checks the status, syncs, then
//     checks the canaries, that every input is unchanged and that output gaps are untouched; it
//     runs the call a second time and requires the same bits (except on the CPU emulator for
//     launches of more than 256 workgroups: the emulator cannot show a race).
//   - One verdict rule ([Verdict]): Fail on any error status, canary, modified input, written gap
//     or padding row, nondeterminism, or an element outside its declared profile's bound;
//     QualityWarning when every element is within its bound but the output is not within the
//     contract's relative L2 of exact attention and the declared profile's model or the output
//     dtype's rounding explains it; Fail when neither does (a bound too loose to judge the case:
//     long context, cancelling terms); Pass otherwise. Docs: docs/contract.md §5, docs/bounds.md.
//   - [Record] runs a call once more on one implementation and returns its first library call as
//     a standalone replay needs it ([Recording]: the ABI struct, every buffer's bytes before the
//     op, the repeat rule and the oracle's [Expectation] of the output): package cases writes it
//     as a Python reproducer (docs/adapters.md).
//   - The judge reads no environment, no file and no flag: a case comes in as a Call, every
//     setting as an argument, and the verdict goes back to the caller (package cases owns the
//     reproducer a failing case is written as).
//
// Adding a tier to every judge is adding it to the library (csrc), the registry (arch) and its
// profile to the oracle: [Impls] picks it up from the device's tier list.
package harness
