package fuzz

import (
	"github.com/octant-kv/octant/cases"
	"pgregory.net/rapid"
)

// PropSlotRoundTrip: for any slot case (non-finite K or V included, a quarter of the time each),
// the oracle's slot
//
//   - is what QuantizeSlot, Quantizer.Quantize and the acceptor's canonical bytes all give;
//   - holds the rotation of docs/format.md §3 computed independently (slotref.go), bit for bit;
//   - unpacks, read bit by bit per docs/format.md §5, to the codes and fp16 scales the quantizer
//     reports for each group, with zero pad bytes;
//   - dequantizes (oracle.DequantizeSlot) to exactly LUT[c]·scale/64 of those codes;
//   - decodes to zero in every group whose rotated input is non-finite (docs/format.md §10 rule 4);
//   - is stable under re-quantization: quantizing a group's dequantized values x̂ = L[c]·s/64
//     again gives, for every dim, the exact code of L[c]·mult/rms(L[c]) (or its neighbour at a
//     rule-2 tie), and wherever the codes come back unchanged the fp16 scale does too;
//   - is judged Identical by oracle.AcceptSlot, byte for byte, with a zero pad.
func (r *Runner) PropSlotRoundTrip(t *rapid.T) {
	c := cases.SlotCases(cases.SlotCaseOptions{NonFinite: 2}).Draw(t, "case")
	if err := cases.CheckSlotRoundTrip(c); err != nil {
		r.fail(t, cases.PropNameSlotRoundTrip, c, err)
	}
}

// PropSlotAcceptance: the oracle's own slot is Identical; every single-bit flip of a code or scale
// byte is Unexplained unless the independent reading of docs/format.md §10 (slotref.go) re-derives
// every difference as a tie (then Explained); a flipped pad bit changes no verdict (only
// PadNonZero); in a group with non-finite input a flipped code is Explained and a scale that stops
// being ±0 is Unexplained.
func (r *Runner) PropSlotAcceptance(t *rapid.T) {
	c := cases.SlotCases(cases.SlotCaseOptions{NonFinite: 2, Flips: 8}).Draw(t, "case")
	if err := cases.CheckSlotAcceptance(c); err != nil {
		r.fail(t, cases.PropNameSlotAcceptance, c, err)
	}
}

// PropMergePartials: for any decode call and any split geometry, oracle.DecodePartials merged by
// oracle.MergePartials equals oracle.ExactDecode element by element within the float64 bound of
// mergeBound (derived there, stated in every failure), and rows with no readable token are exactly
// zero in both.
func (r *Runner) PropMergePartials(t *rapid.T) {
	c := cases.MergeCases().Draw(t, "case")
	in, err := c.Decode.Build()
	if err != nil {
		t.Fatalf("building the generated decode call: %v", err)
	}
	c.Digest = cases.Digest(in)
	if err := cases.CheckMergeBuilt(c, in); err != nil {
		r.fail(t, cases.PropNameMerge, c, err)
	}
}

// PropQueryMaps: oracle.BuildQueryMaps agrees with a brute-force reading of docs/contract.md §4
// (bruteQueryMaps: each token's request found by scanning every request's range, cross-checked
// against the searchsorted form #{j ≥ 1 : qsl[j] ≤ t}), on valid inputs value for value and on
// invalid ones by refusing; on valid inputs decode rows see klen = seq_len, MTP runs rise by one
// and every request's last token sees its whole sequence.
func (r *Runner) PropQueryMaps(t *rapid.T) {
	c := cases.QueryMapCases().Draw(t, "case")
	if err := cases.CheckQueryMaps(c); err != nil {
		r.fail(t, cases.PropNameQueryMaps, c, err)
	}
}
