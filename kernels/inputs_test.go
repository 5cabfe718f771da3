package kernels_test

// Building device inputs: activations in fp16/bf16, sign patterns, packed caches in either layout,
// and canary-guarded device buffers that remember what was uploaded, so that every test can check
// that inputs were not modified and that nothing was written outside an output.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/octant-kv/octant/kernels"
	"github.com/octant-kv/octant/oracle"
)

// devBuf is one device buffer of a test case.
type devBuf struct {
	name string
	b    *kernels.Buffer
	host []byte // the bytes uploaded (inputs), nil for outputs
}

// bufSet allocates the buffers of one case and checks them together. Buffers are freed when the
// test ends.
type bufSet struct {
	t    testing.TB
	dev  *kernels.Device
	list []*devBuf
}

func newBufSet(t testing.TB, dev *kernels.Device) *bufSet {
	s := &bufSet{t: t, dev: dev}
	t.Cleanup(func() {
		for _, b := range s.list {
			b.b.Free()
		}
	})
	return s
}

func (s *bufSet) alloc(name string, n int, fill byte) *devBuf {
	s.t.Helper()
	b, err := s.dev.Alloc(n, fill)
	must(s.t, err, "allocating "+name)
	db := &devBuf{name: name, b: b}
	s.list = append(s.list, db)
	return db
}

// input uploads data as an input buffer; checkInputs later requires it unchanged.
func (s *bufSet) input(name string, data []byte) *devBuf {
	s.t.Helper()
	db := s.alloc(name, len(data), 0)
	must(s.t, db.b.Write(0, data), "uploading "+name)
	db.host = append([]byte(nil), data...)
	return db
}

// output allocates an output buffer filled with fill (0xFF: NaN in fp16, bf16 and fp32, so an
// element the kernel forgets to write is visible).
func (s *bufSet) output(name string, n int, fill byte) *devBuf {
	s.t.Helper()
	return s.alloc(name, n, fill)
}

// read returns the buffer's bytes.
func (b *devBuf) read(t testing.TB) []byte {
	t.Helper()
	out, err := b.b.Bytes()
	must(t, err, "reading "+b.name)
	return out
}

// checkCanaries reports every buffer whose guard bytes were written.
func (s *bufSet) checkCanaries(t testing.TB, after string) {
	t.Helper()
	for _, b := range s.list {
		if err := b.b.CheckCanaries(b.name); err != nil {
			failf(t, "after %s: %v", after, err)
		}
	}
}

// checkInputs reports every input buffer whose contents changed.
func (s *bufSet) checkInputs(t testing.TB, after string) {
	t.Helper()
	for _, b := range s.list {
		if b.host == nil {
			continue
		}
		got := b.read(t)
		if i := firstDiff(got, b.host); i >= 0 {
			failf(t, "after %s: input %s was modified: byte %d is %#02x, uploaded %#02x (%d bytes differ)", after, b.name, i, got[i], b.host[i], countDiff(got, b.host))
		}
	}
}

func firstDiff(a, b []byte) int {
	if bytes.Equal(a, b) {
		return -1
	}
	for i := range a {
		if i >= len(b) || a[i] != b[i] {
			return i
		}
	}
	return len(a)
}

func countDiff(a, b []byte) int {
	n := 0
	for i := range a {
		if i >= len(b) || a[i] != b[i] {
			n++
		}
	}
	return n
}

// ---- little-endian conversions -------------------------------------------------------------------

func u16Bytes(x []uint16) []byte {
	b := make([]byte, 2*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint16(b[2*i:], v)
	}
	return b
}

func bytesU16(b []byte) []uint16 {
	x := make([]uint16, len(b)/2)
	for i := range x {
		x[i] = binary.LittleEndian.Uint16(b[2*i:])
	}
	return x
}

func i32Bytes(x []int32) []byte {
	b := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(v))
	}
	return b
}

func bytesI32(b []byte) []int32 {
	x := make([]int32, len(b)/4)
	for i := range x {
		x[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return x
}

func i64Bytes(x []int64) []byte {
	b := make([]byte, 8*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(v))
	}
	return b
}

func f32Bytes(x []float32) []byte {
	b := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
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

// signWords packs a pattern as the ABI's uint32[8].
func signWords(s oracle.Signs) [8]uint32 {
	var w [8]uint32
	copy(w[:], s.Words())
	return w
}

// ---- caches ---------------------------------------------------------------------------------------

// cacheLayout names the two layouts vLLM uses (KERNELS.md §1).
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
