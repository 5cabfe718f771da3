package cases

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"

	"github.com/octant-kv/octant/oracle"
)

// Property names of the slot properties (the reproducer's property field).
const (
	PropNameSlotRoundTrip  = "slot-roundtrip"
	PropNameSlotAcceptance = "slot-acceptance"
)

// prepareSlot reads and checks a slot case (SlotCase.Validate, then its inputs decoded) and
// returns the check that replays it.
func prepareSlot(check func(*SlotCase) error) func(json.RawMessage) (func() error, error) {
	return func(raw json.RawMessage) (func() error, error) {
		var c SlotCase
		if err := DecodeCase(raw, &c); err != nil {
			return nil, err
		}
		if err := c.Validate(); err != nil {
			return nil, err
		}
		if _, err := c.inputs(); err != nil {
			return nil, err
		}
		return func() error { return check(&c) }, nil
	}
}

func sameF32(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || (a != a && b != b)
}

// groupValues returns a group's rotated values.
func (g refGroup) of(k, v []float32) []float32 {
	if g.isV {
		return v[g.dim0 : g.dim0+g.n]
	}
	return k[g.dim0 : g.dim0+g.n]
}

func (g refGroup) codes(k, v []int) []int {
	if g.isV {
		return v[g.dim0 : g.dim0+g.n]
	}
	return k[g.dim0 : g.dim0+g.n]
}

// CheckSlotRoundTrip is PropSlotRoundTrip's check of one case.
func CheckSlotRoundTrip(c *SlotCase) error {
	in, err := c.inputs()
	if err != nil {
		return err
	}
	f := in.f
	q, err := oracle.NewQuantizer(f, in.ks, in.vs)
	if err != nil {
		return err
	}
	sl := q.Quantize(in.k, in.v)
	b := sl.Bytes
	if b2, err := oracle.QuantizeSlot(f, in.k, in.v, in.ks, in.vs); err != nil || !bytes.Equal(b, b2) {
		return fmt.Errorf("%v: QuantizeSlot and Quantizer.Quantize disagree (err %v):\n%x\n%x", f.ID, err, b2, b)
	}
	// Rotation, independently.
	kr, vr := refRotate(in.k, in.ks, f.KRotBlock()), refRotate(in.v, in.vs, f.VRotBlock())
	for i := range kr {
		if !sameF32(kr[i], sl.KRot[i]) || !sameF32(vr[i], sl.VRot[i]) {
			return fmt.Errorf("%v: rotated dim %d: oracle K %g V %g, docs/format.md §3 gives K %g V %g", f.ID, i, sl.KRot[i], sl.VRot[i], kr[i], vr[i])
		}
	}
	// Bytes, read bit by bit.
	kc, vc := refUnpack(f, b)
	groups := refGroups(f)
	if len(sl.Groups) != len(groups) {
		return fmt.Errorf("%v: the quantizer reports %d groups, docs/format.md §5 has %d", f.ID, len(sl.Groups), len(groups))
	}
	for _, o := range []int{f.SlotBytes() - f.PadBytes()} {
		for i := o; i < f.SlotBytes(); i++ {
			if b[i] != 0 {
				return fmt.Errorf("%v: pad byte %d is %#02x, the oracle must write 0", f.ID, i, b[i])
			}
		}
	}
	dk, dv := oracle.DequantizeSlot(f, b)
	for gi, g := range groups {
		gq := sl.Groups[gi]
		codes := g.codes(kc, vc)
		scale := refScale(b, g.scaleOff)
		for i, cd := range codes {
			if int(gq.Codes[i]) != cd {
				return fmt.Errorf("%v group %s dim %d: the quantizer chose code %d, the slot bytes hold %d (packing)", f.ID, g.name, i, gq.Codes[i], cd)
			}
		}
		if scale != gq.Scale16 || scale != oracle.F32ToF16(gq.Scale32) {
			return fmt.Errorf("%v group %s: scale bytes %#04x, the quantizer reports fp16 %#04x from float32 %g (RNE %#04x)", f.ID, g.name, scale, gq.Scale16, gq.Scale32, oracle.F32ToF16(gq.Scale32))
		}
		x := g.of(kr, vr)
		deq := g.of(dk, dv)
		for i, cd := range codes {
			want := refDequant(cd, g.bits, scale)
			if !sameF32(deq[i], want) {
				return fmt.Errorf("%v group %s dim %d: DequantizeSlot gives %g, LUT[%d]·%g/64 = %g", f.ID, g.name, i, deq[i], cd, oracle.F16ToF32(scale), want)
			}
		}
		if !finite(x) {
			for i, y := range deq {
				if y != 0 {
					return fmt.Errorf("%v group %s: non-finite input, yet dim %d decodes to %g (scale %#04x); docs/format.md §10 rule 4: the group must decode to zero", f.ID, g.name, i, y, scale)
				}
			}
			continue
		}
		if err := checkRequantize(f, g, codes, scale, deq); err != nil {
			return err
		}
	}
	v, err := oracle.AcceptSlot(f, in.k, in.v, b, in.ks, in.vs)
	if err != nil {
		return err
	}
	if v.Verdict != oracle.Identical || !v.ByteIdentical || v.PadNonZero {
		return fmt.Errorf("%v: AcceptSlot on the oracle's own slot: %s (byte identical %v, pad non-zero %v); expected identical", f.ID, v.Summary(), v.ByteIdentical, v.PadNonZero)
	}
	return nil
}

// checkRequantize re-quantizes a group's dequantized values (rotated space, so no rotation
// rounding): see PropSlotRoundTrip. Groups with scale 0 or +inf are skipped (their values carry no
// codes: all zero, or infinite).
func checkRequantize(f oracle.Format, g refGroup, codes []int, scale uint16, deq []float32) error {
	if scale&0x7fff == 0 || scale&0x7c00 == 0x7c00 {
		return nil
	}
	gq := oracle.QuantizeGroup(deq, g.bits, nil)
	j := newRefGroupJudge(deq, g.bits)
	same := true
	for i, cd := range gq.Codes {
		if !j.codeAccepted(i, int(cd)) {
			y, _ := j.y[i].Float64()
			return fmt.Errorf("%v group %s dim %d: re-quantizing the dequantized group gives code %d; its exact y = L[%d]·mult/rms(L[c]) = %.9g has code %d",
				f.ID, g.name, i, cd, codes[i], y, j.exactCode(i))
		}
		if int(cd) != codes[i] {
			same = false
		}
	}
	if same && gq.Scale16 != scale {
		return fmt.Errorf("%v group %s: re-quantizing the dequantized group reproduces every code but not the scale: %#04x (float32 %g), expected %#04x", f.ID, g.name, gq.Scale16, gq.Scale32, scale)
	}
	return nil
}

// flipTarget says which group a slot byte belongs to: a code (group index, dim within the group)
// or a scale (dim −1); group −1 for pad bytes.
func flipTarget(f oracle.Format, groups []refGroup, fl BitFlip) (group, dim int) {
	if fl.Byte >= f.OffScales()+2*f.NumScales() {
		return -1, 0
	}
	for gi, g := range groups {
		if fl.Byte >= g.scaleOff && fl.Byte < g.scaleOff+2 {
			return gi, -1
		}
	}
	for _, s := range refSections(f) {
		if fl.Byte >= s.off && fl.Byte < s.off+s.bytes() {
			d, _ := s.locate(fl.Byte-s.off, fl.Bit)
			d += s.dim0
			for gi, g := range groups {
				if g.isV == s.isV && d >= g.dim0 && d < g.dim0+g.n {
					return gi, d - g.dim0
				}
			}
		}
	}
	panic(fmt.Sprintf("fuzz: byte %d of a %v slot is in no section", fl.Byte, f.ID))
}

// CheckSlotAcceptance is PropSlotAcceptance's check of one case.
func CheckSlotAcceptance(c *SlotCase) error {
	in, err := c.inputs()
	if err != nil {
		return err
	}
	f := in.f
	acc, err := oracle.NewAcceptor(f, in.ks, in.vs)
	if err != nil {
		return err
	}
	b, err := oracle.QuantizeSlot(f, in.k, in.v, in.ks, in.vs)
	if err != nil {
		return err
	}
	base, err := acc.Accept(in.k, in.v, b)
	if err != nil {
		return err
	}
	if base.Verdict != oracle.Identical || !base.ByteIdentical {
		return fmt.Errorf("%v: the oracle's own slot is judged %s; expected identical", f.ID, base.Summary())
	}
	kr, vr := refRotate(in.k, in.ks, f.KRotBlock()), refRotate(in.v, in.vs, f.VRotBlock())
	groups := refGroups(f)
	judges := make([]*refGroupJudge, len(groups))
	for fi, fl := range c.Flips {
		if fl.Byte < 0 || fl.Byte >= f.SlotBytes() || fl.Bit < 0 || fl.Bit > 7 {
			return fmt.Errorf("flip %d: byte %d bit %d is outside a %d-byte slot", fi, fl.Byte, fl.Bit, f.SlotBytes())
		}
		m := append([]byte(nil), b...)
		m[fl.Byte] ^= 1 << fl.Bit
		got, err := acc.Accept(in.k, in.v, m)
		if err != nil {
			return err
		}
		what := fmt.Sprintf("%v: flipping bit %d of byte %d", f.ID, fl.Bit, fl.Byte)
		if got.ByteIdentical {
			return fmt.Errorf("%s: the acceptor says the slot is byte-identical", what)
		}
		gi, dim := flipTarget(f, groups, fl)
		if gi < 0 { // pad
			if !got.PadNonZero {
				return fmt.Errorf("%s (pad): PadNonZero not reported", what)
			}
			for k := range got.Groups {
				if got.Groups[k].Verdict != base.Groups[k].Verdict {
					return fmt.Errorf("%s (pad): group %s changed verdict to %s; pad bytes must be ignored", what, got.Groups[k].Group.Name, got.Groups[k].Verdict)
				}
			}
			continue
		}
		g := groups[gi]
		if got.Groups[gi].Group.Name != g.name {
			return fmt.Errorf("%v: the acceptor's group %d is %s, docs/format.md §5 says %s", f.ID, gi, got.Groups[gi].Group.Name, g.name)
		}
		region := fmt.Sprintf("group %s dim %d", g.name, dim)
		if dim < 0 {
			region = fmt.Sprintf("group %s scale", g.name)
		}
		x := g.of(kr, vr)
		kc, vc := refUnpack(f, m)
		codes := g.codes(kc, vc)
		stored := refScale(m, g.scaleOff)
		var want oracle.Verdict
		var why string
		switch {
		case !finite(x):
			want, why = oracle.Explained, "non-finite input: codes unspecified, scale ±0"
			if stored&0x7fff != 0 {
				want, why = oracle.Unexplained, fmt.Sprintf("non-finite input must decode to zero, scale is %#04x", stored)
			}
		case refSSOverflows(x):
			continue // docs/format.md §10 does not judge groups whose float32 Σx² overflows (hazard ss-overflow)
		default:
			if judges[gi] == nil {
				judges[gi] = newRefGroupJudge(x, g.bits)
			}
			j := judges[gi]
			want, why = oracle.Explained, "every difference is a rule-2/3 tie"
			for i, cd := range codes {
				if !j.codeAccepted(i, cd) {
					want, why = oracle.Unexplained, fmt.Sprintf("dim %d: code %d, exact %d, not a tie", i, cd, j.exactCode(i))
					break
				}
			}
			if want != oracle.Unexplained && !j.scaleAccepted(codes, stored) {
				want, why = oracle.Unexplained, fmt.Sprintf("scale %#04x is not RNE(s*) = %#04x over the stored codes, nor a tie", stored, refRNE16(j.sStar(codes)))
			}
		}
		if gv := got.Groups[gi].Verdict; gv != want {
			return fmt.Errorf("%s (%s): the acceptor says %s (%s); docs/format.md §10 read independently says %s (%s)", what, region, gv, got.Summary(), want, why)
		}
		wantSlot := want
		for k := range got.Groups {
			if k != gi {
				wantSlot = max(wantSlot, base.Groups[k].Verdict)
			}
		}
		if got.Verdict != wantSlot {
			return fmt.Errorf("%s (%s): slot verdict %s, expected %s (the worst group's)", what, region, got.Verdict, wantSlot)
		}
	}
	return nil
}
