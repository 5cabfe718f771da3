package grids

// The MFMA model on its own (csrc/include/octave_mfma.h; docs/kernels.md, "The MFMA instructions and
// their model"), through the test entry point octave_mfma_selftest (csrc/include/octave_selftest.h:
// not part of the C ABI). The library runs one MFMA per wave of 64 lanes on raw per-lane registers;
// this file, not the library, holds the register layout AMD documents (mfmaA, mfmaB, mfmaCD map a
// matrix element to its lane, register and byte or half), places known matrices into the lanes with
// it, reads the results back with it and compares them with a product it computes itself. A model
// (or the hardware, or a defect) whose layout differs fails here instead of agreeing with itself.
//
// On the emulator and CUDA builds (the model) every result must equal the model's documented
// arithmetic bit for bit. On gfx942 (the instructions) the f16 and bf16 forms' results must lie
// within what the bounds assume of a matrix instruction (matrixSumTol), the i8 form's must be exact.
// gfx1100 has no MFMA: the entry point must refuse it.
//
//	OCTANT_LIB=$PWD/build/liboctave_emu.so go test ./grids/ -run 'TestMFMA' -v

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/octant-kv/octant/kernels"
)

// cMFMASelftestArgs mirrors octave_mfma_selftest_args (48 bytes; capi_selftest.cpp asserts it).
type cMFMASelftestArgs struct {
	StructSize uint64
	A, B, C, D uintptr
	Form, N    int32
}

// The forms of octave_selftest.h.
const (
	mfmaI8       = 0 // v_mfma_i32_16x16x32_i8
	mfmaF16      = 1 // v_mfma_f32_16x16x16_f16
	mfmaExchange = 2 // the model's 64-lane exchange
	mfmaBF16     = 3 // v_mfma_f32_16x16x16_bf16
)

// mfmaK is the K of a form: 32 int8 or 16 f16 (bf16) elements per row of A.
func mfmaK(form int) int { return map[int]int{mfmaI8: 32, mfmaF16: 16, mfmaBF16: 16}[form] }

// mfmaHalf reports whether a form's A and B elements are 16 bits (f16, bf16).
func mfmaHalf(form int) bool { return form == mfmaF16 || form == mfmaBF16 }

// mfmaElem is the value of a 16-bit A or B element of a half form.
func mfmaElem(form int, h uint32) float64 {
	if form == mfmaBF16 {
		return bf16(h)
	}
	return f16(h)
}

// ---- the documented layout (CDNA3 wave64; docs/kernels.md cites the sources) ----------------------

// mfmaSlot is where one matrix element lives: lane 0..63, register, and the element's bit offset in
// the register (8·byte for int8, 16·half for f16, 0 for 32-bit C/D elements).
type mfmaSlot struct{ lane, reg, shift int }

// mfmaA: A[m][k] is in lane m + 16·(k/E), register (k mod E)/P, at element (k mod P) of the register,
// with E elements per lane (8 int8, 4 f16 or bf16) and P per register (4 int8, 2 f16 or bf16).
func mfmaA(form, m, k int) mfmaSlot {
	e, p, bits := 8, 4, 8
	if mfmaHalf(form) {
		e, p, bits = 4, 2, 16
	}
	return mfmaSlot{lane: m + 16*(k/e), reg: (k % e) / p, shift: bits * (k % p)}
}

// mfmaB: B[k][n] is placed as A[n][k]: lane n + 16·(k/E), the same register and element.
func mfmaB(form, k, n int) mfmaSlot { return mfmaA(form, n, k) }

// mfmaCD: C[m][n] and D[m][n] are in lane n + 16·(m/4), register m mod 4.
func mfmaCD(m, n int) mfmaSlot { return mfmaSlot{lane: n + 16*(m/4), reg: m % 4} }

// mfmaProblem is one MFMA: A (16×K) and B (K×16) as element bits (int8 bytes, f16 or bf16 bits), C as
// int32 or f32 bits.
type mfmaProblem struct {
	name string
	A    [16][32]uint32
	B    [32][16]uint32
	C    [16][16]uint32
}

// mfmaPack places A, B and C in the lanes' registers by the documented layout.
func mfmaPack(p *mfmaProblem, form int) (a, b, c [64][4]uint32) {
	mask := uint32(0xFF)
	if mfmaHalf(form) {
		mask = 0xFFFF
	}
	for m := 0; m < 16; m++ {
		for k := 0; k < mfmaK(form); k++ {
			s := mfmaA(form, m, k)
			a[s.lane][s.reg] |= (p.A[m][k] & mask) << s.shift
		}
	}
	for k := 0; k < mfmaK(form); k++ {
		for n := 0; n < 16; n++ {
			s := mfmaB(form, k, n)
			b[s.lane][s.reg] |= (p.B[k][n] & mask) << s.shift
		}
	}
	for m := 0; m < 16; m++ {
		for n := 0; n < 16; n++ {
			s := mfmaCD(m, n)
			c[s.lane][s.reg] = p.C[m][n]
		}
	}
	return a, b, c
}

// mfmaWant is the model's D[m][n] (docs/kernels.md): i8, the exact sum in 64 bits wrapped to
// int32; f16 and bf16, the float64 sum of the exact products in k order, plus C, rounded once to
// float32.
func mfmaWant(p *mfmaProblem, form, m, n int) uint32 {
	if form == mfmaI8 {
		s := int64(int32(p.C[m][n]))
		for k := 0; k < 32; k++ {
			s += int64(int8(p.A[m][k])) * int64(int8(p.B[k][n]))
		}
		return uint32(s)
	}
	s := 0.0
	for k := 0; k < 16; k++ {
		s += mfmaElem(form, p.A[m][k]) * mfmaElem(form, p.B[k][n])
	}
	return math.Float32bits(float32(s + float64(math.Float32frombits(p.C[m][n]))))
}

// mfmaWithinHardware: gfx942's f16 or bf16 result may differ from the model's by at most 16
// correctly rounded fp32 additions of the 17 terms (matrixSumTol); specials must match.
func mfmaWithinHardware(p *mfmaProblem, form, m, n int, got uint32) bool {
	s, abs := 0.0, 0.0
	for k := 0; k < 16; k++ {
		x := mfmaElem(form, p.A[m][k]) * mfmaElem(form, p.B[k][n])
		s, abs = s+x, abs+math.Abs(x)
	}
	c := float64(math.Float32frombits(p.C[m][n]))
	exact, g := s+c, float64(math.Float32frombits(got))
	if math.IsNaN(exact) || math.IsInf(exact, 0) || math.IsNaN(g) || math.IsInf(g, 0) {
		return math.IsNaN(exact) && math.IsNaN(g) || exact == g
	}
	return math.Abs(g-exact) <= matrixSumTol(abs+math.Abs(c))
}

// ---- the binding -------------------------------------------------------------------------------

type mfmaRunner struct {
	l   *kernels.Lib
	d   *kernels.Device
	fn  func(uintptr, *cMFMASelftestArgs) int32
	hw  bool // gfx942: the instructions, not the model
	bad bool // a device without MFMA (gfx1100): the entry point must refuse
}

func newMFMARunner(t *testing.T) *mfmaRunner {
	l, d := openSelftest(t)
	r := &mfmaRunner{l: l, d: d, hw: d.Info.Arch == "gfx942"}
	if err := l.BindSelftest("octave_mfma_selftest", &r.fn); err != nil {
		t.Fatal(err)
	}
	r.bad = d.Info.Runtime == "HIP" && !r.hw
	t.Logf("%s on %s (%s): %s", l.Path, d.Info.Name, d.Info.Arch, map[bool]string{true: "the v_mfma instructions", false: "the MFMA model"}[r.hw])
	return r
}

// skipUnlessMFMA skips, after checking the refusal, on a device without MFMA.
func (r *mfmaRunner) skipUnlessMFMA(t *testing.T) {
	t.Helper()
	if r.bad {
		skipRefused(t, r.l, r.d, "octave_mfma_selftest", "MFMA", func() int32 {
			a := cMFMASelftestArgs{StructSize: 48, A: 4, B: 4, C: 4, D: 4, N: 1}
			return r.fn(r.d.Context(), &a)
		})
	}
}

// run runs one form over n problems given as every lane's a, b, c registers and returns every
// lane's d registers.
func (r *mfmaRunner) run(form int, regs [][3][64][4]uint32) ([][64][4]uint32, error) {
	n := len(regs)
	const per = 64 * 4 * 4
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
	args := cMFMASelftestArgs{StructSize: uint64(unsafe.Sizeof(cMFMASelftestArgs{})), A: bufs[0].Ptr, B: bufs[1].Ptr,
		C: bufs[2].Ptr, D: bufs[3].Ptr, Form: int32(form), N: int32(n)}
	if err := r.l.CallSelftest("octave_mfma_selftest", func() int32 { return r.fn(r.d.Context(), &args) }); err != nil {
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
	out := make([][64][4]uint32, n)
	for i := range out {
		copy(unsafe.Slice((*byte)(unsafe.Pointer(&out[i][0][0])), per), raw[i*per:])
	}
	runtime.KeepAlive(raw)
	return out, nil
}

// check runs probs and compares every D element, read back by the documented layout, with the
// test's own product.
func (r *mfmaRunner) check(t *testing.T, form int, probs []*mfmaProblem) {
	t.Helper()
	regs := make([][3][64][4]uint32, len(probs))
	for i, p := range probs {
		regs[i][0], regs[i][1], regs[i][2] = mfmaPack(p, form)
	}
	ds, err := r.run(form, regs)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range probs {
		bad, differ := 0, 0
		for m := 0; m < 16; m++ {
			for n := 0; n < 16; n++ {
				s := mfmaCD(m, n)
				got, exp := ds[i][s.lane][s.reg], mfmaWant(p, form, m, n)
				ok := got == exp
				if !ok && mfmaHalf(form) {
					g, e := float64(math.Float32frombits(got)), float64(math.Float32frombits(exp))
					ok = math.IsNaN(g) && math.IsNaN(e)
					if !ok && r.hw && mfmaWithinHardware(p, form, m, n, got) {
						ok = true
						differ++
					}
				}
				if !ok {
					if bad < 4 {
						t.Errorf("%s: D[%d][%d] = %#08x, expected %#08x (form %d; register %d of lane %d holds it)", p.name, m, n, got, exp, form, s.reg, s.lane)
					}
					bad++
				}
			}
		}
		if bad > 4 {
			t.Errorf("%s: %d of 256 elements wrong", p.name, bad)
		}
		if differ > 0 {
			t.Logf("%s: %d of 256 elements differ from the model's arithmetic, within the bounds' assumption", p.name, differ)
		}
	}
}

// ---- the matrices ---------------------------------------------------------------------------------

func mfmaI8Problems(rng *rand.Rand) []*mfmaProblem {
	var ps []*mfmaProblem
	add := func(name string, fill func(p *mfmaProblem)) {
		p := &mfmaProblem{name: name}
		fill(p)
		ps = append(ps, p)
	}
	randAll := func(p *mfmaProblem) {
		for m := 0; m < 16; m++ {
			for k := 0; k < 32; k++ {
				p.A[m][k], p.B[k][m] = uint32(rng.IntN(256)), uint32(rng.IntN(256))
			}
			for n := 0; n < 16; n++ {
				p.C[m][n] = uint32(int32(rng.IntN(1<<21) - 1<<20))
			}
		}
	}
	for i := 0; i < 4; i++ {
		add(fmt.Sprintf("random%d", i), randAll)
	}
	add("single", func(p *mfmaProblem) { // one product per element, distinct everywhere: a position map
		for m := 0; m < 16; m++ {
			p.A[m][(3*m+5)%32] = uint32(m + 1)
		}
		for k := 0; k < 32; k++ {
			for n := 0; n < 16; n++ {
				p.B[k][n] = uint32((7*k + n + 1) % 127)
			}
		}
	})
	add("extremes", func(p *mfmaProblem) { // -128, 127, -1, 1, 0: -128·-128 = 16384, 32 of them 2^19
		ex := []uint32{0x80, 0x7F, 0xFF, 0x01, 0x00}
		for m := 0; m < 16; m++ {
			for k := 0; k < 32; k++ {
				p.A[m][k], p.B[k][m] = ex[(m+k)%5], ex[(3*m+k)%5]
			}
		}
		for k := 0; k < 32; k++ {
			p.A[0][k], p.B[k][0] = 0x80, 0x80 // D[0][0] = 32·16384
			p.A[1][k], p.B[k][1] = 0x7F, 0x80 // D[1][1] = 32·(-16256)
		}
	})
	// Wrap: C within 2^19 of INT32_MAX with every product ≥ 0 (127·127), or of INT32_MIN with every
	// product ≤ 0 (-128·127): the exact sum leaves int32 whatever the order of the additions, and
	// D is its low 32 bits.
	add("wrap", func(p *mfmaProblem) {
		for m := 0; m < 16; m++ {
			for k := 0; k < 32; k++ {
				if m < 8 {
					p.A[m][k] = 0x7F
				} else {
					p.A[m][k] = 0x80
				}
				p.B[k][m] = 0x7F
			}
			for n := 0; n < 16; n++ {
				if m < 8 {
					p.C[m][n] = uint32(int32(math.MaxInt32 - 1000 + n))
				} else {
					p.C[m][n] = uint32(int32(math.MinInt32 + 1000 - n))
				}
			}
		}
	})
	return ps
}

func mfmaF16Problems(rng *rand.Rand) []*mfmaProblem {
	var ps []*mfmaProblem
	add := func(name string, fill func(p *mfmaProblem)) {
		p := &mfmaProblem{name: name}
		fill(p)
		ps = append(ps, p)
	}
	randAB := func(p *mfmaProblem, lo, hi int) {
		for m := 0; m < 16; m++ {
			for k := 0; k < 16; k++ {
				p.A[m][k], p.B[k][m] = randF16(rng, lo, hi), randF16(rng, lo, hi)
			}
		}
	}
	randC := func(p *mfmaProblem, lo, hi int) {
		for m := 0; m < 16; m++ {
			for n := 0; n < 16; n++ {
				p.C[m][n] = math.Float32bits(float32(rng.NormFloat64() * math.Ldexp(1, rng.IntN(hi-lo+1)+lo-15)))
			}
		}
	}
	for i := 0; i < 6; i++ {
		add(fmt.Sprintf("random%d", i), func(p *mfmaProblem) { randAB(p, 5, 17); randC(p, 8, 18) })
	}
	add("random-subnormal", func(p *mfmaProblem) { randAB(p, 0, 3); randC(p, 0, 2) })
	add("single", func(p *mfmaProblem) { // one product per element, distinct everywhere: a position map
		for m := 0; m < 16; m++ {
			p.A[m][(m+5)%16] = toF16(float64(m + 1))
		}
		for k := 0; k < 16; k++ {
			for n := 0; n < 16; n++ {
				p.B[k][n] = toF16(float64(17*k + n + 1))
			}
		}
	})
	add("max", func(p *mfmaProblem) { // ±65504: exact products of 2^32 size; C = ±FLT_MAX
		for m := 0; m < 16; m++ {
			for k := 0; k < 16; k++ {
				p.A[m][k], p.B[k][m] = 0x7BFF|uint32(rng.IntN(2))<<15, 0x7BFF|uint32(rng.IntN(2))<<15
			}
		}
		p.C[0][0], p.C[1][1] = math.Float32bits(math.MaxFloat32), math.Float32bits(-math.MaxFloat32)
	})
	add("specials", func(p *mfmaProblem) { // NaN, inf·0, -0, C = -inf
		randAB(p, 10, 16)
		p.A[3][7] = 0x7E00                    // NaN: row 3 NaN
		p.A[5][2], p.B[2][9] = 0x7C00, 0x0000 // inf·0: D[5][9] NaN, the rest of row 5 ±inf
		p.C[8][8] = math.Float32bits(float32(math.Inf(-1)))
		for k := 0; k < 16; k++ {
			p.A[12][k] = 0x8000 // -0 · x: row 12 of D is C's (the sum of zeros is +0, so C = -0 gives +0)
		}
		p.C[12][4] = 0x80000000
	})
	// Rounding probe: 1 + fifteen products of 2^-25. Rounded once: 1 + 4·2^-23; by 15 successive
	// fp32 additions: 1. The model's arithmetic gives the former; gfx942 may give either.
	add("rounding-probe", func(p *mfmaProblem) {
		for m := 0; m < 16; m++ {
			for k := 0; k < 16; k++ {
				p.A[m][k], p.B[k][m] = 0x0C00, 0x0800
			}
			p.A[m][0], p.B[0][m] = 0x3C00, 0x3C00
		}
	})
	return ps
}

// mfmaBF16Problems: the bf16 form on normal bf16 values: moderate and wide ranges (beyond f16's),
// a position map, products near 2^120 (finite sums), specials and the rounding probe. bf16
// subnormals are left out, as for the WMMA bf16 form: the hardware's handling is not documented.
func mfmaBF16Problems(rng *rand.Rand) []*mfmaProblem {
	var ps []*mfmaProblem
	add := func(name string, fill func(p *mfmaProblem)) {
		p := &mfmaProblem{name: name}
		fill(p)
		ps = append(ps, p)
	}
	randAB := func(p *mfmaProblem, lo, hi int) {
		for m := 0; m < 16; m++ {
			for k := 0; k < 16; k++ {
				p.A[m][k], p.B[k][m] = randBF16(rng, lo, hi), randBF16(rng, lo, hi)
			}
		}
	}
	randC := func(p *mfmaProblem, lo, hi int) {
		for m := 0; m < 16; m++ {
			for n := 0; n < 16; n++ {
				p.C[m][n] = math.Float32bits(float32(rng.NormFloat64() * math.Ldexp(1, lo+rng.IntN(hi-lo+1))))
			}
		}
	}
	for i := 0; i < 4; i++ { // 2^-10..2^10
		add(fmt.Sprintf("random%d", i), func(p *mfmaProblem) { randAB(p, 117, 137); randC(p, -8, 12) })
	}
	add("random-wide", func(p *mfmaProblem) { randAB(p, 80, 170); randC(p, -40, 40) }) // 2^-47..2^43
	// one product per element, distinct everywhere: a position map
	add("single", func(p *mfmaProblem) {
		for m := 0; m < 16; m++ {
			p.A[m][(m+5)%16] = exactBF16(float64(m + 1))
		}
		for k := 0; k < 16; k++ {
			for n := 0; n < 16; n++ {
				p.B[k][n] = exactBF16(math.Ldexp(1+float64(n)/128, k-8))
			}
		}
	})
	add("large", func(p *mfmaProblem) { // products near 2^120, signs mixed: finite sums of 2^124 size
		randAB(p, 186, 187)
	})
	add("specials", func(p *mfmaProblem) { // NaN, inf·0, -0, C = -inf
		randAB(p, 120, 134)
		p.A[3][7] = 0x7FC0                    // NaN: row 3 NaN
		p.A[5][2], p.B[2][9] = 0x7F80, 0x0000 // inf·0: D[5][9] NaN, the rest of row 5 ±inf
		p.C[8][8] = math.Float32bits(float32(math.Inf(-1)))
		for k := 0; k < 16; k++ {
			p.A[12][k] = 0x8000 // -0 · x: row 12 of D is C's
		}
		p.C[12][4] = 0x80000000
	})
	// Rounding probe: 1 + fifteen products of 2^-25 (2^-12 · 2^-13). Rounded once: 1 + 4·2^-23.
	add("rounding-probe", func(p *mfmaProblem) {
		for m := 0; m < 16; m++ {
			for k := 0; k < 16; k++ {
				p.A[m][k], p.B[k][m] = 0x3980, 0x3900
			}
			p.A[m][0], p.B[0][m] = 0x3F80, 0x3F80
		}
	})
	return ps
}

// TestMFMAModel checks the three MFMA forms against the test's own product through the documented
// register layout.
func TestMFMAModel(t *testing.T) {
	r := newMFMARunner(t)
	r.skipUnlessMFMA(t)
	rng := rand.New(rand.NewPCG(0x3F3F, 2))
	t.Run("i32_i8", func(t *testing.T) { r.check(t, mfmaI8, mfmaI8Problems(rng)) })
	t.Run("f32_f16", func(t *testing.T) { r.check(t, mfmaF16, mfmaF16Problems(rng)) })
	t.Run("f32_bf16", func(t *testing.T) { r.check(t, mfmaBF16, mfmaBF16Problems(rng)) })
}

// TestMFMAExchange runs the model's 64-lane operand exchange alone (form 2): on CUDA the path
// where a wave's two warps meet through shared memory and named barriers, on the emulator its
// 64-fiber exchange. Every lane reads words of lanes in the other warp, its own and (second
// exchange) another, so a half that reads its own warp's words in place of the other's fails; the
// problems fill a workgroup of four waves and one of three (each wave its own barrier and buffer).
func TestMFMAExchange(t *testing.T) {
	r := newMFMARunner(t)
	r.skipUnlessMFMA(t)
	if r.hw {
		err := r.l.CallSelftest("octave_mfma_selftest", func() int32 {
			a := cMFMASelftestArgs{StructSize: 48, A: 4, B: 4, C: 4, D: 4, Form: mfmaExchange, N: 1}
			return r.fn(r.d.Context(), &a)
		})
		if ke, ok := err.(*kernels.Error); !ok || ke.Status != kernels.ErrUnsupportedTier {
			t.Fatalf("gfx942 runs the instructions: the exchange form gave %v, expected UNSUPPORTED_TIER", err)
		}
		t.Skip("gfx942 runs the instructions: the model's exchange does not exist there (refused as expected)")
	}
	rng := rand.New(rand.NewPCG(0x64, 64))
	const n = 7 // two workgroups: four waves, then three
	regs := make([][3][64][4]uint32, n)
	for i := range regs {
		perm := rng.Perm(64)
		for l := 0; l < 64; l++ {
			for j := 0; j < 4; j++ {
				regs[i][0][l][j], regs[i][2][l][j] = rng.Uint32(), rng.Uint32()
			}
			switch i {
			case 0: // the other warp's mirror lane
				regs[i][1][l][0], regs[i][1][l][1] = uint32(l^32), uint32(63-l)
			case 1: // itself, and the same lane of the other warp
				regs[i][1][l][0], regs[i][1][l][1] = uint32(l), uint32(l^32)
			default: // a permutation and a random lane; high bits above the lane number are ignored
				regs[i][1][l][0], regs[i][1][l][1] = uint32(perm[l])|uint32(rng.IntN(4))<<6, uint32(rng.IntN(64))
			}
		}
	}
	ds, err := r.run(mfmaExchange, regs)
	if err != nil {
		t.Fatal(err)
	}
	bad := 0
	for i := range regs {
		for l := 0; l < 64; l++ {
			s0, s1 := regs[i][1][l][0]&63, regs[i][1][l][1]&63
			exp := [4]uint32{regs[i][0][s0][0], regs[i][0][s0][1], regs[i][2][s1][2], regs[i][2][s1][3]}
			if ds[i][l] != exp && bad < 6 {
				t.Errorf("problem %d lane %d: d = %#x, expected %#x (a of lane %d, c[2..3] of lane %d)", i, l, ds[i][l], exp, s0, s1)
				bad++
			}
		}
	}
}

// TestMFMAFacts pins the layout this file encodes, without a library: every (lane, register,
// element) slot of A, B and C/D holds exactly one matrix element, and the corners AMD's tables
// show are where this file puts them.
func TestMFMAFacts(t *testing.T) {
	for _, form := range []int{mfmaI8, mfmaF16, mfmaBF16} {
		per := map[int]int{mfmaI8: 4, mfmaF16: 2, mfmaBF16: 2}[form] // elements per register
		seenA, seenB := map[mfmaSlot]bool{}, map[mfmaSlot]bool{}
		for m := 0; m < 16; m++ {
			for k := 0; k < mfmaK(form); k++ {
				a, b := mfmaA(form, m, k), mfmaB(form, k, m)
				if seenA[a] || seenB[b] || a.lane > 63 || a.reg > 1 || b.lane > 63 || b.reg > 1 {
					t.Fatalf("form %d: A[%d][%d] at %+v or B[%d][%d] at %+v: out of range or taken twice", form, m, k, a, k, m, b)
				}
				seenA[a], seenB[b] = true, true
			}
		}
		if len(seenA) != 64*2*per || len(seenB) != 64*2*per {
			t.Fatalf("form %d: A fills %d slots, B %d; expected %d (64 lanes, 2 registers, %d elements each)", form, len(seenA), len(seenB), 64*2*per, per)
		}
	}
	seen := map[mfmaSlot]bool{}
	for m := 0; m < 16; m++ {
		for n := 0; n < 16; n++ {
			s := mfmaCD(m, n)
			if seen[s] || s.lane > 63 || s.reg > 3 {
				t.Fatalf("D[%d][%d] at %+v: out of range or taken twice", m, n, s)
			}
			seen[s] = true
		}
	}
	for _, c := range []struct {
		what      string
		got, want mfmaSlot
	}{
		{"i8 A[0][8]", mfmaA(mfmaI8, 0, 8), mfmaSlot{16, 0, 0}},
		{"i8 A[15][31]", mfmaA(mfmaI8, 15, 31), mfmaSlot{63, 1, 24}},
		{"i8 A[3][5]", mfmaA(mfmaI8, 3, 5), mfmaSlot{3, 1, 8}},
		{"i8 B[31][15]", mfmaB(mfmaI8, 31, 15), mfmaSlot{63, 1, 24}},
		{"i8 B[9][2]", mfmaB(mfmaI8, 9, 2), mfmaSlot{18, 0, 8}},
		{"f16 A[0][4]", mfmaA(mfmaF16, 0, 4), mfmaSlot{16, 0, 0}},
		{"f16 A[2][15]", mfmaA(mfmaF16, 2, 15), mfmaSlot{50, 1, 16}},
		{"f16 B[7][1]", mfmaB(mfmaF16, 7, 1), mfmaSlot{17, 1, 16}},
		{"bf16 A[2][15]", mfmaA(mfmaBF16, 2, 15), mfmaSlot{50, 1, 16}},
		{"bf16 B[7][1]", mfmaB(mfmaBF16, 7, 1), mfmaSlot{17, 1, 16}},
		{"D[4][0]", mfmaCD(4, 0), mfmaSlot{16, 0, 0}},
		{"D[3][0]", mfmaCD(3, 0), mfmaSlot{0, 3, 0}},
		{"D[15][15]", mfmaCD(15, 15), mfmaSlot{63, 3, 0}},
	} {
		if c.got != c.want {
			t.Errorf("%s at %+v, expected %+v", c.what, c.got, c.want)
		}
	}
	// Wrap: INT32_MAX plus 32·127·127 is its low 32 bits, negative.
	p := &mfmaProblem{}
	for k := 0; k < 32; k++ {
		p.A[0][k], p.B[k][0] = 0x7F, 0x7F
	}
	p.C[0][0] = math.MaxInt32
	if got, want := int32(mfmaWant(p, mfmaI8, 0, 0)), int32(math.MinInt32+32*127*127-1); got != want {
		t.Errorf("wrap: %d, expected %d", got, want)
	}
	// Rounded once: 1 + fifteen products of 2^-25 is 1 + 4·2^-23.
	for k := 0; k < 16; k++ {
		p.A[0][k], p.B[k][0] = 0x0C00, 0x0800
	}
	p.A[0][0], p.B[0][0], p.C[0][0] = 0x3C00, 0x3C00, 0
	if got := math.Float32frombits(mfmaWant(p, mfmaF16, 0, 0)); got != 1+4*0x1p-23 {
		t.Errorf("rounding probe: %v, expected 1 + 4·2^-23", got)
	}
}

// TestMFMACalculatorTables holds this file's layout functions to AMD's Matrix Instruction
// Calculator: every cell of its register-layout tables for both instructions (testdata/mfma, with
// the commands that printed them) names the register, lane and bits of one element, and mfmaA,
// mfmaB and mfmaCD must put that element there. The tables are the calculator's output, read
// here, not derived from this file.
func TestMFMACalculatorTables(t *testing.T) {
	cell := regexp.MustCompile(`^v(\d+)\{(\d+)\}(?:\.\[(\d+):(\d+)\])?$`)
	for _, tc := range []struct {
		file  string
		inst  string
		rows  int
		cols  int
		where func(r, c int) mfmaSlot
		bits  int
	}{
		{"cdna3_v_mfma_i32_16x16x32_i8_A.csv", "V_MFMA_I32_16X16X32_I8", 16, 32, func(m, k int) mfmaSlot { return mfmaA(mfmaI8, m, k) }, 8},
		{"cdna3_v_mfma_i32_16x16x32_i8_B.csv", "V_MFMA_I32_16X16X32_I8", 32, 16, func(k, n int) mfmaSlot { return mfmaB(mfmaI8, k, n) }, 8},
		{"cdna3_v_mfma_i32_16x16x32_i8_D.csv", "V_MFMA_I32_16X16X32_I8", 16, 16, mfmaCD, 32},
		{"cdna3_v_mfma_f32_16x16x16_f16_A.csv", "V_MFMA_F32_16X16X16_F16", 16, 16, func(m, k int) mfmaSlot { return mfmaA(mfmaF16, m, k) }, 16},
		{"cdna3_v_mfma_f32_16x16x16_f16_B.csv", "V_MFMA_F32_16X16X16_F16", 16, 16, func(k, n int) mfmaSlot { return mfmaB(mfmaF16, k, n) }, 16},
		{"cdna3_v_mfma_f32_16x16x16_f16_D.csv", "V_MFMA_F32_16X16X16_F16", 16, 16, mfmaCD, 32},
		{"cdna3_v_mfma_f32_16x16x16_bf16_A.csv", "V_MFMA_F32_16X16X16_BF16", 16, 16, func(m, k int) mfmaSlot { return mfmaA(mfmaBF16, m, k) }, 16},
		{"cdna3_v_mfma_f32_16x16x16_bf16_B.csv", "V_MFMA_F32_16X16X16_BF16", 16, 16, func(k, n int) mfmaSlot { return mfmaB(mfmaBF16, k, n) }, 16},
		{"cdna3_v_mfma_f32_16x16x16_bf16_D.csv", "V_MFMA_F32_16X16X16_BF16", 16, 16, mfmaCD, 32},
	} {
		t.Run(tc.file, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("testdata", "mfma", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
			if !slices.Contains(lines, "Architecture: CDNA3") || !slices.Contains(lines, "Instruction: "+tc.inst) {
				t.Fatalf("%s: expected the calculator's CDNA3 %s table, found header %q", tc.file, tc.inst, lines[:min(5, len(lines))])
			}
			start := slices.IndexFunc(lines, func(l string) bool { return strings.HasSuffix(strings.SplitN(l, ",", 2)[0], "]") })
			if start < 0 || len(lines)-start-1 != tc.rows {
				t.Fatalf("%s: expected a header row and %d rows, found %d lines after line %d", tc.file, tc.rows, len(lines)-start-1, start)
			}
			seen := map[mfmaSlot]string{}
			for r := 0; r < tc.rows; r++ {
				f := strings.Split(lines[start+1+r], ",")
				if len(f) != tc.cols+1 || f[0] != strconv.Itoa(r) {
					t.Fatalf("%s row %d: expected the row index and %d cells, found %q", tc.file, r, tc.cols, lines[start+1+r])
				}
				for c := 0; c < tc.cols; c++ {
					m := cell.FindStringSubmatch(f[c+1])
					if m == nil {
						t.Fatalf("%s [%d][%d]: cell %q is not v<reg>{<lane>}[.[hi:lo]]", tc.file, r, c, f[c+1])
					}
					reg, _ := strconv.Atoi(m[1])
					lane, _ := strconv.Atoi(m[2])
					lo, width := 0, 32
					if m[3] != "" {
						hi, _ := strconv.Atoi(m[3])
						lo, _ = strconv.Atoi(m[4])
						width = hi - lo + 1
					}
					want := mfmaSlot{lane: lane, reg: reg, shift: lo}
					if width != tc.bits {
						t.Errorf("%s [%d][%d]: the calculator gives %d bits, expected %d", tc.file, r, c, width, tc.bits)
					}
					if got := tc.where(r, c); got != want {
						t.Errorf("%s [%d][%d]: the calculator puts it in lane %d, register %d, bit %d; the test's layout says lane %d, register %d, bit %d",
							tc.file, r, c, want.lane, want.reg, want.shift, got.lane, got.reg, got.shift)
					}
					if prev, dup := seen[want]; dup {
						t.Errorf("%s [%d][%d]: slot %+v already holds %s", tc.file, r, c, want, prev)
					}
					seen[want] = fmt.Sprintf("[%d][%d]", r, c)
				}
			}
		})
	}
}
