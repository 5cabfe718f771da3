package oracle

import (
	"fmt"
	"math"
	"strings"
)

// TieMargin is δ of docs/format.md §10: the relative distance from a threshold (rule 2) or from an fp16
// midpoint (rule 3) within which two correct roundings may disagree.
const TieMargin = 1.0 / (1 << 18)

// Verdict is the acceptance verdict of a group or slot; larger is worse.
type Verdict int

const (
	Identical   Verdict = iota // the same codes and scale as the oracle's canonical quantization
	Explained                  // different, but every difference is accepted by a rule of docs/format.md §10
	Unexplained                // some difference no rule accepts: a defect of the writer
)

func (v Verdict) String() string {
	return [...]string{"identical", "explained", "unexplained"}[v]
}

// Hazard is a property of the format met by a group (docs/format.md §10, "Format hazards"): not a
// defect of the writer, but worth reporting.
type Hazard string

const (
	HazardScaleOverflow  Hazard = "scale-overflow"  // RNE(s*) is +inf: the group decodes to ±inf/NaN
	HazardScaleSubnormal Hazard = "scale-subnormal" // the stored scale is an fp16 subnormal
	HazardScaleUnderflow Hazard = "scale-underflow" // a non-zero group whose scale rounds to 0
	HazardZeroGroup      Hazard = "zero-group"      // every input is zero: scale 0
	HazardNonFinite      Hazard = "non-finite-input"
	HazardSSOverflow     Hazard = "ss-overflow" // finite input whose float32 Σx² overflows: codes carry no information
)

// Difference is one accepted or refused difference from the canonical quantization.
type Difference struct {
	Rule   string  // "code-tie", "scale-tie", "non-finite", or "none" when refused
	Dim    int     // dim within the group for code differences, −1 for the scale
	Stored int     // stored code, or fp16 bits of the stored scale
	Exact  int     // exact code, or fp16 bits of RNE(s*)
	Margin float64 // relative distance from the tie point (threshold or fp16 midpoint)
	Note   string
}

func (d Difference) String() string {
	what := fmt.Sprintf("dim %d: code %d, exact %d", d.Dim, d.Stored, d.Exact)
	if d.Dim < 0 {
		what = fmt.Sprintf("scale %#04x, exact %#04x", d.Stored, d.Exact)
	}
	s := fmt.Sprintf("%s [%s, margin %.3g]", what, d.Rule, d.Margin)
	if d.Note != "" {
		s += " " + d.Note
	}
	return s
}

// GroupVerdict is the acceptance of one quantization group of a slot.
type GroupVerdict struct {
	Group   Group
	Verdict Verdict
	Diffs   []Difference // every difference from the canonical codes and scale
	Hazards []Hazard
}

// SlotVerdict is the acceptance of a slot: per group, the worst verdict, and whether the bytes
// equal the canonical slot byte for byte (pad included; pad is otherwise ignored).
type SlotVerdict struct {
	Groups         []GroupVerdict
	Verdict        Verdict
	ByteIdentical  bool // every byte, pad included, equals the oracle's slot
	PadNonZero     bool // the pad holds non-zero bytes (allowed: readers ignore pad)
	CanonicalBytes []byte
}

// Hazards returns every hazard of every group, prefixed with the group name.
func (s SlotVerdict) Hazards() []string {
	var h []string
	for _, g := range s.Groups {
		for _, z := range g.Hazards {
			h = append(h, g.Group.Name+":"+string(z))
		}
	}
	return h
}

// Summary is a one-line description: the verdict and each difference.
func (s SlotVerdict) Summary() string {
	var b strings.Builder
	b.WriteString(s.Verdict.String())
	for _, g := range s.Groups {
		for _, d := range g.Diffs {
			fmt.Fprintf(&b, "; %s %s", g.Group.Name, d)
		}
	}
	return b.String()
}

// Acceptor judges slots written by someone else against their inputs (docs/format.md §10).
type Acceptor struct {
	q *Quantizer
}

// NewAcceptor returns an Acceptor for a format and sign patterns.
func NewAcceptor(f Format, ks, vs Signs) (*Acceptor, error) {
	q, err := NewQuantizer(f, ks, vs)
	if err != nil {
		return nil, err
	}
	return &Acceptor{q: q}, nil
}

// AcceptSlot is a one-shot Acceptor.Accept.
func AcceptSlot(f Format, k, v []float32, slot []byte, ks, vs Signs) (SlotVerdict, error) {
	a, err := NewAcceptor(f, ks, vs)
	if err != nil {
		return SlotVerdict{}, err
	}
	return a.Accept(k, v, slot)
}

// Accept judges slot as the quantization of original-space inputs k and v (head_size values
// each, exactly representable in the input dtype). Rules, per group:
//
//  1. Pad bytes are ignored (reported in PadNonZero only).
//  2. A code is accepted if it equals the exact code of y = x/rms·mult computed in float64 from
//     the float32 rotated input, or if it is the adjacent code and y lies within relative δ of the
//     threshold between them. The threshold 0 has no relative scale; there a difference is
//     accepted only when |y| < 2^-126 and x ≠ 0, where float32 division can underflow.
//  3. The scale is judged against s* = 64·ss/Σx_i·L[stored c_i] (exact, float64): the stored fp16
//     must be RNE(s*), or its neighbour when s* is within relative δ of their midpoint (+inf
//     counts as 65536 for the midpoint, so 65520 is the overflow tie). s* = 0 when the
//     denominator is ≤ 0, and then only +0 is accepted.
//  4. A group with NaN or ±inf input must have scale ±0; its codes are not judged.
func (a *Acceptor) Accept(k, v []float32, slot []byte) (SlotVerdict, error) {
	f := a.q.F
	if len(k) != f.HeadSize || len(v) != f.HeadSize {
		return SlotVerdict{}, fmt.Errorf("oracle: Accept: %d K and %d V values, expected %d each", len(k), len(v), f.HeadSize)
	}
	if len(slot) < f.SlotBytes() {
		return SlotVerdict{}, fmt.Errorf("oracle: Accept: slot of %d bytes, expected %d for %v", len(slot), f.SlotBytes(), f.ID)
	}
	slot = slot[:f.SlotBytes()]
	canon := make([]byte, f.SlotBytes())
	a.q.QuantizeInto(canon, k, v)
	kr := append([]float32(nil), a.q.kRot...)
	vr := append([]float32(nil), a.q.vRot...)
	sk, sv := SlotCodes(f, slot)
	ck, cv := SlotCodes(f, canon)
	res := SlotVerdict{ByteIdentical: string(slot) == string(canon), CanonicalBytes: canon}
	for _, b := range slot[f.SlotBytes()-f.PadBytes():] {
		if b != 0 {
			res.PadNonZero = true
		}
	}
	for _, g := range f.Groups() {
		x, st, cn := kr, sk, ck
		if g.IsV {
			x, st, cn = vr, sv, cv
		}
		gv := judgeGroup(g, x[g.Dim0:g.Dim0+g.N], st[g.Dim0:g.Dim0+g.N], cn[g.Dim0:g.Dim0+g.N],
			getU16(slot[g.ScaleOff:]), getU16(canon[g.ScaleOff:]))
		if gv.Verdict == Explained && getU16(slot[g.ScaleOff:]) == getU16(canon[g.ScaleOff:]) &&
			equalCodes(st[g.Dim0:g.Dim0+g.N], cn[g.Dim0:g.Dim0+g.N]) {
			// The canonical quantization itself, where float32 and exact arithmetic straddle a
			// tie: Identical by definition; the differences from exact stay listed.
			gv.Verdict = Identical
		}
		res.Groups = append(res.Groups, gv)
		res.Verdict = max(res.Verdict, gv.Verdict)
	}
	return res, nil
}

func judgeGroup(g Group, x []float32, stored, canon []uint8, sStored, sCanon uint16) GroupVerdict {
	gv := GroupVerdict{Group: g}
	refuse := func(d Difference) {
		d.Rule = "none"
		gv.Diffs = append(gv.Diffs, d)
		gv.Verdict = Unexplained
	}
	accept := func(d Difference) {
		gv.Diffs = append(gv.Diffs, d)
		gv.Verdict = max(gv.Verdict, Explained)
	}
	// Rule 4.
	finite, allZero := true, true
	for _, v := range x {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			finite = false
		}
		if v != 0 {
			allZero = false
		}
	}
	if !finite {
		gv.Hazards = append(gv.Hazards, HazardNonFinite)
		if sStored&0x7fff != 0 {
			refuse(Difference{Dim: -1, Stored: int(sStored), Exact: 0, Note: "non-finite input must decode to zero (scale ±0)"})
		} else if sStored != sCanon || !equalCodes(stored, canon) {
			accept(Difference{Rule: "non-finite", Dim: -1, Stored: int(sStored), Exact: int(sCanon), Note: "codes unspecified for non-finite input"})
		}
		return gv
	}
	if allZero {
		gv.Hazards = append(gv.Hazards, HazardZeroGroup)
	}
	// Rule 2: codes against the exact y.
	var ss dd
	for _, v := range x {
		ss.add(float64(v) * float64(v)) // exact product: 48 significant bits
	}
	ssx := ss.hi + ss.lo
	rms := math.Max(math.Sqrt(ssx/float64(len(x))), float64(rmsFloor))
	if ss32, _ := groupSS(x); math.IsInf(float64(ss32), 0) {
		// Finite inputs whose float32 squares sum past float32's range (bf16 values above about
		// 1e18): every float32 implementation then has ss = rms = +inf, y = 0 and s* = +inf or 0.
		// Judge by that arithmetic, and report it.
		gv.Hazards = append(gv.Hazards, HazardSSOverflow)
		rms, ssx = math.Inf(1), math.Inf(1)
	}
	mult := float64(LUTMult(g.Bits))
	thr := thresholds(g.Bits)
	for i, v := range x {
		y := float64(v) / rms * mult
		exact := 0
		for _, t := range thr {
			if float64(t) < y {
				exact++
			}
		}
		c := int(stored[i])
		if c == exact {
			continue
		}
		d := Difference{Dim: i, Stored: c, Exact: exact}
		if c-exact != 1 && exact-c != 1 {
			d.Margin = math.Inf(1)
			refuse(d)
			continue
		}
		t := float64(thr[min(c, exact)])
		if t == 0 {
			d.Margin = math.Abs(y)
			if v != 0 && math.Abs(y) < 0x1p-126 {
				d.Rule, d.Note = "code-tie", "y underflows float32 at threshold 0"
				accept(d)
			} else {
				refuse(d)
			}
			continue
		}
		d.Margin = math.Abs(y-t) / math.Abs(t)
		if d.Margin <= TieMargin {
			d.Rule = "code-tie"
			d.Note = fmt.Sprintf("y=%.9g at threshold %g", y, t)
			accept(d)
		} else {
			refuse(d)
		}
	}
	// Rule 3: the scale against the stored codes.
	l := LUT(g.Bits)
	var den dd
	for i, v := range x {
		den.add(float64(v) * float64(l[stored[i]])) // exact: 24 × 7 bits
	}
	sstar := 0.0
	if dn := den.hi + den.lo; dn > 0 {
		sstar = 64 * ssx / dn
	}
	if math.IsInf(ssx, 1) {
		// ss overflow: float32 arithmetic gives 64·inf/dot = +inf, or NaN when dot overflowed
		// too (inf/inf), and +0 when dot ≤ 0. Inf and NaN both decode to non-finite values, the
		// hazard already reported; accept exactly these.
		// A float32 product x·L that overflows makes the float32 dot ±inf or NaN (+inf and −inf
		// products), so the reference's scale is +inf, NaN or +0 ("dot > 0" fails on NaN):
		// accept all three then (docs/oracle.md, "ss overflow").
		prodOverflow := false
		for i, v := range x {
			if math.IsInf(float64(float32(float64(v)*float64(l[stored[i]]))), 0) {
				prodOverflow = true
			}
		}
		if prodOverflow && (sStored == 0 || sStored == 0x7c00 || (sStored&0x7c00 == 0x7c00 && sStored&0x03ff != 0)) {
			if sStored != sCanon {
				accept(Difference{Rule: "ss-overflow", Dim: -1, Stored: int(sStored), Exact: int(sCanon), Note: "float32 Σx² and a product x·L overflow: +inf, NaN or +0"})
			}
			return gv
		}
		if den.hi+den.lo <= 0 {
			if sStored != 0 {
				refuse(Difference{Dim: -1, Stored: int(sStored), Exact: 0, Margin: math.Inf(1), Note: "float32 Σx² overflows and Σx·L ≤ 0: scale must be +0"})
			}
			return gv
		}
		if sStored == 0x7c00 || (sStored&0x7c00 == 0x7c00 && sStored&0x03ff != 0) {
			if sStored != sCanon {
				accept(Difference{Rule: "ss-overflow", Dim: -1, Stored: int(sStored), Exact: int(sCanon), Note: "float32 Σx² overflows: +inf or NaN"})
			}
		} else {
			refuse(Difference{Dim: -1, Stored: int(sStored), Exact: 0x7c00, Margin: math.Inf(1), Note: "float32 Σx² overflows: scale must be +inf or NaN"})
		}
		return gv
	}
	want := f64ToF16(sstar)
	if sStored != want {
		d := Difference{Dim: -1, Stored: int(sStored), Exact: int(want)}
		if sstar == 0 || !adjacentF16(sStored, want) {
			d.Margin = math.Inf(1)
			refuse(d)
		} else {
			mid := (f16Value(sStored) + f16Value(want)) / 2
			d.Margin = math.Abs(sstar-mid) / mid
			if d.Margin <= TieMargin {
				d.Rule = "scale-tie"
				d.Note = fmt.Sprintf("s*=%.9g near fp16 midpoint %.9g", sstar, mid)
				accept(d)
			} else {
				refuse(d)
			}
		}
	} else if sStored != sCanon {
		// RNE(s*) over the stored codes is right but differs from the canonical scale: the
		// consequence of accepted code ties (or of the canonical sums' float32 rounding).
		accept(Difference{Rule: "scale-of-stored-codes", Dim: -1, Stored: int(sStored), Exact: int(sCanon), Note: "RNE(s*) over the stored codes"})
	}
	switch {
	case want == 0x7c00:
		gv.Hazards = append(gv.Hazards, HazardScaleOverflow)
	case want == 0 && !allZero:
		gv.Hazards = append(gv.Hazards, HazardScaleUnderflow)
	case want > 0 && want < 0x0400:
		gv.Hazards = append(gv.Hazards, HazardScaleSubnormal)
	}
	return gv
}

func equalCodes(a, b []uint8) bool { return string(a) == string(b) }

// f16Value is the value of non-negative fp16 bits, with +inf counted as 65536 (the value the next
// binade would start at), so that 65520 is the midpoint between 65504 and +inf.
func f16Value(h uint16) float64 {
	if h == 0x7c00 {
		return 65536
	}
	return float64(F16ToF32(h))
}

// adjacentF16 reports whether two non-negative fp16 bit patterns are neighbours (bit patterns of
// non-negative finite fp16 values and +inf are ordered like their values).
func adjacentF16(a, b uint16) bool {
	if a&0x8000 != 0 || b&0x8000 != 0 || a > 0x7c00 || b > 0x7c00 {
		return false
	}
	return a == b+1 || b == a+1
}

// f64ToF16 rounds a non-negative float64 to fp16 bits, to nearest even, overflowing to +inf at
// 65520 and above.
func f64ToF16(x float64) uint16 {
	if math.IsNaN(x) {
		return 0x7e00
	}
	if x >= 65520 {
		return 0x7c00
	}
	h := F32ToF16(float32(x)) // within one step of the answer
	best, bd := h, math.Inf(1)
	for _, c := range []uint16{h - 1, h, h + 1} {
		if c > 0x7bff || (c == h-1 && h == 0) {
			continue
		}
		d := math.Abs(float64(F16ToF32(c)) - x)
		if d < bd || (d == bd && c&1 == 0) {
			best, bd = c, d
		}
	}
	return best
}
