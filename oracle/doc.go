// Package oracle is Octant's reference model of the Octave KV cache format and of the attention the
// Octave kernels compute. Everything else in Octant (the fuzz harness, the kernel tests, the
// conformance runner) compares against it, so it depends on nothing else in the project.
//
// # Contract
//
// The byte format follows docs/format.md and the operations docs/contract.md. The
// oracle guarantees:
//
//   - Format descriptors ([Format]) for the three cache dtypes the kernels know (ids 3, 4, 19),
//     with offsets and slot sizes as docs/format.md §5 gives them, and validation of head size and rope
//     dims that explains what was expected.
//   - Codebooks ([LUT3], [LUT4]) and their derivation from Lloyd-Max centroids of N(0,1)
//     ([LloydMax]).
//   - Sign patterns ([DefaultSigns], MT19937 seeded 0x5E17) and any other pattern ([SignsFromWords]).
//   - Rotations ([FWHT32], [Rotate], [Unrotate]) bit-exact to docs/format.md §3's float32 stage order,
//     with no FMA contraction.
//   - Quantization ([QuantizeSlot]) bit-exact to the reference's float32 steps, with one canonical,
//     order-independent choice where the reference's reduction order is unspecified: ss and dot are
//     accumulated exactly (float64 is exact for these sums of float32 products, see sum.go) and
//     rounded once to float32. docs/oracle.md records this decision.
//   - Slot acceptance ([AcceptSlot]): a verdict per quantization group for a slot written by
//     someone else, following docs/format.md §10.
//   - Attention in float64 over the dequantized cache, each numeric profile of docs/contract.md §5 with
//     the error bound it implies, split-KV partials and their merge, prefill semantics, and the
//     query-map builder of docs/contract.md §4 (attention*.go, profile*.go, partials.go, querymap.go).
//
// Inputs are float32 values that are exactly representable in the input dtype (fp16 or bf16);
// [F16ToF32] and [BF16ToF32] convert raw input bits exactly.
package oracle
