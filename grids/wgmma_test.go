package grids

// NVIDIA's warpgroup-level wgmma.mma_async (m64n256k16, f32 ← f16, A from registers, B from shared
// memory through a matrix descriptor; csrc/include/octave_wgmma.h; docs/kernels.md, "The wgmma
// model") on its own, through octave_mma_selftest's form 3, as mma_test.go does for mma.sync. This
// file holds the layout the PTX ISA documents — A and D per warp of the warpgroup exactly the
// m16n8k16 fragments of that warp's 16 rows, B in core matrices of 8 N-rows × 16 bytes at
// start + (k/8)·LBO + (n/8)·SBO — packs known matrices with it and compares the result with a
// plain matrix product. The descriptor's two offsets are the part no document can pin without
// the hardware, so the problems use several (LBO, SBO) pairs, none symmetric, and a failing one
// says whether the result matches the offsets swapped.
//
//	OCTANT_LIB=$PWD/build/liboctave_emu.so go test ./grids/ -run 'TestWGMMA' -v

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
	"unsafe"

	"github.com/octant-kv/octant/kernels"
)

const (
	mmaWgmma = 3    // octave_mma_selftest form 3
	wgHeader = 4    // words before each problem's image (OCT_WG_HEADER)
	wgImage  = 8192 // the image's words (OCT_WG_IMAGE): 32 KB of shared memory
)

// wgProblem is one wgmma: A 64×16, B 16×256 (f16 bits), C 64×256 (f32 bits), and B's placement.
type wgProblem struct {
	name           string
	A              [64][16]uint32
	B              [16][256]uint32
	C              [64][256]uint32
	lbo, sbo, base uint32 // bytes: K-adjacent and N-adjacent core matrices, B's start in the image
}

// wgBOffset is the byte offset of B[k][n] from B's start (no swizzle, K-major).
func wgBOffset(k, n int, lbo, sbo uint32) uint32 {
	return uint32(k/8)*lbo + uint32(n/8)*sbo + uint32(n%8)*16 + uint32(k%8)*2
}

// wgPack lays a problem out: thread th = 32w + lane's A and C registers, and the image words.
func wgPack(p *wgProblem) (a [128][4]uint32, c [128][128]uint32, img []uint32) {
	for th := 0; th < 128; th++ {
		w, l := th/32, th%32
		for i := 0; i < 8; i++ {
			m, k := mmaAElem(mmaF32F16, l, i)
			a[th][i>>1] |= (p.A[16*w+m][k] & 0xFFFF) << (16 * (i & 1))
		}
		for j := 0; j < 32; j++ {
			for i := 0; i < 4; i++ {
				m, n := mmaCElem(l, i)
				c[th][4*j+i] = p.C[16*w+m][8*j+n]
			}
		}
	}
	img = make([]uint32, wgHeader+wgImage)
	img[0], img[1], img[2] = p.lbo, p.sbo, p.base
	bytes := unsafe.Slice((*byte)(unsafe.Pointer(&img[wgHeader])), 4*wgImage)
	for k := 0; k < 16; k++ {
		for n := 0; n < 256; n++ {
			off := p.base + wgBOffset(k, n, p.lbo, p.sbo)
			bytes[off], bytes[off+1] = byte(p.B[k][n]), byte(p.B[k][n]>>8)
		}
	}
	return a, c, img
}

// wgWant is D[m][n] by the model's arithmetic (mmaWant's): Σ_k A·B in float64 in k order, plus C,
// rounded once to float32; abs is Σ|terms|.
func wgWant(p *wgProblem, m, n int) (bits uint32, abs float64) {
	s := 0.0
	for k := 0; k < 16; k++ {
		x := f16(p.A[m][k]) * f16(p.B[k][n])
		s += x
		abs += math.Abs(x)
	}
	c := float64(math.Float32frombits(p.C[m][n]))
	return math.Float32bits(float32(s + c)), abs + math.Abs(c)
}

// wgRun runs the problems (one warpgroup each) and returns D as [problem][row][column] bits.
func wgRun(r *mmaRunner, probs []*wgProblem) ([][64][256]uint32, error) {
	n := len(probs)
	a, c := make([][128][4]uint32, n), make([][128][128]uint32, n)
	b := make([]uint32, 0, n*(wgHeader+wgImage))
	for i, p := range probs {
		var img []uint32
		a[i], c[i], img = wgPack(p)
		b = append(b, img...)
	}
	bytesOf := func(p unsafe.Pointer, size int) []byte { return unsafe.Slice((*byte)(p), size) }
	bufs := &kernels.BufferSet{Dev: r.d}
	defer bufs.Free()
	ba := bufs.Input("a", bytesOf(unsafe.Pointer(&a[0]), n*128*16))
	bb := bufs.Input("b", bytesOf(unsafe.Pointer(&b[0]), 4*len(b)))
	bc := bufs.Input("c", bytesOf(unsafe.Pointer(&c[0]), n*128*512))
	bd := bufs.Output("d", n*128*512, 0xFF)
	runtime.KeepAlive(a)
	runtime.KeepAlive(b)
	runtime.KeepAlive(c)
	if err := bufs.Err(); err != nil {
		return nil, err
	}
	args := cMMASelftestArgs{StructSize: uint64(unsafe.Sizeof(cMMASelftestArgs{})), A: ba.Ptr, B: bb.Ptr,
		C: bc.Ptr, D: bd.Ptr, Form: mmaWgmma, N: int32(n)}
	if err := r.l.CallSelftest("octave_mma_selftest", func() int32 { return r.fn(r.d.Context(), &args) }); err != nil {
		return nil, err
	}
	if err := bufs.Verify("octave_mma_selftest"); err != nil {
		return nil, err
	}
	d := make([][128][128]uint32, n)
	if err := bd.Read(0, bytesOf(unsafe.Pointer(&d[0]), n*128*512)); err != nil {
		return nil, err
	}
	out := make([][64][256]uint32, n)
	for i := range d {
		for th := 0; th < 128; th++ {
			w, l := th/32, th%32
			for j := 0; j < 32; j++ {
				for e := 0; e < 4; e++ {
					m, col := mmaCElem(l, e)
					out[i][16*w+m][8*j+col] = d[i][th][4*j+e]
				}
			}
		}
	}
	return out, nil
}

// wgClose says whether got is exp, or on the hardware within the bound's assumption (at most 16
// correctly rounded fp32 additions per call, as for mma.sync).
func wgClose(hw bool, got, exp uint32, abs float64) (ok, differ bool) {
	if got == exp {
		return true, false
	}
	if !hw {
		return false, false
	}
	g, e := float64(math.Float32frombits(got)), float64(math.Float32frombits(exp))
	ok = math.Abs(g-e) <= matrixSumTol(abs)
	return ok, ok
}

// wgProblems: random f16 values over a wide range of exponents with several placements of B (the
// prefill's own, 144 and 608, among them), small integers (exact in any order) and C alone.
func wgProblems(rng *rand.Rand) []*wgProblem {
	type place struct{ lbo, sbo, base uint32 }
	places := []place{
		{144, 608, 0},   // the prefill's decoded V (prefill_mma.hip, PM_VLBO and PM_VSBO), k-step 0
		{144, 608, 288}, // its k-step 1: two core matrices further along K
		{128, 256, 16},  // K-adjacent core matrices contiguous
		{4096, 128, 0},  // N-adjacent contiguous, K far
		{4624, 144, 32}, // N-adjacent 144 bytes apart (not a power of two), K far
	}
	var ps []*wgProblem
	for _, pl := range places {
		p := &wgProblem{name: fmt.Sprintf("random-lbo%d-sbo%d-at%d", pl.lbo, pl.sbo, pl.base), lbo: pl.lbo, sbo: pl.sbo, base: pl.base}
		for m := 0; m < 64; m++ {
			for k := 0; k < 16; k++ {
				p.A[m][k] = randF16(rng, 8, 20)
			}
			for n := 0; n < 256; n++ {
				p.C[m][n] = math.Float32bits(float32(rng.NormFloat64()))
			}
		}
		for k := 0; k < 16; k++ {
			for n := 0; n < 256; n++ {
				p.B[k][n] = randF16(rng, 8, 20)
			}
		}
		ps = append(ps, p)
	}
	ints := &wgProblem{name: "small-integers", lbo: 144, sbo: 608}
	onlyC := &wgProblem{name: "c-only", lbo: 144, sbo: 608}
	for m := 0; m < 64; m++ {
		for k := 0; k < 16; k++ {
			ints.A[m][k] = toF16(float64(rng.IntN(15) - 7))
		}
		for n := 0; n < 256; n++ {
			ints.C[m][n] = math.Float32bits(float32(1000*m + n))
			onlyC.C[m][n] = math.Float32bits(float32(256*m + n + 1))
		}
	}
	for k := 0; k < 16; k++ {
		for n := 0; n < 256; n++ {
			ints.B[k][n] = toF16(float64(rng.IntN(15) - 7))
		}
	}
	return append(ps, ints, onlyC)
}

// TestWGMMAModel checks wgmma m64n256k16 (the instruction on sm_90a builds, the model on the
// emulator) against a plain product through the documented layout and descriptor.
func TestWGMMAModel(t *testing.T) {
	r := newMMARunner(t)
	if r.bad {
		t.Skip("no mma.sync or wgmma on this build (TestMMAModel checks the refusal)")
	}
	probs := wgProblems(rand.New(rand.NewPCG(0x7767, 4)))
	ds, err := wgRun(r, probs)
	if ke, ok := err.(*kernels.Error); ok && ke.Status == kernels.ErrUnsupportedTier && r.hw {
		t.Skipf("this CUDA library has no wgmma (built without sm_90a: %v)", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range probs {
		bad, differ, swapped := 0, 0, 0
		var at map[uint32][2]int // byte offset from B's start → (k, n), built at the first wrong element
		for m := 0; m < 64; m++ {
			for n := 0; n < 256; n++ {
				exp, abs := wgWant(p, m, n)
				ok, diff := wgClose(r.hw, ds[i][m][n], exp, abs)
				if diff {
					differ++
				}
				if ok {
					continue
				}
				// Column n of B as the instruction would read it with LBO and SBO swapped: does the
				// result match that product?
				if at == nil {
					at = map[uint32][2]int{}
					for k := 0; k < 16; k++ {
						for nn := 0; nn < 256; nn++ {
							at[wgBOffset(k, nn, p.lbo, p.sbo)] = [2]int{k, nn}
						}
					}
				}
				alt := &wgProblem{A: p.A, C: p.C}
				for k := 0; k < 16; k++ {
					if e, found := at[wgBOffset(k, n, p.sbo, p.lbo)]; found {
						alt.B[k][n] = p.B[e[0]][e[1]]
					}
				}
				if e2, abs2 := wgWant(alt, m, n); func() bool { o, _ := wgClose(r.hw, ds[i][m][n], e2, abs2); return o }() {
					swapped++
				}
				if bad < 4 {
					t.Errorf("%s: D[%d][%d] = %#08x, expected %#08x (warp %d, lane %d, register %d)", p.name, m, n,
						ds[i][m][n], exp, m/16, 4*(m%8)+(n%8)/2, 4*(n/8)+2*((m%16)/8)+n%2)
				}
				bad++
			}
		}
		if bad > 0 {
			t.Errorf("%s: %d of 16384 elements wrong; %d of them match B read with LBO and SBO swapped", p.name, bad, swapped)
		}
		if differ > 0 {
			t.Logf("%s: %d of 16384 elements differ from the model's arithmetic, within the bound's assumption", p.name, differ)
		}
	}
}

// TestWGMMAFacts pins the placements wgProblems uses: each keeps B's 4096 elements at distinct
// bytes inside the image, so a problem can only pass through the documented layout.
func TestWGMMAFacts(t *testing.T) {
	for _, p := range wgProblems(rand.New(rand.NewPCG(1, 1))) {
		seen := map[uint32]bool{}
		for k := 0; k < 16; k++ {
			for n := 0; n < 256; n++ {
				off := p.base + wgBOffset(k, n, p.lbo, p.sbo)
				if off%2 != 0 || off+2 > 4*wgImage || seen[off] {
					t.Fatalf("%s: B[%d][%d] at byte %d: outside the image or shared", p.name, k, n, off)
				}
				seen[off] = true
			}
		}
		if p.lbo%16 != 0 || p.sbo%16 != 0 || p.base%16 != 0 || p.lbo == p.sbo {
			t.Errorf("%s: LBO %d, SBO %d, start %d: expected distinct multiples of 16", p.name, p.lbo, p.sbo, p.base)
		}
	}
}

// TestMMASelftestForms: a form outside 0..3 is refused with INVALID_ARGUMENT on every build, before
// anything runs (the buffers are never touched); form 3 on a CUDA library without sm_90a is
// UNSUPPORTED_TIER (TestWGMMAModel skips on it, naming the build).
func TestMMASelftestForms(t *testing.T) {
	r := newMMARunner(t)
	for _, form := range []int32{-1, 4, 1 << 30} {
		a := cMMASelftestArgs{StructSize: uint64(unsafe.Sizeof(cMMASelftestArgs{})), A: 4, B: 4, C: 4, D: 4, Form: form, N: 1}
		err := r.l.CallSelftest("octave_mma_selftest", func() int32 { return r.fn(r.d.Context(), &a) })
		if ke, ok := err.(*kernels.Error); !ok || ke.Status != kernels.ErrInvalidArgument {
			t.Errorf("form %d: got %v, expected INVALID_ARGUMENT", form, err)
		}
	}
}
