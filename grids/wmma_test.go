package grids

// The WMMA model on its own (csrc/include/octave_wmma.h; docs/kernels.md, "The WMMA tier and its
// model"), through the test entry point octave_wmma_selftest (csrc/include/octave_selftest.h: not
// part of the C ABI). The library runs one WMMA per problem on raw per-lane registers; this file,
// not the library, holds the register layout AMD documents, packs known matrices into the lanes'
// registers with it, unpacks the results with it and compares them with a plain matrix product. A
// model (or hardware, or a mutant) whose layout differs fails here instead of agreeing with itself.
//
// On the emulator and CUDA builds (the model) every result must equal the model's documented
// arithmetic bit for bit. On gfx1100 (the instructions) results must lie within what the
// wmma-f16q bound assumes of the hardware (at most 16 correctly rounded fp32 additions per call:
// docs/kernels.md), and the test logs where they differ from the model; the replication cases,
// whose hardware result is undocumented, are skipped there. gfx942 has no WMMA: the entry point
// must refuse it.
//
//	OCTANT_LIB=$PWD/build/liboctave_emu.so go test ./grids/ -run TestWMMAModel -v

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
	"unsafe"

	"github.com/octant-kv/octant/arch"
	"github.com/octant-kv/octant/harness/harnesstest"
	"github.com/octant-kv/octant/kernels"
	"github.com/octant-kv/octant/oracle"
)

// cWMMASelftestArgs mirrors octave_wmma_selftest_args (56 bytes; capi_selftest.cpp asserts it).
type cWMMASelftestArgs struct {
	StructSize     uint64
	A, B, C, D     uintptr
	Form, Flags, N int32
	Reserved0      int32
}

// The forms and flags of octave_selftest.h.
const (
	wmmaF32F16  = 0
	wmmaF16F16  = 1
	wmmaI32IU8  = 2
	wmmaF32BF16 = 3

	wmmaOpsel   = 1
	wmmaSignedA = 2
	wmmaSignedB = 4
	wmmaClamp   = 8
)

// wmmaProblem is one WMMA: A (M×K), B (K×N), C (M×N) as raw element bits — f16 bits for the f16
// forms, bf16 bits for the bf16 form, bytes for iu8; C as f32 bits, f16 bits or int32 — plus the bits of the half of each C/D
// register the f16 form does not select (Other, which must come back unchanged).
type wmmaProblem struct {
	name    string
	A, B    [16][16]uint32
	C       [16][16]uint32
	Other   [16][16]uint32
	breakAB int // 1: lanes 16–31 of A differ from lanes 0–15; 2: of B (the replication broken)
}

// ---- the documented layout (RDNA3 wave32; docs/kernels.md cites the sources) ----------------------

// packInputs: lane l supplies row l mod 16 of A and column l mod 16 of B, element k in half k & 1
// of register k >> 1 (f16, bf16) or byte k & 3 of register k >> 2 (iu8); lanes 16–31 repeat lanes
// 0–15.
func packInputs(p *wmmaProblem, form int) (a, b [32][8]uint32) {
	for l := 0; l < 32; l++ {
		r := l % 16
		for k := 0; k < 16; k++ {
			av, bv := p.A[r][k], p.B[k][r]
			if l >= 16 && p.breakAB == 1 {
				av ^= 0x1
			}
			if l >= 16 && p.breakAB == 2 {
				bv ^= 0x1
			}
			if form == wmmaI32IU8 {
				a[l][k>>2] |= (av & 0xFF) << (8 * (k & 3))
				b[l][k>>2] |= (bv & 0xFF) << (8 * (k & 3))
			} else {
				a[l][k>>1] |= (av & 0xFFFF) << (16 * (k & 1))
				b[l][k>>1] |= (bv & 0xFFFF) << (16 * (k & 1))
			}
		}
	}
	return a, b
}

// The C/D element of register v of lane l: row 2v + l/16, column l mod 16.
func cdRow(v, l int) int { return 2*v + l/16 }

// packC: 32-bit C elements whole in their registers; 16-bit ones in half OPSEL, Other in the other.
func packC(p *wmmaProblem, form int, opsel bool) (c [32][8]uint32) {
	for l := 0; l < 32; l++ {
		for v := 0; v < 8; v++ {
			m, n := cdRow(v, l), l%16
			if form != wmmaF16F16 {
				c[l][v] = p.C[m][n]
			} else if opsel {
				c[l][v] = p.C[m][n]<<16 | p.Other[m][n]&0xFFFF
			} else {
				c[l][v] = p.Other[m][n]<<16 | p.C[m][n]&0xFFFF
			}
		}
	}
	return c
}

// unpackD returns D[m][n] (the selected half for 16-bit results) and the other halves.
func unpackD(d [32][8]uint32, form int, opsel bool) (out, other [16][16]uint32) {
	for l := 0; l < 32; l++ {
		for v := 0; v < 8; v++ {
			m, n := cdRow(v, l), l%16
			x := d[l][v]
			switch {
			case form != wmmaF16F16:
				out[m][n] = x
			case opsel:
				out[m][n], other[m][n] = x>>16, x&0xFFFF
			default:
				out[m][n], other[m][n] = x&0xFFFF, x>>16
			}
		}
	}
	return out, other
}

// ---- the plain matrix product and the model's documented arithmetic --------------------------------

func f16(h uint32) float64 {
	h &= 0xFFFF
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	e, m := int(h>>10)&0x1F, float64(h&0x3FF)
	switch e {
	case 0:
		return sign * math.Ldexp(m, -24)
	case 31:
		if m != 0 {
			return math.NaN()
		}
		return sign * math.Inf(1)
	}
	return sign * math.Ldexp(1024+m, e-25)
}

// toF16 rounds a float64 to f16 bits: nearest even, overflow to ±inf, gradual underflow.
func toF16(x float64) uint32 {
	var sign uint32
	if math.Signbit(x) {
		sign, x = 0x8000, -x
	}
	switch {
	case math.IsNaN(x):
		return 0x7E00
	case x >= 65520:
		return sign | 0x7C00
	case x < 0x1p-14: // subnormal spacing 2^-24
		return sign | uint32(math.RoundToEven(x*0x1p24))
	}
	fr, e := math.Frexp(x) // x = fr·2^e, fr in [0.5, 1)
	q := math.RoundToEven(fr * 2048)
	if q == 2048 {
		q, e = 1024, e+1
	}
	return sign | uint32(e+14)<<10 | (uint32(q) - 1024)
}

// bf16 is the value of bf16 bits (the upper half of a float32).
func bf16(h uint32) float64 { return float64(math.Float32frombits((h & 0xFFFF) << 16)) }

// dotF16 is Σ_k A[m][k]·B[k][n] in float64, k in order (the model's order) and Σ|A·B|: the
// elements are f16, or bf16 for the bf16 form (the products are exact either way).
func dotF16(p *wmmaProblem, form, m, n int) (s, abs float64) {
	val := f16
	if form == wmmaF32BF16 {
		val = bf16
	}
	for k := 0; k < 16; k++ {
		x := val(p.A[m][k]) * val(p.B[k][n])
		s += x
		abs += math.Abs(x)
	}
	return s, abs
}

func iu8(b uint32, signed bool) int64 {
	if signed {
		return int64(int8(b))
	}
	return int64(b & 0xFF)
}

// want is the model's D[m][n] (docs/kernels.md): float64 sum of exact products in k order, plus C,
// rounded once; iu8 exact in 64 bits, clamped or wrapped; replication broken: poisoned.
func want(p *wmmaProblem, form, flags, m, n int) uint32 {
	if p.breakAB != 0 {
		return map[int]uint32{wmmaF32F16: 0x7FC00000, wmmaF16F16: 0x7E00, wmmaI32IU8: 0x80000000, wmmaF32BF16: 0x7FC00000}[form]
	}
	switch form {
	case wmmaF32F16, wmmaF32BF16:
		s, _ := dotF16(p, form, m, n)
		return math.Float32bits(float32(s + float64(math.Float32frombits(p.C[m][n]))))
	case wmmaF16F16:
		s, _ := dotF16(p, form, m, n)
		return toF16(s + f16(p.C[m][n]))
	}
	s := int64(int32(p.C[m][n]))
	for k := 0; k < 16; k++ {
		s += iu8(p.A[m][k], flags&wmmaSignedA != 0) * iu8(p.B[k][n], flags&wmmaSignedB != 0)
	}
	if flags&wmmaClamp != 0 {
		s = max(math.MinInt32, min(math.MaxInt32, s))
	}
	return uint32(s)
}

// sameBits compares results; two NaNs of the float forms are the same (payloads are not promised).
func sameBits(form int, got, exp uint32) bool {
	switch form {
	case wmmaF32F16, wmmaF32BF16:
		return got == exp || math.IsNaN(float64(math.Float32frombits(got))) && math.IsNaN(float64(math.Float32frombits(exp)))
	case wmmaF16F16:
		return got == exp || math.IsNaN(f16(got)) && math.IsNaN(f16(exp))
	}
	return got == exp
}

// matrixSumTol is how far a matrix instruction's fp32 result may be from the exact sum of its
// terms under what the profiles' bounds assume of the hardware (the WMMA, mma.sync and wgmma
// tiers alike): at most 16 correctly rounded fp32 additions, γ_16 = 16u/(1−16u) of the terms'
// absolute sum abs (u = 2^-24), with a relative slack of 1e-12 for the float64 arithmetic that
// evaluates it.
func matrixSumTol(abs float64) float64 {
	const u = 0x1p-24
	return 16 * u / (1 - 16*u) * abs * (1 + 1e-12)
}

// withinHardware: the gfx1100 instruction's result may differ from the model's by what the
// wmma-f16q bound assumes of it: at most 16 correctly rounded fp32 additions of the 17 terms
// (γ_16 of their absolute sum), plus, for the f16 result, its rounding to f16. Specials must match.
func withinHardware(p *wmmaProblem, form, m, n int, got uint32) bool {
	s, abs := dotF16(p, form, m, n)
	var g, c float64
	if form != wmmaF16F16 {
		g, c = float64(math.Float32frombits(got)), float64(math.Float32frombits(p.C[m][n]))
	} else {
		g, c = f16(got), f16(p.C[m][n])
	}
	exact, abs := s+c, abs+math.Abs(c)
	if math.IsNaN(exact) || math.IsInf(exact, 0) || math.IsNaN(g) || math.IsInf(g, 0) {
		return math.IsNaN(exact) && math.IsNaN(g) || exact == g
	}
	tol := matrixSumTol(abs)
	if form == wmmaF16F16 {
		tol = (tol + 0x1p-11*(math.Abs(exact)+tol) + 0x1p-25) * (1 + 1e-12)
	}
	return math.Abs(g-exact) <= tol
}

// ---- the binding -------------------------------------------------------------------------------

type wmmaRunner struct {
	l   *kernels.Lib
	d   *kernels.Device
	fn  func(uintptr, *cWMMASelftestArgs) int32
	hw  bool // gfx1100: the instructions, not the model
	bad bool // a device without WMMA (gfx942): the entry point must refuse
}

func newWMMARunner(t *testing.T) *wmmaRunner {
	l, d := openSelftest(t)
	r := &wmmaRunner{l: l, d: d, hw: d.Info.Arch == "gfx1100"}
	if err := l.BindSelftest("octave_wmma_selftest", &r.fn); err != nil {
		t.Fatal(err)
	}
	r.bad = d.Info.Runtime == "HIP" && !r.hw
	t.Logf("%s on %s (%s): %s", l.Path, d.Info.Name, d.Info.Arch, map[bool]string{true: "the v_wmma instructions", false: "the WMMA model"}[r.hw])
	return r
}

// run runs the problems (one wave each) and returns every lane's D registers.
func (r *wmmaRunner) run(form, flags int, probs []*wmmaProblem) ([][32][8]uint32, error) {
	n := len(probs)
	opsel := flags&wmmaOpsel != 0
	regs := make([][3][32][8]uint32, n)
	for i, p := range probs {
		regs[i][0], regs[i][1] = packInputs(p, form)
		regs[i][2] = packC(p, form, opsel)
	}
	const per = 32 * 8 * 4
	var bufs [4]*kernels.Buffer
	for j := range bufs {
		b, err := r.d.Alloc(n*per, 0xFF)
		if err != nil {
			return nil, err
		}
		defer b.Free()
		bufs[j] = b
	}
	for j := 0; j < 3; j++ {
		raw := make([]byte, 0, n*per)
		for i := range regs {
			raw = append(raw, unsafe.Slice((*byte)(unsafe.Pointer(&regs[i][j][0][0])), per)...)
		}
		if err := bufs[j].Write(0, raw); err != nil {
			return nil, err
		}
	}
	args := cWMMASelftestArgs{StructSize: uint64(unsafe.Sizeof(cWMMASelftestArgs{})), A: bufs[0].Ptr, B: bufs[1].Ptr,
		C: bufs[2].Ptr, D: bufs[3].Ptr, Form: int32(form), Flags: int32(flags), N: int32(n)}
	if err := r.l.CallSelftest("octave_wmma_selftest", func() int32 { return r.fn(r.d.Context(), &args) }); err != nil {
		return nil, err
	}
	for j, b := range bufs {
		if err := b.CheckCanaries(fmt.Sprintf("buffer %d", j)); err != nil {
			return nil, err
		}
	}
	raw := make([]byte, n*per)
	if err := bufs[3].Read(0, raw); err != nil {
		return nil, err
	}
	out := make([][32][8]uint32, n)
	for i := range out {
		copy(unsafe.Slice((*byte)(unsafe.Pointer(&out[i][0][0])), per), raw[i*per:])
	}
	runtime.KeepAlive(raw)
	return out, nil
}

// check runs probs and compares every element with the plain matrix product (and, for the f16
// form, every unselected half with C's).
func (r *wmmaRunner) check(t *testing.T, form, flags int, probs []*wmmaProblem) {
	t.Helper()
	ds, err := r.run(form, flags, probs)
	if err != nil {
		t.Fatal(err)
	}
	opsel := flags&wmmaOpsel != 0
	for i, p := range probs {
		if p.breakAB != 0 && r.hw {
			continue // undocumented on the hardware
		}
		got, other := unpackD(ds[i], form, opsel)
		bad, differ := 0, 0
		for m := 0; m < 16; m++ {
			for n := 0; n < 16; n++ {
				exp := want(p, form, flags, m, n)
				ok := sameBits(form, got[m][n], exp)
				if !ok && r.hw && form != wmmaI32IU8 && withinHardware(p, form, m, n, got[m][n]) {
					ok = true
					differ++
				}
				if form == wmmaF16F16 && other[m][n] != p.Other[m][n]&0xFFFF {
					t.Errorf("%s: D[%d][%d]: the half op_sel does not select is %#04x, expected C's %#04x (passed through)", p.name, m, n, other[m][n], p.Other[m][n]&0xFFFF)
				}
				if !ok {
					if bad < 4 {
						t.Errorf("%s: D[%d][%d] = %#08x, expected %#08x (form %d, flags %#x; register %d of lanes %d and %d hold it)",
							p.name, m, n, got[m][n], exp, form, flags, m/2, n+16*(m%2), n+16*(m%2))
					}
					bad++
				}
			}
		}
		if bad > 4 {
			t.Errorf("%s: %d of 256 elements wrong", p.name, bad)
		}
		if differ > 0 {
			t.Logf("%s: %d of 256 elements differ from the model's arithmetic, within the bound's assumption", p.name, differ)
		}
	}
}

// ---- the matrices ---------------------------------------------------------------------------------

func randF16(rng *rand.Rand, lo, hi int) uint32 { // sign, exponent in [lo, hi] (biased), any mantissa
	return uint32(rng.IntN(2))<<15 | uint32(lo+rng.IntN(hi-lo+1))<<10 | uint32(rng.IntN(1024))
}

func f16Problems(rng *rand.Rand, form int) []*wmmaProblem {
	var ps []*wmmaProblem
	add := func(name string, fill func(p *wmmaProblem)) {
		p := &wmmaProblem{name: name}
		for m := 0; m < 16; m++ {
			for n := 0; n < 16; n++ {
				p.Other[m][n] = uint32(rng.IntN(1 << 16))
			}
		}
		fill(p)
		ps = append(ps, p)
	}
	randC := func(p *wmmaProblem, lo, hi int) {
		for m := 0; m < 16; m++ {
			for n := 0; n < 16; n++ {
				if form == wmmaF32F16 {
					p.C[m][n] = math.Float32bits(float32(rng.NormFloat64() * math.Ldexp(1, rng.IntN(hi-lo+1)+lo-15)))
				} else {
					p.C[m][n] = randF16(rng, lo, hi)
				}
			}
		}
	}
	randAB := func(p *wmmaProblem, lo, hi int) {
		for i := 0; i < 16; i++ {
			for j := 0; j < 16; j++ {
				p.A[i][j], p.B[i][j] = randF16(rng, lo, hi), randF16(rng, lo, hi)
			}
		}
	}
	for i := 0; i < 8; i++ { // random values of moderate range, some subnormal
		add(fmt.Sprintf("random%d", i), func(p *wmmaProblem) { randAB(p, 5, 17); randC(p, 8, 18) })
	}
	add("random-subnormal", func(p *wmmaProblem) { randAB(p, 0, 3); randC(p, 0, 2) })
	add("identity", func(p *wmmaProblem) { // A = I: D = B + C
		randAB(p, 8, 18)
		randC(p, 10, 16)
		for m := 0; m < 16; m++ {
			for k := 0; k < 16; k++ {
				p.A[m][k] = 0
			}
			p.A[m][m] = 0x3C00
		}
	})
	add("onehot-rows", func(p *wmmaProblem) { // A[m][π(m)] = 1: D[m][n] = B[π(m)][n] + C
		randAB(p, 8, 18)
		perm := rng.Perm(16)
		for m := 0; m < 16; m++ {
			for k := 0; k < 16; k++ {
				p.A[m][k] = 0
			}
			p.A[m][perm[m]] = 0x3C00
		}
	})
	add("onehot-cols", func(p *wmmaProblem) { // B[σ(n)][n] = -2: D[m][n] = -2·A[m][σ(n)] + C
		randAB(p, 8, 18)
		randC(p, 10, 16)
		perm := rng.Perm(16)
		for n := 0; n < 16; n++ {
			for k := 0; k < 16; k++ {
				p.B[k][n] = 0
			}
			p.B[perm[n]][n] = 0xC000
		}
	})
	add("single", func(p *wmmaProblem) { // one product per element, distinct everywhere: a position map
		for m := 0; m < 16; m++ {
			p.A[m][(m+5)%16] = toF16(float64(m + 1))
		}
		for n := 0; n < 16; n++ {
			for k := 0; k < 16; k++ {
				p.B[k][n] = toF16(float64(17*k + n + 1))
			}
		}
	})
	add("max", func(p *wmmaProblem) { // ±65504: exact products of 2^32 size, f16 results overflow
		for i := 0; i < 16; i++ {
			for j := 0; j < 16; j++ {
				p.A[i][j], p.B[i][j] = 0x7BFF|uint32(rng.IntN(2))<<15, 0x7BFF|uint32(rng.IntN(2))<<15
			}
		}
		if form == wmmaF32F16 {
			p.C[0][0], p.C[1][1] = math.Float32bits(math.MaxFloat32), math.Float32bits(-math.MaxFloat32)
		} else {
			p.C[0][0] = 0x7BFF
		}
	})
	add("specials", func(p *wmmaProblem) { // NaN, inf·0, C = ±inf
		randAB(p, 10, 16)
		p.A[3][7] = 0x7E00                    // NaN: row 3 NaN
		p.A[5][2], p.B[2][9] = 0x7C00, 0x0000 // inf·0: D[5][9] NaN, the rest of row 5 ±inf
		if form == wmmaF32F16 {
			p.C[8][8] = math.Float32bits(float32(math.Inf(-1)))
		} else {
			p.C[8][8] = 0xFC00
		}
	})
	// Rounding probe: 1 + fifteen products of 2^-25. Rounded once: 1 + 4·2^-23; by 15 successive
	// fp32 additions (nearest or toward zero): 1. Only the model's arithmetic is required; on the
	// hardware the difference is logged (both are within the bound's assumption).
	add("rounding-probe", func(p *wmmaProblem) { roundingProbe(p, 0x3C00, 0x0C00, 0x0800) })
	add("replication-A", func(p *wmmaProblem) { randAB(p, 8, 16); p.breakAB = 1 })
	add("replication-B", func(p *wmmaProblem) { randAB(p, 8, 16); p.breakAB = 2 })
	return ps
}

// roundingProbe fills p with 1 + fifteen products of 2^-25 in every element: A's column 0 and B's
// row 0 are one (bits of 1.0), the other columns of A 2^-12 (a) and rows of B 2^-13 (b), in the
// operands' 16-bit format. Rounded once the sum is 1 + 4·2^-23; by 15 successive fp32 additions, 1.
func roundingProbe(p *wmmaProblem, one, a, b uint32) {
	for m := 0; m < 16; m++ {
		for n := 0; n < 16; n++ {
			p.A[m][0], p.B[0][n] = one, one
			for k := 1; k < 16; k++ {
				p.A[m][k], p.B[k][n] = a, b
			}
		}
	}
}

func randBF16(rng *rand.Rand, lo, hi int) uint32 { // sign, exponent in [lo, hi] (biased), any mantissa
	return uint32(rng.IntN(2))<<15 | uint32(lo+rng.IntN(hi-lo+1))<<7 | uint32(rng.IntN(128))
}

// exactBF16 is the bf16 bits of x, which must be a bf16 value.
func exactBF16(x float64) uint32 {
	b := math.Float32bits(float32(x))
	if b&0xFFFF != 0 || float64(float32(x)) != x {
		panic(fmt.Sprintf("%g is not a bf16 value", x))
	}
	return b >> 16
}

// bf16Problems: the bf16 form (f32 results) on normal bf16 values: moderate and wide ranges, the
// structured matrices of the f16 form, products near 2^120 (finite sums), specials, the rounding
// probe and broken replication. bf16 subnormals (below 2^-126) are left out: the prefill kernel's
// bound allows flushing there, and the hardware's handling is not documented.
func bf16Problems(rng *rand.Rand) []*wmmaProblem {
	var ps []*wmmaProblem
	add := func(name string, fill func(p *wmmaProblem)) {
		p := &wmmaProblem{name: name}
		fill(p)
		ps = append(ps, p)
	}
	randC := func(p *wmmaProblem, lo, hi int) {
		for m := 0; m < 16; m++ {
			for n := 0; n < 16; n++ {
				p.C[m][n] = math.Float32bits(float32(rng.NormFloat64() * math.Ldexp(1, lo+rng.IntN(hi-lo+1))))
			}
		}
	}
	randAB := func(p *wmmaProblem, lo, hi int) {
		for i := 0; i < 16; i++ {
			for j := 0; j < 16; j++ {
				p.A[i][j], p.B[i][j] = randBF16(rng, lo, hi), randBF16(rng, lo, hi)
			}
		}
	}
	for i := 0; i < 6; i++ { // moderate range (2^-10..2^10)
		add(fmt.Sprintf("random%d", i), func(p *wmmaProblem) { randAB(p, 117, 137); randC(p, -8, 12) })
	}
	add("random-wide", func(p *wmmaProblem) { randAB(p, 80, 170); randC(p, -40, 40) }) // 2^-47..2^43: beyond f16's range
	add("identity", func(p *wmmaProblem) {
		randAB(p, 110, 140)
		randC(p, -4, 4)
		for m := 0; m < 16; m++ {
			for k := 0; k < 16; k++ {
				p.A[m][k] = 0
			}
			p.A[m][m] = 0x3F80
		}
	})
	add("onehot-cols", func(p *wmmaProblem) { // B[σ(n)][n] = -2
		randAB(p, 110, 140)
		randC(p, -4, 4)
		perm := rng.Perm(16)
		for n := 0; n < 16; n++ {
			for k := 0; k < 16; k++ {
				p.B[k][n] = 0
			}
			p.B[perm[n]][n] = 0xC000
		}
	})
	add("single", func(p *wmmaProblem) { // one product per element, distinct everywhere
		for m := 0; m < 16; m++ {
			p.A[m][(m+5)%16] = exactBF16(float64(m + 1))
		}
		for n := 0; n < 16; n++ {
			for k := 0; k < 16; k++ {
				p.B[k][n] = exactBF16(math.Ldexp(1+float64(n)/128, k-8))
			}
		}
	})
	add("large", func(p *wmmaProblem) { // products near 2^120, sums below fp32's overflow
		for i := 0; i < 16; i++ {
			for j := 0; j < 16; j++ {
				p.A[i][j], p.B[i][j] = randBF16(rng, 186, 186), randBF16(rng, 186, 186) // ±[2^59, 2^60)
			}
		}
	})
	add("specials", func(p *wmmaProblem) { // NaN, inf·0, C = -inf
		randAB(p, 117, 137)
		p.A[3][7] = 0x7FC0
		p.A[5][2], p.B[2][9] = 0x7F80, 0x0000
		p.C[8][8] = math.Float32bits(float32(math.Inf(-1)))
	})
	add("rounding-probe", func(p *wmmaProblem) { roundingProbe(p, 0x3F80, 0x3980, 0x3900) }) // the same in bf16
	add("replication-A", func(p *wmmaProblem) { randAB(p, 117, 137); p.breakAB = 1 })
	add("replication-B", func(p *wmmaProblem) { randAB(p, 117, 137); p.breakAB = 2 })
	return ps
}

func iu8Problems(rng *rand.Rand) []*wmmaProblem {
	var ps []*wmmaProblem
	add := func(name string, fill func(p *wmmaProblem)) {
		p := &wmmaProblem{name: name}
		fill(p)
		ps = append(ps, p)
	}
	for i := 0; i < 4; i++ {
		add(fmt.Sprintf("random%d", i), func(p *wmmaProblem) {
			for a := 0; a < 16; a++ {
				for b := 0; b < 16; b++ {
					p.A[a][b], p.B[a][b], p.C[a][b] = uint32(rng.IntN(256)), uint32(rng.IntN(256)), uint32(int32(rng.IntN(1<<21)-1<<20))
				}
			}
		})
	}
	add("extremes", func(p *wmmaProblem) { // 0x80, 0xFF, 0x7F, 0x01: the bytes where signedness shows
		ex := []uint32{0x80, 0xFF, 0x7F, 0x01, 0x00}
		for a := 0; a < 16; a++ {
			for b := 0; b < 16; b++ {
				p.A[a][b], p.B[a][b] = ex[(a+b)%5], ex[(a*3+b)%5]
			}
		}
	})
	add("identity", func(p *wmmaProblem) {
		for a := 0; a < 16; a++ {
			p.A[a][a] = 1
			for b := 0; b < 16; b++ {
				p.B[a][b], p.C[a][b] = uint32(rng.IntN(256)), uint32(int32(rng.IntN(1000)-500))
			}
		}
	})
	// Saturation: C near INT32_MAX and every product ≥ 0 (0x7F·0x7F), C near INT32_MIN and every
	// product ≤ 0 (0x80·0x7F with a signed A; unsigned, the products are positive and nothing
	// saturates): the sum passes the limit whatever the order of the additions.
	add("saturate", func(p *wmmaProblem) {
		for a := 0; a < 16; a++ {
			for b := 0; b < 16; b++ {
				if a < 8 {
					p.A[a][b], p.B[a][b], p.C[a][b] = 0x7F, 0x7F, uint32(int32(math.MaxInt32-1000+b))
				} else {
					p.A[a][b], p.B[a][b], p.C[a][b] = 0x80, 0x7F, uint32(int32(math.MinInt32+1000-b))
				}
			}
		}
	})
	add("replication-A", func(p *wmmaProblem) {
		for a := 0; a < 16; a++ {
			for b := 0; b < 16; b++ {
				p.A[a][b], p.B[a][b] = uint32(rng.IntN(256)), uint32(rng.IntN(256))
			}
		}
		p.breakAB = 1
	})
	return ps
}

// TestWMMAModel checks the WMMA forms against a plain matrix product through the documented
// register layout: f32 ← f16, f16 ← f16 with both op_sel halves, f32 ← bf16 (the WMMA prefill's
// bf16 chunk), and i32 ← iu8 with every combination of signed A, signed B and clamp.
func TestWMMAModel(t *testing.T) {
	r := newWMMARunner(t)
	rng := rand.New(rand.NewPCG(0x3A3A, 1))
	if r.bad {
		skipRefused(t, r.l, r.d, "octave_wmma_selftest", "WMMA", func() int32 {
			a := cWMMASelftestArgs{StructSize: 56, A: 4, B: 4, C: 4, D: 4, N: 1}
			return r.fn(r.d.Context(), &a)
		})
	}
	t.Run("f32_f16", func(t *testing.T) { r.check(t, wmmaF32F16, 0, f16Problems(rng, wmmaF32F16)) })
	t.Run("f32_bf16", func(t *testing.T) { r.check(t, wmmaF32BF16, 0, bf16Problems(rng)) })
	for _, opsel := range []int{0, wmmaOpsel} {
		t.Run(fmt.Sprintf("f16_f16/opsel%d", opsel), func(t *testing.T) { r.check(t, wmmaF16F16, opsel, f16Problems(rng, wmmaF16F16)) })
	}
	for flags := 0; flags < 16; flags += 2 {
		name := fmt.Sprintf("i32_iu8/a%s_b%s_%s", map[bool]string{true: "s", false: "u"}[flags&wmmaSignedA != 0],
			map[bool]string{true: "s", false: "u"}[flags&wmmaSignedB != 0], map[bool]string{true: "clamp", false: "wrap"}[flags&wmmaClamp != 0])
		t.Run(name, func(t *testing.T) { r.check(t, wmmaI32IU8, flags, iu8Problems(rng)) })
	}
}

// TestWMMAFacts pins the layout and the arithmetic this file encodes, without a library: the
// register of each D element, the f16 rounding helper, and the expected values of the special
// cases.
func TestWMMAFacts(t *testing.T) {
	// D[m][n] in register m/2 of lanes n + 16·(m mod 2): lane 0 holds rows 0, 2, …, 14; lane 16
	// rows 1, 3, …, 15 (not rows 0–7 and 8–15).
	for v := 0; v < 8; v++ {
		if cdRow(v, 0) != 2*v || cdRow(v, 16) != 2*v+1 || cdRow(v, 31) != 2*v+1 {
			t.Fatalf("cdRow(%d, ·) = %d, %d: not the interleaved layout", v, cdRow(v, 0), cdRow(v, 16))
		}
	}
	for _, c := range []struct {
		x    float64
		bits uint32
	}{{1, 0x3C00}, {65504, 0x7BFF}, {65519.99, 0x7BFF}, {65520, 0x7C00}, {-0x1p-24, 0x8001}, {0x1p-25, 0}, {0x1.8p-24, 0x0002},
		{1 + 0x1p-11, 0x3C00}, {1 + 0x1.8p-10, 0x3C02}, {0x1.ffcp-15, 0x0400}} {
		if got := toF16(c.x); got != c.bits {
			t.Errorf("toF16(%g) = %#04x, expected %#04x", c.x, got, c.bits)
		}
		if c.bits&0x7C00 != 0x7C00 && toF16(f16(c.bits)) != c.bits {
			t.Errorf("f16(%#04x) = %g does not round-trip", c.bits, f16(c.bits))
		}
	}
	p := &wmmaProblem{}
	for k := 0; k < 16; k++ {
		p.A[0][k], p.B[k][0] = 0x0C00, 0x0800
	}
	p.A[0][0], p.B[0][0] = 0x3C00, 0x3C00
	if got := math.Float32frombits(want(p, wmmaF32F16, 0, 0, 0)); got != 1+4*0x1p-23 {
		t.Errorf("rounding probe: the model's f32 result %v, expected 1 + 4·2^-23 (rounded once)", got)
	}
	// The same probe in bf16 bits: 1 = 0x3F80, 2^-12 = 0x3980, 2^-13 = 0x3900.
	for k := 0; k < 16; k++ {
		p.A[0][k], p.B[k][0] = 0x3980, 0x3900
	}
	p.A[0][0], p.B[0][0] = 0x3F80, 0x3F80
	if bf16(0x3980) != 0x1p-12 || bf16(0x3900) != 0x1p-13 || exactBF16(-2) != 0xC000 {
		t.Fatalf("bf16 helpers: %g, %g, %#04x", bf16(0x3980), bf16(0x3900), exactBF16(-2))
	}
	if got := math.Float32frombits(want(p, wmmaF32BF16, 0, 0, 0)); got != 1+4*0x1p-23 {
		t.Errorf("bf16 rounding probe: the model's f32 result %v, expected 1 + 4·2^-23 (rounded once)", got)
	}
}

// TestWMMATierListed pins which tier list each build reports (docs/kernels.md, "The WMMA tier and
// its model"): the WMMA tier, decode with profile wmma-f16q and prefill with the pair
// int8rowq + prefill-chunk-f16 (declared as the registry's gfx1100 tier declares it, and
// read by oracle.ParsePrefillProfile), named "wmma" on gfx1100 (the instructions) and
// "wmma-model" on the emulator and CUDA builds (the model); not at all on gfx942.
func TestWMMATierListed(t *testing.T) {
	d := harnesstest.LibOrSkip(t).Dev
	tiers, err := d.Tiers()
	if err != nil {
		t.Fatal(err)
	}
	var found []kernels.TierDesc
	for _, tr := range tiers {
		if tr.Tier == kernels.TierWMMA {
			found = append(found, tr)
		}
	}
	want := arch.WMMA.Model()
	switch {
	case d.Info.Arch == "gfx1100":
		want = arch.WMMA
	case d.Info.Runtime == "HIP":
		if len(found) != 0 {
			t.Fatalf("%s lists %+v: expected no WMMA tier (no WMMA instructions)", d.Info.Arch, found)
		}
		return
	}
	if len(found) != 1 {
		t.Fatalf("tiers %+v: expected one WMMA tier named %q", tiers, want)
	}
	w := found[0]
	a, _ := arch.Lookup("gfx1100")
	reg, _ := a.Tier("wmma")
	if w.Name != want || w.DecodeProfile != "wmma-f16q" || w.PrefillProfile != reg.PrefillProfile || !w.Offers(arch.Decode) || !w.Offers(arch.Prefill) {
		t.Errorf("WMMA tier %+v: expected %q, decode (wmma-f16q) and prefill (%q, the registry's gfx1100 wmma tier)", w, want, reg.PrefillProfile)
	}
	if pre, chunk, err := oracle.ParsePrefillProfile(w.PrefillProfile); err != nil || pre != oracle.ProfileInt8RowQ || chunk != oracle.ProfilePrefillChunkF16 {
		t.Errorf("WMMA tier's prefill profile %q: oracle.ParsePrefillProfile gives %q, %q, %v; expected int8rowq, prefill-chunk-f16", w.PrefillProfile, pre, chunk, err)
	}
	if tiers[0].Tier != kernels.TierPortable {
		t.Errorf("tiers %+v: expected the portable tier first", tiers)
	}
}

// openSelftest is the library the kernel tests share (OCTANT_LIB, opened once per test binary:
// harnesstest.LibOrSkip) and its device, for the tests of its test entry points; it skips without
// OCTANT_LIB, and through a worker.
func openSelftest(t *testing.T) (*kernels.Lib, *kernels.Device) {
	t.Helper()
	l := harnesstest.LibOrSkip(t)
	if l.Worker != nil {
		t.Skipf("through a worker (%s): a test entry point of the C library (octave_selftest.h) is called in this process, with the device's octave_ctx (Device.Context), which a worker's device does not have", l.Path)
	}
	return l.Lib, l.Dev
}

// skipRefused: on a device without the instructions (what), the self-test entry point sym must
// refuse a call with UNSUPPORTED_TIER; the test then skips.
func skipRefused(t *testing.T, l *kernels.Lib, d *kernels.Device, sym, what string, call func() int32) {
	t.Helper()
	err := l.CallSelftest(sym, call)
	if ke, ok := err.(*kernels.Error); !ok || ke.Status != kernels.ErrUnsupportedTier {
		t.Fatalf("%s has no %s: %s gave %v, expected UNSUPPORTED_TIER", d.Info.Arch, what, sym, err)
	}
	t.Skipf("%s has no %s (refused as expected)", d.Info.Arch, what)
}
