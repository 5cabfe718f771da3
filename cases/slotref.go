package cases

// An independent reading of docs/format.md §1, §3, §5 and §10, written for the properties: it shares no
// code with the oracle's packing, rotation or acceptance, so a property that compares the two
// checks the oracle against the spec rather than against itself.

import (
	"math"
	"math/big"

	"github.com/octant-kv/octant/internal/specref"
	"github.com/octant-kv/octant/oracle"
)

// Codebooks of docs/format.md §1, copied from the spec's text.
var (
	refLUT3 = []float64{-127, -79, -45, -14, 14, 45, 79, 127}
	refLUT4 = []float64{-126, -95, -74, -58, -43, -30, -18, -6, 6, 18, 30, 43, 58, 74, 95, 126}
)

func refLUT(bits int) []float64 {
	if bits == 4 {
		return refLUT4
	}
	return refLUT3
}

func refMult(bits int) float64 {
	if bits == 4 {
		return 46
	}
	return 59
}

// refThresholds are the midpoints of adjacent codebook entries.
func refThresholds(bits int) []float64 {
	l := refLUT(bits)
	t := make([]float64, len(l)-1)
	for i := range t {
		t[i] = (l[i] + l[i+1]) / 2
	}
	return t
}

// refRotate is docs/format.md §3's rotate in float32 (specref.Rotate, which shares no code with
// the oracle's FWHT).
func refRotate(x []float32, s oracle.Signs, block int) []float32 { return specref.Rotate(x, s, block) }

// refGroup is one quantization group as docs/format.md §5 lays it out.
type refGroup struct {
	name     string
	isV      bool
	dim0, n  int // rotated dims [dim0, dim0+n) of K or V
	bits     int
	scaleOff int
}

// refGroups lists a kernel format's groups in scale order.
func refGroups(f oracle.Format) []refGroup {
	d := f.HeadSize
	var g []refGroup
	off := f.OffScales()
	if f.Compact() {
		g = append(g, refGroup{name: "K", dim0: 0, n: d, bits: 3, scaleOff: off})
	} else {
		for b := 0; b < d/64; b++ {
			bits := 3
			if 64*b < f.RopeDim {
				bits = 4
			}
			g = append(g, refGroup{name: "K" + string(rune('0'+b)), dim0: 64 * b, n: 64, bits: bits, scaleOff: off + 2*b})
		}
	}
	g = append(g, refGroup{name: "V", isV: true, dim0: 0, n: d, bits: f.VBits(), scaleOff: off + 2*len(g)})
	return g
}

// refSection is one packed code stream: bytes [off, off+len) holding codes of K or V dims
// [dim0, dim0+n) at the given width.
type refSection struct {
	off, n, dim0, bits int
	isV                bool
}

func (s refSection) bytes() int { return s.n * s.bits / 8 }

func refSections(f oracle.Format) []refSection {
	d := f.HeadSize
	var s []refSection
	if f.Compact() {
		s = append(s, refSection{off: 0, n: d, dim0: 0, bits: 3})
	} else {
		r := f.RopeDim
		s = append(s, refSection{off: 0, n: r, dim0: 0, bits: 4})
		s = append(s, refSection{off: r / 2, n: d - r, dim0: r, bits: 3})
	}
	last := s[len(s)-1]
	s = append(s, refSection{off: last.off + last.bytes(), n: d, dim0: 0, bits: f.VBits(), isV: true})
	return s
}

// locate maps bit `bit` of local byte j of a section to the code it belongs to: the dim within
// the section's stream and the weight of that bit in the code (docs/format.md §5).
func (s refSection) locate(j, bit int) (dim, weight int) {
	if s.bits == 4 {
		w, e := j/4, j%4
		dim = 8*w + e
		if bit >= 4 {
			dim += 4
		}
		return dim, 1 << (bit % 4)
	}
	if j < s.n/4 { // 2-bit plane: dim d in byte 4(d/16)+d%4 at bit 2((d%16)/4)
		return 16*(j/4) + 4*(bit/2) + j%4, 1 << (bit % 2)
	}
	j -= s.n / 4 // 1-bit plane: dim d in byte n/4+4(d/32)+d%4 at bit (d%32)/4
	return 32*(j/4) + 4*bit + j%4, 4
}

// refUnpack reads every code of a slot by walking its bits (K dims then V dims).
func refUnpack(f oracle.Format, slot []byte) (k, v []int) {
	k, v = make([]int, f.HeadSize), make([]int, f.HeadSize)
	for _, s := range refSections(f) {
		dst := k
		if s.isV {
			dst = v
		}
		for j := 0; j < s.bytes(); j++ {
			for bit := 0; bit < 8; bit++ {
				if slot[s.off+j]>>bit&1 == 1 {
					dim, w := s.locate(j, bit)
					dst[s.dim0+dim] += w
				}
			}
		}
	}
	return k, v
}

func refScale(slot []byte, off int) uint16 { return uint16(slot[off]) | uint16(slot[off+1])<<8 }

// refDequant is LUT[c]·(fp16 scale)/64 in float32 (docs/format.md §4, "Dequantization").
func refDequant(code, bits int, scale16 uint16) float32 {
	return float32(refLUT(bits)[code]) * (oracle.F16ToF32(scale16) / 64)
}

// Exact arithmetic for rule 2 and 3 judgements: float32 inputs summed in big.Float with enough
// precision to be exact for any float32 squares and codebook products.
// 640 bits hold any sum of 256 float32 squares or float32·int8 products exactly (the squares span
// 2^-298..2^256: 554 bits of exponent range, plus 48 bits of product, plus 8 of carries).
const refPrec = 640

func bf(x float64) *big.Float { return new(big.Float).SetPrec(refPrec).SetFloat64(x) }

func finite(x []float32) bool {
	for _, v := range x {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return false
		}
	}
	return true
}

// refSSOverflows reports whether the float32 Σx² (float32 squares, summed exactly, rounded once)
// overflows: docs/format.md §10's judgement does not apply to such groups (oracle hazard ss-overflow).
func refSSOverflows(x []float32) bool {
	s := bf(0)
	for _, v := range x {
		sq := float32(v * v)
		if math.IsInf(float64(sq), 0) {
			return true
		}
		s.Add(s, bf(float64(sq)))
	}
	lim := bf(math.MaxFloat32)
	lim.Add(lim, bf(math.Ldexp(1, 103))) // MaxFloat32 + half an ulp rounds to +inf
	return s.Cmp(lim) >= 0
}

// refGroupJudge holds a group's exact quantities: y_i = x_i/rms·mult and Σx².
type refGroupJudge struct {
	x     []float32
	bits  int
	ss    *big.Float
	y     []*big.Float
	exact []int // exact codes
}

func newRefGroupJudge(x []float32, bits int) *refGroupJudge {
	j := &refGroupJudge{x: x, bits: bits, ss: bf(0)}
	for _, v := range x {
		t := bf(float64(v))
		j.ss.Add(j.ss, t.Mul(t, t))
	}
	rms := new(big.Float).SetPrec(refPrec).Quo(j.ss, bf(float64(len(x))))
	rms.Sqrt(rms)
	if floor := bf(float64(float32(1e-12))); rms.Cmp(floor) < 0 {
		rms = floor
	}
	for _, v := range x {
		y := new(big.Float).SetPrec(refPrec).Quo(bf(float64(v)), rms)
		j.y = append(j.y, y.Mul(y, bf(refMult(bits))))
	}
	thr := refThresholds(bits)
	bthr := make([]*big.Float, len(thr))
	for i, t := range thr {
		bthr[i] = bf(t)
	}
	j.exact = make([]int, len(x))
	for i, y := range j.y {
		for _, t := range bthr {
			if t.Cmp(y) < 0 {
				j.exact[i]++
			}
		}
	}
	return j
}

// exactCode is the number of thresholds strictly below y_i.
func (j *refGroupJudge) exactCode(i int) int { return j.exact[i] }

// codeAccepted is rule 2: the exact code, or the adjacent code with y_i within relative δ of the
// threshold between them (threshold 0: only when x_i ≠ 0 and |y_i| < 2^-126).
func (j *refGroupJudge) codeAccepted(i, c int) bool {
	e := j.exactCode(i)
	if c == e {
		return true
	}
	if c-e != 1 && e-c != 1 {
		return false
	}
	t := refThresholds(j.bits)[min(c, e)]
	y, _ := j.y[i].Float64()
	if t == 0 {
		return j.x[i] != 0 && math.Abs(y) < math.Ldexp(1, -126)
	}
	d := new(big.Float).SetPrec(refPrec).Sub(j.y[i], bf(t))
	m, _ := d.Abs(d).Float64()
	return m/math.Abs(t) <= oracle.TieMargin
}

// sStar is rule 3's s* = 64·Σx²/Σx·L[c] over the given codes (0 when the denominator is ≤ 0).
func (j *refGroupJudge) sStar(codes []int) *big.Float {
	den := bf(0)
	l := refLUT(j.bits)
	for i, v := range j.x {
		t := bf(float64(v))
		den.Add(den, t.Mul(t, bf(l[codes[i]])))
	}
	if den.Sign() <= 0 {
		return bf(0)
	}
	s := new(big.Float).SetPrec(refPrec).Quo(j.ss, den)
	return s.Mul(s, bf(64))
}

// f16Val is the value of non-negative fp16 bits, +inf counted as 65536 (docs/format.md §10: the
// overflow tie is at 65520).
func f16Val(h uint16) float64 {
	if h == 0x7c00 {
		return 65536
	}
	return float64(oracle.F16ToF32(h))
}

// refRNE16 rounds a non-negative exact value to fp16 bits, to nearest even, overflowing at 65520.
func refRNE16(s *big.Float) uint16 {
	if s.Cmp(bf(65520)) >= 0 {
		return 0x7c00
	}
	f, _ := s.Float64()
	h := oracle.F32ToF16(float32(f))
	best, bestD := uint16(0), (*big.Float)(nil)
	for _, c := range []int{int(h) - 1, int(h), int(h) + 1} {
		if c < 0 || c > 0x7bff {
			continue
		}
		d := new(big.Float).SetPrec(refPrec).Sub(s, bf(f16Val(uint16(c))))
		d.Abs(d)
		if bestD == nil || d.Cmp(bestD) < 0 || (d.Cmp(bestD) == 0 && c&1 == 0) {
			best, bestD = uint16(c), d
		}
	}
	return best
}

// scaleAccepted is rule 3 for a stored scale over stored codes.
func (j *refGroupJudge) scaleAccepted(codes []int, stored uint16) bool {
	s := j.sStar(codes)
	if s.Sign() == 0 {
		return stored == 0
	}
	want := refRNE16(s)
	if stored == want {
		return true
	}
	if stored > 0x7c00 || (stored != want+1 && stored+1 != want) {
		return false
	}
	mid := (f16Val(stored) + f16Val(want)) / 2
	d := new(big.Float).SetPrec(refPrec).Sub(s, bf(mid))
	m, _ := d.Abs(d).Float64()
	return m/mid <= oracle.TieMargin
}
