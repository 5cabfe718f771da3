package oracle

import (
	"encoding/binary"
	"fmt"
)

// Quantizer writes slots of one format. It holds scratch space, so one Quantizer must not be used
// by two goroutines at once; the zero value is not usable, use NewQuantizer.
type Quantizer struct {
	F            Format
	KSigns       Signs
	VSigns       Signs
	kRot, vRot   []float32
	codes, vcode []uint8
	kMask, vMask []uint32 // sign bit to XOR into each dim (0 or 0x80000000)
}

// NewQuantizer returns a Quantizer for f with the given K and V sign patterns (each at least
// head_size long).
func NewQuantizer(f Format, ks, vs Signs) (*Quantizer, error) {
	if len(ks) < f.HeadSize || len(vs) < f.HeadSize {
		return nil, fmt.Errorf("oracle: sign patterns of %d and %d dims, need %d", len(ks), len(vs), f.HeadSize)
	}
	d := f.HeadSize
	return &Quantizer{F: f, KSigns: ks, VSigns: vs, kRot: make([]float32, d), vRot: make([]float32, d),
		codes: make([]uint8, d), vcode: make([]uint8, d), kMask: signMasks(ks[:d]), vMask: signMasks(vs[:d])}, nil
}

// Slot is the quantization of one (token, head): rotated inputs, per-group results and bytes.
type Slot struct {
	KRot, VRot []float32    // rotated inputs
	Groups     []GroupQuant // in Format.Groups order
	Bytes      []byte
}

// signMasks turns a sign pattern into float32 sign-bit masks, so that flipping signs is a
// branch-free XOR (exactly negation, NaN included).
func signMasks(s Signs) []uint32 {
	m := make([]uint32, len(s))
	for i, neg := range s {
		if neg {
			m[i] = 1 << 31
		}
	}
	return m
}

// rotateInto writes H_B(D·x) into dst; mask holds D as sign-bit masks. For blocks of 16 or more
// the sign flip is applied as FWHT32's first pass (strides 1, 2, 4) reads x.
func rotateInto(dst, x []float32, mask []uint32, block int) {
	mask = mask[:len(x)]
	dst = dst[:len(x)]
	if block < 16 {
		for i, v := range x {
			dst[i] = applySign(v, mask[i])
		}
		FWHT32(dst, block)
		return
	}
	checkBlock(len(x), block)
	fwhtPass8Signed(dst, x, mask)
	fwhtStages(dst, block, 8)
}

// QuantizeInto rotates, quantizes and packs K and V (original space, head_size float32 values
// each, exactly representable in the input dtype) into dst (at least SlotBytes long). Pad bytes
// are written as zero, as the reference does.
func (q *Quantizer) QuantizeInto(dst []byte, k, v []float32) {
	f := q.F
	d := f.HeadSize
	if len(k) != d || len(v) != d || len(dst) < f.SlotBytes() {
		panic(fmt.Sprintf("oracle: QuantizeInto: k %d, v %d values and %d bytes; expected %d, %d and ≥%d", len(k), len(v), len(dst), d, d, f.SlotBytes()))
	}
	dst = dst[:f.SlotBytes()]
	clear(dst[f.OffScales():])
	rotateInto(q.kRot, k, q.kMask, f.KRotBlock())
	rotateInto(q.vRot, v, q.vMask, f.VRotBlock())
	// K groups.
	if f.Compact() {
		g := QuantizeGroup(q.kRot, NopeBits, q.codes)
		Pack3(dst[:f.OffV()], g.Codes)
		putU16(dst[f.OffScales():], g.Scale16)
	} else {
		for b := 0; b < f.NumKBlocks(); b++ {
			bits := NopeBits
			if 64*b < f.RopeDim {
				bits = RopeBits
			}
			g := QuantizeGroup(q.kRot[64*b:64*b+64], bits, q.codes[64*b:64*b+64])
			putU16(dst[f.OffScales()+2*b:], g.Scale16)
		}
		Pack4(dst[:f.OffKNope()], q.codes[:f.RopeDim])
		Pack3(dst[f.OffKNope():f.OffV()], q.codes[f.RopeDim:])
	}
	g := QuantizeGroup(q.vRot, f.VBits(), q.vcode)
	PackCodes(dst[f.OffV():f.OffScales()], g.Codes, f.VBits())
	putU16(dst[f.OffScales()+2*f.NumKScales():], g.Scale16)
}

// Quantize is QuantizeInto returning the full Slot (allocates; for tests and reports).
func (q *Quantizer) Quantize(k, v []float32) Slot {
	f := q.F
	s := Slot{Bytes: make([]byte, f.SlotBytes())}
	q.QuantizeInto(s.Bytes, k, v)
	s.KRot = append([]float32(nil), q.kRot...)
	s.VRot = append([]float32(nil), q.vRot...)
	for _, g := range f.Groups() {
		x := s.KRot
		if g.IsV {
			x = s.VRot
		}
		s.Groups = append(s.Groups, QuantizeGroup(x[g.Dim0:g.Dim0+g.N], g.Bits, nil))
	}
	return s
}

// QuantizeSlot is a one-shot helper: the slot bytes for one (token, head).
func QuantizeSlot(f Format, k, v []float32, ks, vs Signs) ([]byte, error) {
	q, err := NewQuantizer(f, ks, vs)
	if err != nil {
		return nil, err
	}
	if len(k) != f.HeadSize || len(v) != f.HeadSize {
		return nil, fmt.Errorf("oracle: QuantizeSlot: got %d K and %d V values, expected %d each", len(k), len(v), f.HeadSize)
	}
	out := make([]byte, f.SlotBytes())
	q.QuantizeInto(out, k, v)
	return out, nil
}

func putU16(b []byte, v uint16) { b[0], b[1] = byte(v), byte(v>>8) }
func getU16(b []byte) uint16    { return uint16(b[0]) | uint16(b[1])<<8 }

// SlotCodes unpacks the K and V codes of a slot (K in dim order 0..d−1, V likewise).
func SlotCodes(f Format, slot []byte) (k, v []uint8) {
	k = make([]uint8, f.HeadSize)
	v = make([]uint8, f.HeadSize)
	slotCodesInto(f, slot, k, v)
	return
}

func slotCodesInto(f Format, slot []byte, k, v []uint8) {
	if f.Compact() {
		Unpack3(k, slot[:f.OffV()])
	} else {
		Unpack4(k[:f.RopeDim], slot[:f.OffKNope()])
		Unpack3(k[f.RopeDim:], slot[f.OffKNope():f.OffV()])
	}
	UnpackCodes(v, slot[f.OffV():f.OffScales()], f.VBits())
}

// SlotScales returns the fp16 scale bits of a slot: K scales (NumKScales) then V.
func SlotScales(f Format, slot []byte) []uint16 {
	s := make([]uint16, f.NumScales())
	for i := range s {
		s[i] = getU16(slot[f.OffScales()+2*i:])
	}
	return s
}

// Dequantizer decodes slots of one format into the rotated space without allocating.
type Dequantizer struct {
	F      Format
	kc, vc []uint8
}

// NewDequantizer returns a Dequantizer for f.
func NewDequantizer(f Format) *Dequantizer {
	return &Dequantizer{F: f, kc: make([]uint8, f.HeadSize), vc: make([]uint8, f.HeadSize)}
}

// DequantizeInto writes the rotated-space K and V of a slot (float32, exact) into k and v.
func (dq *Dequantizer) DequantizeInto(k, v []float32, slot []byte) {
	f := dq.F
	sc := f.OffScales()
	if f.Compact() {
		dequant3(k, slot[:f.OffV()], scaleMul(slot[sc:]))
	} else {
		r := f.RopeDim
		for b := 0; b < r/64; b++ {
			dequant4(k[64*b:64*b+64], slot[32*b:32*b+32], scaleMul(slot[sc+2*b:]))
		}
		// The nope section is one 3-bit stream over dims r..d−1, but 64-dim blocks have their own
		// scales: decode with scale 1 (exact LUT values) and scale each block after.
		nope := k[r:]
		dequant3(nope, slot[f.OffKNope():f.OffV()], 1)
		for b := r / 64; b < f.NumKBlocks(); b++ {
			m := scaleMul(slot[sc+2*b:])
			blk := k[64*b : 64*b+64]
			for i := range blk {
				blk[i] *= m
			}
		}
	}
	m := scaleMul(slot[sc+2*f.NumKScales():])
	if f.VBits() == 4 {
		dequant4(v, slot[f.OffV():f.OffScales()], m)
	} else {
		dequant3(v, slot[f.OffV():f.OffScales()], m)
	}
}

// scaleMul is float32(fp16 scale)/64, exact.
func scaleMul(b []byte) float32 { return F16ToF32(getU16(b)) / LUTOne }

// dequant4 decodes a 4-bit stream (docs/format.md §5) straight from bytes: LUT4[c]·m.
func dequant4(out []float32, src []byte, m float32) {
	var lut [16]float32
	for i, c := range LUT4 {
		lut[i] = float32(c) * m // exact: 7 × 11 significant bits
	}
	for w := 0; w+7 < len(out); w += 8 {
		s := src[w/2 : w/2+4 : w/2+4]
		o := out[w : w+8 : w+8]
		for j := 0; j < 4; j++ {
			o[j] = lut[s[j]&15]
			o[j+4] = lut[s[j]>>4]
		}
	}
}

// dequant3 decodes a 3-bit stream (2-bit plane then 1-bit plane) straight from bytes, four dims
// at a time as docs/format.md §5's word form gives them: in the lo word of dims 16h..16h+15,
// (w >> 2i) & 0x03030303 holds dims 16h+4i..+3; in the hi word of 32 dims, (w >> i) & 0x01010101
// holds the top bits of dims 4i..4i+3.
func dequant3(out []float32, src []byte, m float32) {
	n := len(out)
	lo, hi := src[:n/4], src[n/4:3*n/8]
	var lut [8]float32
	for i, c := range LUT3 {
		lut[i] = float32(c) * m
	}
	for g := 0; g < n/32; g++ {
		hw := binary.LittleEndian.Uint32(hi[4*g:])
		for h := 0; h < 2; h++ {
			lw := binary.LittleEndian.Uint32(lo[8*g+4*h:])
			for i := 0; i < 4; i++ {
				c := (lw>>(2*i))&0x03030303 | ((hw>>(4*h+i))&0x01010101)<<2
				o := out[32*g+16*h+4*i : 32*g+16*h+4*i+4 : 32*g+16*h+4*i+4]
				o[0] = lut[c&7]
				o[1] = lut[c>>8&7]
				o[2] = lut[c>>16&7]
				o[3] = lut[c>>24&7]
			}
		}
	}
}

// DequantizeSlot returns the rotated-space K and V of a slot.
func DequantizeSlot(f Format, slot []byte) (k, v []float32) {
	k = make([]float32, f.HeadSize)
	v = make([]float32, f.HeadSize)
	NewDequantizer(f).DequantizeInto(k, v, slot)
	return
}

// DequantizeSlotOriginal returns K and V un-rotated to the original space in float32, as the
// reference's reference_dequantize(rotated=False) does.
func DequantizeSlotOriginal(f Format, slot []byte, ks, vs Signs) (k, v []float32) {
	kr, vr := DequantizeSlot(f, slot)
	return Unrotate(kr, ks, f.KRotBlock()), Unrotate(vr, vs, f.VRotBlock())
}
