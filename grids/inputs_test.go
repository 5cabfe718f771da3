package grids_test

// Building device inputs: activations in fp16/bf16, sign patterns, packed caches in either layout,
// and canary-guarded device buffers that remember what was uploaded, so that every test can check
// that inputs were not modified and that nothing was written outside an output.

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/octant-kv/octant/kernels"
	"github.com/octant-kv/octant/oracle"
)

// bufSet is a kernels.BufferSet that stops the test on an allocation or upload error and reports
// each overwritten canary and modified input as a failure. Buffers are freed when the test ends.
type bufSet struct {
	*kernels.BufferSet
	t testing.TB
}

func newBufSet(t testing.TB, dev *kernels.Device) *bufSet {
	s := &bufSet{BufferSet: &kernels.BufferSet{Dev: dev}, t: t}
	t.Cleanup(s.Free)
	return s
}

// input uploads data as an input buffer; checkInputs later requires it unchanged.
func (s *bufSet) input(name string, data []byte) *kernels.SetBuffer {
	s.t.Helper()
	return s.ok(s.Input(name, data))
}

// output allocates an output buffer filled with fill (0xFF: NaN in fp16, bf16 and fp32, so an
// element the kernel forgets to write is visible).
func (s *bufSet) output(name string, n int, fill byte) *kernels.SetBuffer {
	s.t.Helper()
	return s.ok(s.Output(name, n, fill))
}

// inout uploads data as a buffer the call updates in place; only its canaries are checked.
func (s *bufSet) inout(name string, data []byte) *kernels.SetBuffer {
	s.t.Helper()
	return s.ok(s.InOut(name, data))
}

// ok returns b, or stops the test on the set's allocation or upload error ("allocating key
// (512 bytes): ...", "uploading key: ...").
func (s *bufSet) ok(b *kernels.SetBuffer) *kernels.SetBuffer {
	s.t.Helper()
	if err := s.Err(); err != nil {
		fatalf(s.t, "%v", err)
	}
	return b
}

// checkCanaries reports every buffer whose guard bytes were written.
func (s *bufSet) checkCanaries(t testing.TB, after string) {
	t.Helper()
	failEach(t, s.CheckCanaries(after))
}

// checkInputs reports every input buffer whose contents changed.
func (s *bufSet) checkInputs(t testing.TB, after string) {
	t.Helper()
	failEach(t, s.CheckInputs(after))
}

// failEach reports each error of a joined error as a failure of its own.
func failEach(t testing.TB, err error) {
	t.Helper()
	if err == nil {
		return
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, e := range errs {
		failf(t, "%v", e)
	}
}

// read returns the buffer's bytes.
func read(t testing.TB, b *kernels.SetBuffer) []byte {
	t.Helper()
	out, err := b.ReadAll()
	if err != nil {
		fatalf(t, "%v", err) // "reading out: ..."
	}
	return out
}

// ---- activations ----------------------------------------------------------------------------------

// toAct rounds a float32 to the dtype's bits (nearest even).
func toAct(x float32, dt kernels.Dtype) uint16 {
	if dt == kernels.BF16 {
		return oracle.F32ToBF16(x)
	}
	return oracle.F32ToF16(x)
}

// fromAct converts dtype bits to float32 (exact).
func fromAct(h uint16, dt kernels.Dtype) float32 {
	if dt == kernels.BF16 {
		return oracle.BF16ToF32(h)
	}
	return oracle.F16ToF32(h)
}

// actsToF64 converts dtype bits to float64 values.
func actsToF64(h []uint16, dt kernels.Dtype) []float64 {
	out := make([]float64, len(h))
	for i, v := range h {
		out[i] = float64(fromAct(v, dt))
	}
	return out
}

// actDist is a distribution of activation rows.
type actDist struct {
	sigma   float64 // per-element standard deviation
	spread  float64 // per-row sigma multiplied by a factor in [1, 1+spread)
	outlier int     // a dim multiplied by 8 in every row (upstream's test), −1 for none
}

var gaussian = actDist{sigma: 1, outlier: -1}

// randRows fills rows×256 activations: bits in the dtype and their exact float32 values.
func randRows(rng *rand.Rand, rows int, dt kernels.Dtype, dist actDist) ([]uint16, []float32) {
	h := make([]uint16, rows*256)
	v := make([]float32, rows*256)
	for r := 0; r < rows; r++ {
		sig := dist.sigma * (1 + dist.spread*rng.Float64())
		for d := 0; d < 256; d++ {
			x := rng.NormFloat64() * sig
			if d == dist.outlier {
				x *= 8
			}
			i := r*256 + d
			h[i] = toAct(float32(x), dt)
			v[i] = fromAct(h[i], dt)
		}
	}
	return h, v
}

// ---- signs ----------------------------------------------------------------------------------------

// signKinds are the sign-pattern axis values: the format's default for K and V (what vLLM
// passes), one random pattern for both, and different random patterns for K and V.
var signKinds = []string{"sdef", "sone", "skv"}

// makeSigns returns the K and V sign patterns of a kind.
func makeSigns(rng *rand.Rand, kind string) (ks, vs oracle.Signs) {
	random := func() oracle.Signs {
		s := make(oracle.Signs, 256)
		for i := range s {
			s[i] = rng.IntN(2) == 1
		}
		return s
	}
	switch kind {
	case "sdef":
		d := oracle.DefaultSigns(256)
		return d, d
	case "sone":
		s := random()
		return s, s
	case "skv":
		return random(), random()
	}
	panic("unknown sign kind " + kind)
}

// ---- caches ---------------------------------------------------------------------------------------

// cacheLayout names the two layouts vLLM uses (docs/contract.md §1).
func layoutName(lbnhc bool) string {
	if lbnhc {
		return "lbnhc"
	}
	return "lbhnc"
}

// newCache returns an oracle view of data (random bytes) in the layout.
func newCache(t testing.TB, f oracle.Format, data []byte, nb, hkv, bs int, lbnhc bool) *oracle.Cache {
	t.Helper()
	var c *oracle.Cache
	var err error
	if lbnhc {
		c, err = oracle.NewCacheLBNHC(f, data, nb, hkv, bs)
	} else {
		c, err = oracle.NewCacheLBHNC(f, data, nb, hkv, bs)
	}
	must(t, err, "cache view")
	return c
}

// randBytes returns n random bytes.
func randBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := 0; i+8 <= n; i += 8 {
		binary.LittleEndian.PutUint64(b[i:], rng.Uint64())
	}
	for i := n &^ 7; i < n; i++ {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// poisonSlot overwrites a slot's scales with +inf or NaN: a kernel that reads a token it must not
// read then produces a non-finite output.
func poisonSlot(f oracle.Format, slot []byte, nan bool) {
	v := uint16(0x7C00)
	if nan {
		v = 0x7E00
	}
	for i := 0; i < f.NumScales(); i++ {
		binary.LittleEndian.PutUint16(slot[f.OffScales()+2*i:], v)
	}
}

// fmtName is the short format name used in case paths.
func fmtName(id oracle.FormatID) string {
	switch id {
	case oracle.K3V3:
		return "k3v3"
	case oracle.K3V4:
		return "k3v4"
	case oracle.K3V3Compact:
		return "k3v3c"
	}
	return fmt.Sprintf("fmt%d", int(id))
}

func kernelFormat(t testing.TB, id oracle.FormatID) oracle.Format {
	f, err := oracle.KernelFormat(id)
	must(t, err, "format")
	return f
}

// dtName is the short dtype name used in case paths.
func dtName(dt kernels.Dtype) string {
	if dt == kernels.BF16 {
		return "bf16"
	}
	return "f16"
}

// elemAt describes flat element j of a [rows][heads][256] output.
func elemAt(j, heads int) string {
	return fmt.Sprintf("row %d head %d dim %d", j/(heads*256), j/256%heads, j%256)
}

// randomBlockTable is a block table of len(nblk) rows of maxBlocks entries: row r's first nblk[r]
// entries take the next ids of a random permutation of the nb physical blocks (so no block is
// shared), the rest are junk values (out-of-range ids the kernels must never dereference); with
// holes, one of a row's first nblk[r] − 1 entries (rows of at least 2 blocks) becomes junk too.
func randomBlockTable(rng *rand.Rand, nblk []int, maxBlocks, nb int, junk []int32, holes bool) []int32 {
	perm := rng.Perm(nb)
	bt := make([]int32, len(nblk)*maxBlocks)
	next := 0
	for r, n := range nblk {
		for lb := 0; lb < maxBlocks; lb++ {
			if lb < n {
				bt[r*maxBlocks+lb] = int32(perm[next])
				next++
			} else {
				bt[r*maxBlocks+lb] = junk[rng.IntN(len(junk))]
			}
		}
		if holes && n >= 2 {
			bt[r*maxBlocks+rng.IntN(n-1)] = junk[rng.IntN(len(junk))]
		}
	}
	return bt
}
