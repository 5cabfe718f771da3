package grids

// NVIDIA's warp-level mma.sync on its own (csrc/include/octave_mma.h; docs/kernels.md, "The mma
// model"), through the test entry point octave_mma_selftest (csrc/include/octave_selftest.h: not
// part of the C ABI), as wmma_test.go does for RDNA3's WMMA. This file, not the library, holds the
// register layout the PTX ISA documents (element i of a lane → row and column), packs known
// matrices into the lanes' registers with it, unpacks the results with it and compares them with
// a plain matrix product. The model reads the layout the other way round (row and column → lane
// and element), so a model whose layout differs fails here instead of agreeing with itself.
//
// On the emulator (the model) every result must equal the model's arithmetic bit for bit. On a
// CUDA build (the instruction) the integer form must be exact and the f16 form within what the
// sm_90 tier's bound will assume of the hardware (at most 16 correctly rounded fp32 additions per
// call), and the test logs where it differs from the model; the wrap-around case, whose hardware
// result the model assumes, is skipped there. HIP builds have no mma.sync: the entry point must
// refuse.
//
//	OCTANT_LIB=$PWD/build/liboctave_emu.so go test ./grids/ -run 'TestMMA' -v

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
	"unsafe"

	"github.com/octant-kv/octant/kernels"
)

// cMMASelftestArgs mirrors octave_mma_selftest_args (48 bytes; capi_selftest.cpp asserts it).
type cMMASelftestArgs struct {
	StructSize uint64
	A, B, C, D uintptr
	Form, N    int32
}

// The forms of octave_selftest.h.
const (
	mmaF32F16 = 0 // m16n8k16, f32 ← f16
	mmaS32S8  = 1 // m16n8k32, s32 ← s8
	mmaLdsmX4 = 2 // ldmatrix.x4 (a: the shared image, b: each lane's row)
)

// mmaProblem is one mma.sync: A (16×K), B (K×8), C (16×8) as raw element bits (f16 bits or bytes;
// C as f32 bits or int32), K = 16 (f16) or 32 (s8).
type mmaProblem struct {
	name string
	A    [16][32]uint32
	B    [32][8]uint32
	C    [16][8]uint32
	wrap bool // the s32 sum wraps around: the model's assumption, undocumented on the hardware
}

// ---- the documented layout (PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point
// type" and "Matrix Fragments for mma.m16n8k32"; g = lane >> 2, t = lane & 3) ------------------

// mmaAElem: the row and column of A element i of lane l (f16: i < 8, two per register; s8: i < 16,
// four per register).
func mmaAElem(form, l, i int) (row, col int) {
	g, t := l>>2, l&3
	if form == mmaF32F16 {
		row = g
		if i&2 != 0 { // a2, a3, a6, a7
			row = g + 8
		}
		col = 2*t + i&1
		if i >= 4 {
			col += 8
		}
		return row, col
	}
	row = g
	if i >= 4 && i < 8 || i >= 12 {
		row = g + 8
	}
	col = 4*t + i&3
	if i >= 8 {
		col += 16
	}
	return row, col
}

// mmaBElem: the row (k) and column (n) of B element i of lane l (f16: i < 4; s8: i < 8).
func mmaBElem(form, l, i int) (k, n int) {
	g, t := l>>2, l&3
	if form == mmaF32F16 {
		k = 2*t + i&1
		if i >= 2 {
			k += 8
		}
		return k, g
	}
	k = 4*t + i&3
	if i >= 4 {
		k += 16
	}
	return k, g
}

// mmaCElem: the row and column of C/D element i (< 4) of lane l.
func mmaCElem(l, i int) (row, col int) {
	g, t := l>>2, l&3
	row = g
	if i >= 2 {
		row = g + 8
	}
	return row, 2*t + i&1
}

// mmaPack packs a problem's A, B and C into every lane's registers.
func mmaPack(p *mmaProblem, form int) (a [32][4]uint32, b [32][2]uint32, c [32][4]uint32) {
	for l := 0; l < 32; l++ {
		if form == mmaF32F16 {
			for i := 0; i < 8; i++ {
				m, k := mmaAElem(form, l, i)
				a[l][i>>1] |= (p.A[m][k] & 0xFFFF) << (16 * (i & 1))
			}
			for i := 0; i < 4; i++ {
				k, n := mmaBElem(form, l, i)
				b[l][i>>1] |= (p.B[k][n] & 0xFFFF) << (16 * (i & 1))
			}
		} else {
			for i := 0; i < 16; i++ {
				m, k := mmaAElem(form, l, i)
				a[l][i>>2] |= (p.A[m][k] & 0xFF) << (8 * (i & 3))
			}
			for i := 0; i < 8; i++ {
				k, n := mmaBElem(form, l, i)
				b[l][i>>2] |= (p.B[k][n] & 0xFF) << (8 * (i & 3))
			}
		}
		for i := 0; i < 4; i++ {
			m, n := mmaCElem(l, i)
			c[l][i] = p.C[m][n]
		}
	}
	return
}

// mmaUnpack reads D[m][n] out of every lane's D registers.
func mmaUnpack(d [32][4]uint32) (out [16][8]uint32) {
	for l := 0; l < 32; l++ {
		for i := 0; i < 4; i++ {
			m, n := mmaCElem(l, i)
			out[m][n] = d[l][i]
		}
	}
	return out
}

// ---- the plain product and the model's arithmetic -------------------------------------------

// mmaWant is D[m][n] by the model's arithmetic: f16: Σ_k A·B in float64 in k order, plus C, rounded
// once to float32; s8: the exact sum plus C, its low 32 bits. abs is Σ|terms| (f16 form).
func mmaWant(p *mmaProblem, form, m, n int) (bits uint32, abs float64) {
	if form == mmaF32F16 {
		s := 0.0
		for k := 0; k < 16; k++ {
			x := f16(p.A[m][k]) * f16(p.B[k][n])
			s += x
			abs += math.Abs(x)
		}
		c := float64(math.Float32frombits(p.C[m][n]))
		return math.Float32bits(float32(s + c)), abs + math.Abs(c)
	}
	s := int64(int32(p.C[m][n]))
	for k := 0; k < 32; k++ {
		s += int64(int8(p.A[m][k])) * int64(int8(p.B[k][n]))
	}
	return uint32(s), 0
}

// ---- the binding ------------------------------------------------------------------------------

type mmaRunner struct {
	l   *kernels.Lib
	d   *kernels.Device
	fn  func(uintptr, *cMMASelftestArgs) int32
	hw  bool // a CUDA build: the instruction, not the model
	bad bool // a device without mma.sync (the HIP builds): the entry point must refuse
}

func newMMARunner(t *testing.T) *mmaRunner {
	l, d := openSelftest(t)
	r := &mmaRunner{l: l, d: d, hw: d.Info.Runtime == "CUDA", bad: d.Info.Runtime == "HIP"}
	if err := l.BindSelftest("octave_mma_selftest", &r.fn); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s on %s (%s): %s", l.Path, d.Info.Name, d.Info.Arch, map[bool]string{true: "the mma.sync instructions", false: "the mma model"}[r.hw])
	return r
}

// run runs the problems (one warp each) and returns every lane's D registers.
func (r *mmaRunner) run(form int, probs []*mmaProblem) ([][32][4]uint32, error) {
	n := len(probs)
	a, b, c := make([][32][4]uint32, n), make([][32][2]uint32, n), make([][32][4]uint32, n)
	for i, p := range probs {
		a[i], b[i], c[i] = mmaPack(p, form)
	}
	return r.runRegs(form, a, b, c)
}

// runRegs runs one warp per problem on the given registers and returns every lane's D registers.
func (r *mmaRunner) runRegs(form int, a [][32][4]uint32, b [][32][2]uint32, c [][32][4]uint32) ([][32][4]uint32, error) {
	n := len(a)
	bytesOf := func(p unsafe.Pointer, size int) []byte { return unsafe.Slice((*byte)(p), size) }
	bufs := &kernels.BufferSet{Dev: r.d}
	defer bufs.Free()
	ba := bufs.Input("a", bytesOf(unsafe.Pointer(&a[0]), n*32*16))
	bb := bufs.Input("b", bytesOf(unsafe.Pointer(&b[0]), n*32*8))
	bc := bufs.Input("c", bytesOf(unsafe.Pointer(&c[0]), n*32*16))
	bd := bufs.Output("d", n*32*16, 0xFF)
	runtime.KeepAlive(a)
	runtime.KeepAlive(b)
	runtime.KeepAlive(c)
	if err := bufs.Err(); err != nil {
		return nil, err
	}
	args := cMMASelftestArgs{StructSize: uint64(unsafe.Sizeof(cMMASelftestArgs{})), A: ba.Ptr, B: bb.Ptr,
		C: bc.Ptr, D: bd.Ptr, Form: int32(form), N: int32(n)}
	if err := r.l.CallSelftest("octave_mma_selftest", func() int32 { return r.fn(r.d.Context(), &args) }); err != nil {
		return nil, err
	}
	if err := bufs.Verify("octave_mma_selftest"); err != nil {
		return nil, err
	}
	out := make([][32][4]uint32, n)
	if err := bd.Read(0, bytesOf(unsafe.Pointer(&out[0]), n*32*16)); err != nil {
		return nil, err
	}
	return out, nil
}

// check runs probs and compares every element with the plain product.
func (r *mmaRunner) check(t *testing.T, form int, probs []*mmaProblem) {
	t.Helper()
	ds, err := r.run(form, probs)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range probs {
		if p.wrap && r.hw {
			continue
		}
		got := mmaUnpack(ds[i])
		bad, differ := 0, 0
		for m := 0; m < 16; m++ {
			for n := 0; n < 8; n++ {
				exp, abs := mmaWant(p, form, m, n)
				ok := got[m][n] == exp
				if !ok && r.hw && form == mmaF32F16 {
					g, e := float64(math.Float32frombits(got[m][n])), float64(math.Float32frombits(exp))
					if math.Abs(g-e) <= matrixSumTol(abs) {
						ok = true
						differ++
					}
				}
				if !ok {
					if bad < 4 {
						t.Errorf("%s: D[%d][%d] = %#08x, expected %#08x (form %d; element %d of lane %d)",
							p.name, m, n, got[m][n], exp, form, 2*(m/8)+n%2, 4*(m%8)+n/2)
					}
					bad++
				}
			}
		}
		if bad > 4 {
			t.Errorf("%s: %d of 128 elements wrong", p.name, bad)
		}
		if differ > 0 {
			t.Logf("%s: %d of 128 elements differ from the model's arithmetic, within the bound's assumption", p.name, differ)
		}
	}
}

// ---- the matrices -------------------------------------------------------------------------------

// mmaF16Problems: random f16 values over a wide range of exponents (every element distinct, so a
// layout error shows), small integers (exact in any order: the hardware must match bit for bit),
// and C alone (A·B = 0).
func mmaF16Problems(rng *rand.Rand) []*mmaProblem {
	var ps []*mmaProblem
	for j := 0; j < 6; j++ {
		p := &mmaProblem{name: fmt.Sprintf("random-%d", j)}
		for m := 0; m < 16; m++ {
			for k := 0; k < 16; k++ {
				p.A[m][k] = randF16(rng, 8, 20)
			}
			for n := 0; n < 8; n++ {
				p.C[m][n] = math.Float32bits(float32(rng.NormFloat64()))
			}
		}
		for k := 0; k < 16; k++ {
			for n := 0; n < 8; n++ {
				p.B[k][n] = randF16(rng, 8, 20)
			}
		}
		ps = append(ps, p)
	}
	ints := &mmaProblem{name: "small-integers"}
	for m := 0; m < 16; m++ {
		for k := 0; k < 16; k++ {
			ints.A[m][k] = toF16(float64(rng.IntN(15) - 7))
		}
		for n := 0; n < 8; n++ {
			ints.C[m][n] = math.Float32bits(float32(100*m + n))
		}
	}
	for k := 0; k < 16; k++ {
		for n := 0; n < 8; n++ {
			ints.B[k][n] = toF16(float64(rng.IntN(15) - 7))
		}
	}
	onlyC := &mmaProblem{name: "c-only"}
	for m := 0; m < 16; m++ {
		for n := 0; n < 8; n++ {
			onlyC.C[m][n] = math.Float32bits(float32(16*m + n + 1))
		}
	}
	return append(ps, ints, onlyC)
}

// mmaS8Problems: random bytes (signed), the extremes (−128 · −128 summed 32 times), and a sum that
// wraps past INT32_MAX.
func mmaS8Problems(rng *rand.Rand) []*mmaProblem {
	var ps []*mmaProblem
	for j := 0; j < 6; j++ {
		p := &mmaProblem{name: fmt.Sprintf("random-%d", j)}
		for m := 0; m < 16; m++ {
			for k := 0; k < 32; k++ {
				p.A[m][k] = uint32(rng.IntN(256))
			}
			for n := 0; n < 8; n++ {
				p.C[m][n] = uint32(int32(rng.IntN(2_000_001) - 1_000_000))
			}
		}
		for k := 0; k < 32; k++ {
			for n := 0; n < 8; n++ {
				p.B[k][n] = uint32(rng.IntN(256))
			}
		}
		ps = append(ps, p)
	}
	ext, wrap := &mmaProblem{name: "extremes"}, &mmaProblem{name: "wrap", wrap: true}
	for m := 0; m < 16; m++ {
		for k := 0; k < 32; k++ {
			ext.A[m][k], wrap.A[m][k] = 0x80, 0x7F
		}
		for n := 0; n < 8; n++ {
			ext.C[m][n], wrap.C[m][n] = uint32(int32(-m*8-n)), uint32(int32(math.MaxInt32-m))
		}
	}
	for k := 0; k < 32; k++ {
		for n := 0; n < 8; n++ {
			ext.B[k][n], wrap.B[k][n] = 0x80, 0x7F
		}
	}
	return append(ps, ext, wrap)
}

// TestMMAModel checks both mma.sync forms against a plain matrix product through the documented
// register layout.
func TestMMAModel(t *testing.T) {
	r := newMMARunner(t)
	if r.bad {
		skipRefused(t, r.l, r.d, "octave_mma_selftest", "mma.sync", func() int32 {
			a := cMMASelftestArgs{StructSize: 48, A: 4, B: 4, C: 4, D: 4, N: 1}
			return r.fn(r.d.Context(), &a)
		})
	}
	rng := rand.New(rand.NewPCG(0x6D6D, 2))
	t.Run("m16n8k16_f32_f16", func(t *testing.T) { r.check(t, mmaF32F16, mmaF16Problems(rng)) })
	t.Run("m16n8k32_s32_s8", func(t *testing.T) { r.check(t, mmaS32S8, mmaS8Problems(rng)) })
}

// TestMMALdmatrix checks ldmatrix.x4 (the mma prefill's V operand load) against the PTX ISA's
// description: lane 8j + r gives the address of row r of matrix j (16 contiguous bytes), and
// register j of lane l holds bytes 4(l & 3).. of row l >> 2 of matrix j. Each problem's lanes
// point at rows of a 32-row image in an order of their own (a permutation, then rows repeated),
// so a model that numbers the matrices or the rows differently fails.
func TestMMALdmatrix(t *testing.T) {
	r := newMMARunner(t)
	if r.bad {
		t.Skip("no mma.sync on this build (TestMMAModel checks the refusal)")
	}
	rng := rand.New(rand.NewPCG(0x6C64, 3))
	const n = 4
	a, b, c := make([][32][4]uint32, n), make([][32][2]uint32, n), make([][32][4]uint32, n)
	for i := range a {
		for row := range a[i] {
			for w := range a[i][row] {
				a[i][row][w] = rng.Uint32()
			}
		}
		perm := rng.Perm(32)
		for l := range b[i] {
			b[i][l][0] = uint32(perm[l])
			if i == n-1 {
				b[i][l][0] = uint32(rng.IntN(4)) // rows repeated: several lanes give one address
			}
		}
	}
	ds, err := r.runRegs(mmaLdsmX4, a, b, c)
	if err != nil {
		t.Fatal(err)
	}
	for i := range ds {
		bad := 0
		for l := 0; l < 32; l++ {
			for j := 0; j < 4; j++ {
				row := b[i][8*j+l>>2][0]
				if want := a[i][row][l&3]; ds[i][l][j] != want {
					if bad < 4 {
						t.Errorf("problem %d: lane %d register %d = %#08x, expected word %d of row %d (given by lane %d) = %#08x",
							i, l, j, ds[i][l][j], l&3, row, 8*j+l>>2, want)
					}
					bad++
				}
			}
		}
		if bad > 4 {
			t.Errorf("problem %d: %d of 128 registers wrong", i, bad)
		}
	}
}

// TestMMAFacts pins the layout this file encodes, without a library, to entries read off the PTX
// ISA's figures, and checks that each fragment covers its matrix exactly once.
func TestMMAFacts(t *testing.T) {
	type at struct{ r, c int }
	pos := func(r, c int) at { return at{r, c} }
	for _, f := range []struct {
		what string
		got  at
		want at
	}{
		{"f16 A a0 of lane 5 (g 1, t 1)", pos(mmaAElem(mmaF32F16, 5, 0)), at{1, 2}},
		{"f16 A a3 of lane 5", pos(mmaAElem(mmaF32F16, 5, 3)), at{9, 3}},
		{"f16 A a4 of lane 5", pos(mmaAElem(mmaF32F16, 5, 4)), at{1, 10}},
		{"f16 A a7 of lane 31 (g 7, t 3)", pos(mmaAElem(mmaF32F16, 31, 7)), at{15, 15}},
		{"f16 B b2 of lane 6 (g 1, t 2)", pos(mmaBElem(mmaF32F16, 6, 2)), at{12, 1}},
		{"s8 A a5 of lane 5", pos(mmaAElem(mmaS32S8, 5, 5)), at{9, 5}},
		{"s8 A a9 of lane 5", pos(mmaAElem(mmaS32S8, 5, 9)), at{1, 21}},
		{"s8 A a15 of lane 31", pos(mmaAElem(mmaS32S8, 31, 15)), at{15, 31}},
		{"s8 B b6 of lane 6", pos(mmaBElem(mmaS32S8, 6, 6)), at{26, 1}},
		{"C c1 of lane 5", pos(mmaCElem(5, 1)), at{1, 3}},
		{"C c2 of lane 5", pos(mmaCElem(5, 2)), at{9, 2}},
	} {
		if f.got != f.want {
			t.Errorf("%s at (row, col) %v, expected %v", f.what, f.got, f.want)
		}
	}
	for _, c := range []struct {
		what       string
		rows, cols int
		per        int
		elem       func(l, i int) (int, int)
	}{
		{"f16 A", 16, 16, 8, func(l, i int) (int, int) { return mmaAElem(mmaF32F16, l, i) }},
		{"f16 B", 16, 8, 4, func(l, i int) (int, int) { return mmaBElem(mmaF32F16, l, i) }},
		{"s8 A", 16, 32, 16, func(l, i int) (int, int) { return mmaAElem(mmaS32S8, l, i) }},
		{"s8 B", 32, 8, 8, func(l, i int) (int, int) { return mmaBElem(mmaS32S8, l, i) }},
		{"C/D", 16, 8, 4, mmaCElem},
	} {
		seen := map[[2]int]int{}
		for l := 0; l < 32; l++ {
			for i := 0; i < c.per; i++ {
				r, col := c.elem(l, i)
				seen[[2]int{r, col}]++
			}
		}
		if len(seen) != c.rows*c.cols {
			t.Errorf("%s: the fragments cover %d entries, expected %d×%d", c.what, len(seen), c.rows, c.cols)
		}
		for k, v := range seen {
			if v != 1 || k[0] >= c.rows || k[1] >= c.cols {
				t.Errorf("%s: entry %v held %d times", c.what, k, v)
			}
		}
	}
}
