package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/octant-kv/octant/kernels"
	"github.com/octant-kv/octant/oracle"
)

// benchSpec is one batch shape of `octant bench`: Reqs requests of Tokens tokens each; the last
// QPerReq positions of each request are query tokens (klen Tokens−QPerReq+1 .. Tokens).
type benchSpec struct {
	Name    string
	Summary string
	Hidden  bool // a test shape: accepted by --specs, listed apart in the help
	Reqs    int  // requests
	Tokens  int  // sequence length of each request, its query tokens included
	QPerReq int  // query tokens per request
	KVHeads int  // Hkv
	G       int  // query heads per KV head (Hq = G·Hkv)
}

// benchSpecs are the shapes --specs accepts. "100k" is 100000 tokens; "2k" queries are 2048.
var benchSpecs = []benchSpec{
	{Name: "q1s100k", Summary: "1 decode query over a 100000-token sequence; Hkv 1, Hq 6",
		Reqs: 1, Tokens: 100000, QPerReq: 1, KVHeads: 1, G: 6},
	{Name: "q4s100k", Summary: "MTP verification: 4 query tokens of one request, klens 99997..100000; Hkv 1, Hq 6",
		Reqs: 1, Tokens: 100000, QPerReq: 4, KVHeads: 1, G: 6},
	{Name: "q2ks100k", Summary: "a chunk of 2048 query tokens of one request ending a 100000-token sequence,\n" +
		"causal klens 97953..100000; Hkv 1, Hq 6; run as 16 decode calls of 128 rows (see below)",
		Reqs: 1, Tokens: 100000, QPerReq: 2048, KVHeads: 1, G: 6},
	{Name: "big", Summary: "bandwidth-bound: 8 requests x 131072 tokens, one decode query each; Hkv 4, Hq 24",
		Reqs: 8, Tokens: 131072, QPerReq: 1, KVHeads: 4, G: 6},
	{Name: "tiny", Summary: "test: 1 decode query over 2048 tokens; Hkv 1, Hq 6",
		Hidden: true, Reqs: 1, Tokens: 2048, QPerReq: 1, KVHeads: 1, G: 6},
	{Name: "tinychunk", Summary: "test: a chunk of 136 query tokens ending a 520-token sequence (2 calls); Hkv 1, Hq 6",
		Hidden: true, Reqs: 1, Tokens: 520, QPerReq: 136, KVHeads: 1, G: 6},
	{Name: "tinymulti", Summary: "test: 3 requests x 1000 tokens, 2 query tokens each; Hkv 2, Hq 8",
		Hidden: true, Reqs: 3, Tokens: 1000, QPerReq: 2, KVHeads: 2, G: 4},
}

const defaultBenchSpecs = "q1s100k,q4s100k,q2ks100k,big"

// benchHeadSize is the kernels' head size D.
const benchHeadSize = 256

// parseBenchSpecs resolves a comma-separated list of spec names.
func parseBenchSpecs(list string) ([]benchSpec, error) {
	var out []benchSpec
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		i := slices.IndexFunc(benchSpecs, func(s benchSpec) bool { return s.Name == name })
		if i < 0 {
			var known []string
			for _, s := range benchSpecs {
				known = append(known, s.Name)
			}
			return nil, fmt.Errorf("unknown spec %q (known: %s)", name, strings.Join(known, ", "))
		}
		out = append(out, benchSpecs[i])
	}
	if len(out) == 0 {
		return nil, errors.New("--specs: no spec given")
	}
	return out, nil
}

// parseSplits parses --splits: "auto" (0) or a number in 1..1024, or a comma-separated list of them.
func parseSplits(list string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if f == "auto" {
			out = append(out, 0)
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 || n > oracle.MaxSplits {
			return nil, fmt.Errorf("--splits: %q is neither auto nor a number in 1..%d", f, oracle.MaxSplits)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, errors.New("--splits: empty")
	}
	return out, nil
}

// parseByteSize parses "4GiB", "256MiB", "64KiB", "1GB", "1000" (bytes).
func parseByteSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		m      int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"B", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.m
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("%q is not a byte size (examples: 4GiB, 256MiB, 1048576)", s)
	}
	return n * mult, nil
}

// Hq is the number of query heads.
func (s benchSpec) Hq() int { return s.G * s.KVHeads }

// NumQ is the number of query rows.
func (s benchSpec) NumQ() int { return s.Reqs * s.QPerReq }

// Klen is the number of tokens query row i attends to (causal within a request's query tokens).
func (s benchSpec) Klen(i int) int { return s.Tokens - s.QPerReq + i%s.QPerReq + 1 }

// BlocksPerReq is max_blocks: the blocks one request's sequence needs.
func (s benchSpec) BlocksPerReq(blockSize int) int { return (s.Tokens + blockSize - 1) / blockSize }

// CacheBytes is the size of the packed cache allocated for the spec (LBHNC, every block of every
// request).
func (s benchSpec) CacheBytes(slotBytes, blockSize int) int64 {
	return int64(s.Reqs) * int64(s.BlocksPerReq(blockSize)) * int64(s.KVHeads) * int64(blockSize) * int64(slotBytes)
}

// ReadBytes is the packed cache one decode iteration reads: Hkv × seq_len × slot bytes per request,
// each KV head's slots counted once per request (the kernel reads them once for all G query heads,
// and for all query tokens of a request sharing a workgroup).
func (s benchSpec) ReadBytes(slotBytes int) int64 {
	return int64(s.Reqs) * int64(s.KVHeads) * int64(s.Tokens) * int64(slotBytes)
}

// FP16Bytes is what an fp16 K/V cache of the same shape holds: 2 (K, V) × seq_len × Hkv × 256 × 2
// bytes per request.
func (s benchSpec) FP16Bytes() int64 {
	return int64(s.Reqs) * 2 * int64(s.Tokens) * int64(s.KVHeads) * benchHeadSize * 2
}

// QKPairs is the number of (query head, token) scores one iteration computes.
func (s benchSpec) QKPairs() int64 {
	var n int64
	for i := 0; i < s.QPerReq; i++ {
		n += int64(s.Klen(i))
	}
	return n * int64(s.Reqs) * int64(s.Hq())
}

// rowRange is the query rows [Lo, Hi) of one decode call.
type rowRange struct{ Lo, Hi int }

// Calls splits the query rows into decode calls: all rows in one call when every request has at
// most maxRows query tokens (or maxRows ≤ 0); otherwise each request's rows in runs of maxRows.
func (s benchSpec) Calls(maxRows int) []rowRange {
	if maxRows <= 0 || s.QPerReq <= maxRows {
		return []rowRange{{0, s.NumQ()}}
	}
	var out []rowRange
	for r := 0; r < s.Reqs; r++ {
		for lo := 0; lo < s.QPerReq; lo += maxRows {
			out = append(out, rowRange{r*s.QPerReq + lo, r*s.QPerReq + min(lo+maxRows, s.QPerReq)})
		}
	}
	return out
}

// autoQueryGroup is query_group = min(4, query tokens per request).
func autoQueryGroup(s benchSpec) int { return min(4, s.QPerReq) }

// autoSplits is num_splits = clamp(⌈16·SMs / W⌉, 1, min(1024, ⌊kv_max / T⌋)) with
// W = ⌈rows per call / query_group⌉ · Hkv workgroups per split and T = 768 tokens (384 when a
// workgroup holds more than 8 queries, query_group · G > 8): four waves of the portable decode's
// four resident workgroups per SM (CU), a whole number of them, and enough tokens per split that
// each workgroup's fixed costs (query preparation, partials, the reduce's walk over the splits)
// stay small. Chosen from the H200 split sweeps in docs/measurements.md (big: 17 splits 1.27 ms,
// 64 0.99 ms; q1s100k: 132 best; q4s100k: 264 best).
func autoSplits(rowsPerCall, queryGroup, g, kvHeads, kvMax, computeUnits int) int {
	if computeUnits <= 0 {
		computeUnits = 132 // an H200
	}
	wg := (rowsPerCall + queryGroup - 1) / queryGroup * kvHeads
	ns := (16*computeUnits + wg - 1) / wg
	tok := 768
	if queryGroup*g > 8 {
		tok = 384
	}
	hi := min(oracle.MaxSplits, kvMax/tok)
	return max(1, min(ns, hi))
}

// benchOptions are the settings of one bench run.
type benchOptions struct {
	Fmt        oracle.Format
	BlockSize  int
	QueryGroup int // 0: auto
	MaxRows    int
	Distinct   int
	Seed       uint64
	Reps       int
	Warmup     int
	FlushL2    bool
	FlushBytes int64
}

// benchCase is one spec set up on a device: the buffers and the decode calls of one iteration.
type benchCase struct {
	Spec       benchSpec
	Splits     int
	QueryGroup int
	NumBlocks  int
	MaxBlocks  int
	Args       []kernels.DecodeArgs

	// host copies of the inputs (the test checks the output against the oracle)
	HostQuery      []uint16
	HostBlockTable []int32
	HostQToReq     []int32
	HostQToKlen    []int32

	Cache, Query, Out, BlockTable, QToReq, QToKlen, Partials *kernels.Buffer
}

// envError is an error of the environment (library, device, memory): exit status 2.
type envError struct{ err error }

func (e envError) Error() string { return e.err.Error() }
func (e envError) Unwrap() error { return e.err }

// shapeString describes a spec for messages.
func (s benchSpec) shapeString() string {
	return fmt.Sprintf("%d request(s) x %d tokens, %d query token(s) each, Hkv %d, Hq %d", s.Reqs, s.Tokens, s.QPerReq, s.KVHeads, s.Hq())
}

// allocBench allocates one buffer, turning a failure into an envError that names the spec, the
// buffer and its size. A failed allocation leaves the runtime's last error set (cudaMalloc does):
// two syncs clear it so that the next launch check does not report it.
func allocBench(d *kernels.Device, s benchSpec, what string, n int64, fill byte) (*kernels.Buffer, error) {
	b, err := d.Alloc(int(n), fill)
	if err != nil {
		d.Sync()
		d.Sync()
		return nil, envError{fmt.Errorf("spec %s (%s): cannot allocate the %s, %d bytes (%s): %w", s.Name, s.shapeString(), what, n, humanBytes(n), err)}
	}
	return b, nil
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// f16Rand is a standard normal value rounded to fp16, as raw bits.
func f16Rand(rng *rand.Rand) uint16 { return oracle.F32ToF16(float32(rng.NormFloat64())) }

// signWords is a sign pattern as the ABI's 8 words.
func signWords(s oracle.Signs) [8]uint32 {
	var w [8]uint32
	copy(w[:], s.Words())
	return w
}

// setupBench allocates and fills the buffers of spec s with splits (0: auto) and builds its calls.
func setupBench(d *kernels.Device, s benchSpec, splits int, o benchOptions, progress func(string, ...any)) (c *benchCase, err error) {
	slot := o.Fmt.SlotBytes()
	bs := o.BlockSize
	hq := s.Hq()
	c = &benchCase{Spec: s, MaxBlocks: s.BlocksPerReq(bs)}
	c.NumBlocks = s.Reqs * c.MaxBlocks
	if int64(c.NumBlocks)*int64(s.KVHeads)*int64(bs) > math.MaxInt32 || c.NumBlocks > math.MaxInt32 {
		return nil, fmt.Errorf("spec %s: %d blocks of %d tokens do not fit the ABI's int32 counts", s.Name, c.NumBlocks, bs)
	}
	c.QueryGroup = o.QueryGroup
	if c.QueryGroup == 0 {
		c.QueryGroup = autoQueryGroup(s)
	}
	calls := s.Calls(o.MaxRows)
	rowsPerCall := 0
	for _, r := range calls {
		rowsPerCall = max(rowsPerCall, r.Hi-r.Lo)
	}
	kvMax := c.MaxBlocks * bs
	c.Splits = splits
	if c.Splits == 0 {
		c.Splits = autoSplits(rowsPerCall, c.QueryGroup, s.G, s.KVHeads, kvMax, d.Info.ComputeUnits)
	}
	const partialStride = oracle.DefaultPartialStride
	ws := d.WorkspaceBytes(rowsPerCall, hq, c.Splits, partialStride)
	if ws == 0 {
		return nil, fmt.Errorf("spec %s: octave_decode_workspace_bytes(%d, %d, %d, %d) = 0", s.Name, rowsPerCall, hq, c.Splits, partialStride)
	}
	numQ := s.NumQ()
	rowBytes := int64(hq * benchHeadSize * 2)
	cacheBytes := s.CacheBytes(slot, bs)
	need := cacheBytes + 2*int64(numQ)*rowBytes + int64(ws) + 4*int64(c.NumBlocks) + 8*int64(numQ)
	if tm := d.Info.TotalMemory; tm > 0 && uint64(need) > tm {
		return nil, envError{fmt.Errorf("spec %s (%s): needs %d bytes (%s) of device memory (packed cache %d bytes), the device has %d (%s)",
			s.Name, s.shapeString(), need, humanBytes(need), cacheBytes, tm, humanBytes(int64(tm)))}
	}
	defer func() {
		if err != nil {
			c.Free()
			c = nil
		}
	}()
	rng := rand.New(rand.NewPCG(o.Seed, uint64(len(s.Name))*0x9E3779B97F4A7C15+uint64(s.Tokens)))

	// The packed cache: Distinct random slots quantized by the oracle, tiled over the whole cache.
	progress("packed cache %s (%d blocks x %d KV heads x %d tokens x %d B), %d distinct slots tiled",
		humanBytes(cacheBytes), c.NumBlocks, s.KVHeads, bs, slot, o.Distinct)
	if c.Cache, err = allocBench(d, s, "packed cache", cacheBytes, 0); err != nil {
		return c, err
	}
	ks, vs := oracle.DefaultSigns(benchHeadSize), oracle.DefaultSigns(benchHeadSize)
	qz, err := oracle.NewQuantizer(o.Fmt, ks, vs)
	if err != nil {
		return c, err
	}
	nd := int(min(int64(max(o.Distinct, 1)), cacheBytes/int64(slot)))
	tile := make([]byte, nd*slot)
	k, v := make([]float32, benchHeadSize), make([]float32, benchHeadSize)
	for i := 0; i < nd; i++ {
		scale := float32(0.25 + 2*rng.Float64()) // per-token magnitude, so scales vary
		for j := range k {
			k[j] = oracle.F16ToF32(oracle.F32ToF16(scale * float32(rng.NormFloat64())))
			v[j] = oracle.F16ToF32(oracle.F32ToF16(scale * float32(rng.NormFloat64())))
		}
		qz.QuantizeInto(tile[i*slot:(i+1)*slot], k, v)
	}
	if err := c.Cache.Write(0, tile); err != nil {
		return c, err
	}
	for n := int64(len(tile)); n < cacheBytes; {
		m := min(n, cacheBytes-n)
		if err := d.CopyD2D(c.Cache.Ptr+uintptr(n), c.Cache.Ptr, uint64(m)); err != nil {
			return c, err
		}
		n += m
	}

	// Block table: a random permutation of the physical blocks, as after a while of serving.
	c.HostBlockTable = make([]int32, c.NumBlocks)
	for i, p := range rng.Perm(c.NumBlocks) {
		c.HostBlockTable[i] = int32(p)
	}
	c.HostQToReq = make([]int32, numQ)
	c.HostQToKlen = make([]int32, numQ)
	for i := range numQ {
		c.HostQToReq[i] = int32(i / s.QPerReq)
		c.HostQToKlen[i] = int32(s.Klen(i))
	}
	c.HostQuery = make([]uint16, numQ*hq*benchHeadSize)
	for i := range c.HostQuery {
		c.HostQuery[i] = f16Rand(rng)
	}
	if c.BlockTable, err = allocBench(d, s, "block table", 4*int64(c.NumBlocks), 0); err != nil {
		return c, err
	}
	if c.QToReq, err = allocBench(d, s, "q_to_req map", 4*int64(numQ), 0); err != nil {
		return c, err
	}
	if c.QToKlen, err = allocBench(d, s, "q_to_klen map", 4*int64(numQ), 0); err != nil {
		return c, err
	}
	if c.Query, err = allocBench(d, s, "query", int64(numQ)*rowBytes, 0); err != nil {
		return c, err
	}
	if c.Out, err = allocBench(d, s, "output", int64(numQ)*rowBytes, 0xFF); err != nil {
		return c, err
	}
	if c.Partials, err = allocBench(d, s, "split partials", int64(ws), 0); err != nil {
		return c, err
	}
	for _, w := range []struct {
		b    *kernels.Buffer
		data []byte
	}{
		{c.BlockTable, int32Bytes(c.HostBlockTable)}, {c.QToReq, int32Bytes(c.HostQToReq)},
		{c.QToKlen, int32Bytes(c.HostQToKlen)}, {c.Query, uint16Bytes(c.HostQuery)},
	} {
		if err := w.b.Write(0, w.data); err != nil {
			return c, err
		}
	}
	if err := d.Sync(); err != nil {
		return c, err
	}

	base := kernels.DecodeArgs{
		BlockTable: c.BlockTable.Ptr, Partials: c.Partials.Ptr, PartialsBytes: ws,
		OutStrideToken: int64(hq * benchHeadSize), OutStrideHead: benchHeadSize,
		QueryStrideToken: int64(hq * benchHeadSize), QueryStrideHead: benchHeadSize,
		CacheStrideBlock: int64(s.KVHeads * bs * slot), CacheStrideHead: int64(bs * slot), CacheStrideTk: int64(slot),
		Cache: c.Cache.Ptr, Fmt: int32(o.Fmt.ID), Dtype: kernels.F16, HeadSize: benchHeadSize, Tier: kernels.TierPortable,
		NumQHeads: int32(hq), NumKVHeads: int32(s.KVHeads), NumReqs: int32(s.Reqs), NumBlocks: int32(c.NumBlocks),
		BlockSize: int32(bs), MaxBlocks: int32(c.MaxBlocks), NumSplits: int32(c.Splits), QueryGroup: int32(c.QueryGroup),
		PartialStride: partialStride, SMScale: 1.0 / 16, KSigns: signWords(ks), VSigns: signWords(vs),
	}
	for _, r := range calls {
		a := base
		a.Out = c.Out.Ptr + uintptr(int64(r.Lo)*rowBytes)
		a.Query = c.Query.Ptr + uintptr(int64(r.Lo)*rowBytes)
		a.QToReq = c.QToReq.Ptr + uintptr(4*r.Lo)
		a.QToKlen = c.QToKlen.Ptr + uintptr(4*r.Lo)
		a.NumQ = int32(r.Hi - r.Lo)
		c.Args = append(c.Args, a)
	}
	return c, nil
}

func int32Bytes(x []int32) []byte {
	b := make([]byte, 4*len(x))
	for i, v := range x {
		u := uint32(v)
		b[4*i], b[4*i+1], b[4*i+2], b[4*i+3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
	}
	return b
}

func uint16Bytes(x []uint16) []byte {
	b := make([]byte, 2*len(x))
	for i, v := range x {
		b[2*i], b[2*i+1] = byte(v), byte(v>>8)
	}
	return b
}

// Enqueue enqueues one iteration's decode calls (no sync).
func (c *benchCase) Enqueue(d *kernels.Device) error {
	for i, a := range c.Args {
		if err := d.Decode(a); err != nil {
			return fmt.Errorf("spec %s: decode call %d of %d (num_q %d, num_splits %d, query_group %d): %w",
				c.Spec.Name, i+1, len(c.Args), a.NumQ, a.NumSplits, a.QueryGroup, err)
		}
	}
	return nil
}

// ReadOut returns the output rows as fp16 bits.
func (c *benchCase) ReadOut() ([]uint16, error) {
	b, err := c.Out.Bytes()
	if err != nil {
		return nil, err
	}
	out := make([]uint16, len(b)/2)
	for i := range out {
		out[i] = uint16(b[2*i]) | uint16(b[2*i+1])<<8
	}
	return out, nil
}

// CheckOutput verifies that every output value is finite and no row is all zero (every row has
// klen > 0), and that no buffer's canaries were overwritten.
func (c *benchCase) CheckOutput() error {
	for _, b := range []struct {
		name string
		b    *kernels.Buffer
	}{{"packed cache", c.Cache}, {"output", c.Out}, {"split partials", c.Partials}} {
		if err := b.b.CheckCanaries(b.name); err != nil {
			return fmt.Errorf("spec %s: %w", c.Spec.Name, err)
		}
	}
	out, err := c.ReadOut()
	if err != nil {
		return err
	}
	row := c.Spec.Hq() * benchHeadSize
	for i := 0; i < len(out); i += row {
		nonZero := false
		for j, h := range out[i : i+row] {
			if h&0x7C00 == 0x7C00 {
				return fmt.Errorf("spec %s: output row %d, element %d is not finite (fp16 0x%04x)", c.Spec.Name, i/row, j, h)
			}
			if h&0x7FFF != 0 {
				nonZero = true
			}
		}
		if !nonZero {
			return fmt.Errorf("spec %s: output row %d is all zero although its klen is %d", c.Spec.Name, i/row, c.HostQToKlen[i/row])
		}
	}
	return nil
}

// Free releases the case's buffers.
func (c *benchCase) Free() {
	for _, b := range []*kernels.Buffer{c.Cache, c.Query, c.Out, c.BlockTable, c.QToReq, c.QToKlen, c.Partials} {
		if b != nil {
			b.Free()
		}
	}
}

// timingStats summarises timed samples.
type timingStats struct {
	MedianMS float64   `json:"median_ms"`
	MinMS    float64   `json:"min_ms"`
	SamplesM []float64 `json:"samples_ms"`
}

func summarise(samples []time.Duration) timingStats {
	ms := make([]float64, len(samples))
	for i, s := range samples {
		ms[i] = float64(s.Nanoseconds()) / 1e6
	}
	st := timingStats{SamplesM: ms}
	if len(ms) == 0 {
		return st
	}
	sorted := slices.Clone(ms)
	slices.Sort(sorted)
	n := len(sorted)
	st.MinMS = sorted[0]
	if n%2 == 1 {
		st.MedianMS = sorted[n/2]
	} else {
		st.MedianMS = (sorted[n/2-1] + sorted[n/2]) / 2
	}
	return st
}

// l2Flusher evicts the GPU caches between timed calls by copying one half of a scratch buffer
// onto the other.
type l2Flusher struct {
	d *kernels.Device
	b *kernels.Buffer
}

func (f *l2Flusher) Flush() error {
	if f == nil || f.b == nil {
		return nil
	}
	half := f.b.Len / 2
	if err := f.d.CopyD2D(f.b.Ptr+uintptr(half), f.b.Ptr, uint64(half)); err != nil {
		return err
	}
	return f.d.Sync()
}

// timeCase runs warm-up iterations, then reps iterations each timed by the host clock around the
// enqueue and the sync (the L2 flushed before each, untimed, when fl is not nil), then reps
// iterations enqueued back to back with one sync (the "stream" time, per iteration).
func timeCase(d *kernels.Device, c *benchCase, reps, warmup int, fl *l2Flusher) (per timingStats, streamMS float64, err error) {
	for range warmup {
		if err := c.Enqueue(d); err != nil {
			return per, 0, err
		}
		if err := d.Sync(); err != nil {
			return per, 0, fmt.Errorf("spec %s: warm-up: %w", c.Spec.Name, err)
		}
	}
	samples := make([]time.Duration, 0, reps)
	for range reps {
		if err := fl.Flush(); err != nil {
			return per, 0, fmt.Errorf("L2 flush: %w", err)
		}
		t0 := time.Now()
		if err := c.Enqueue(d); err != nil {
			return per, 0, err
		}
		if err := d.Sync(); err != nil {
			return per, 0, fmt.Errorf("spec %s: %w", c.Spec.Name, err)
		}
		samples = append(samples, time.Since(t0))
	}
	t0 := time.Now()
	for range reps {
		if err := c.Enqueue(d); err != nil {
			return per, 0, err
		}
	}
	if err := d.Sync(); err != nil {
		return per, 0, fmt.Errorf("spec %s: %w", c.Spec.Name, err)
	}
	streamMS = float64(time.Since(t0).Nanoseconds()) / 1e6 / float64(max(reps, 1))
	return summarise(samples), streamMS, nil
}

// copyResult is the device-to-device copy bandwidth measurement.
type copyResult struct {
	Bytes      int64   `json:"copy_bytes"`
	MovedBytes int64   `json:"moved_bytes"` // read + write
	MedianMS   float64 `json:"median_ms"`
	MinMS      float64 `json:"min_ms"`
	GBps       float64 `json:"gbps"` // moved bytes / median time, 1e9 B/s
	Note       string  `json:"note,omitempty"`
}

// measureCopy times octave_copy_d2d of n bytes (halving n down to 64 MiB when it cannot be
// allocated), read + write counted.
func measureCopy(d *kernels.Device, n int64, reps, warmup int) (copyResult, error) {
	var res copyResult
	var src, dst *kernels.Buffer
	for {
		var err error
		src, err = d.Alloc(int(n), 0x5A)
		if err == nil {
			dst, err = d.Alloc(int(n), 0)
			if err != nil {
				src.Free()
			}
		}
		if err == nil {
			break
		}
		d.Sync()
		d.Sync()
		if n/2 < 64<<20 {
			return res, envError{fmt.Errorf("copy bandwidth: cannot allocate two buffers of %d bytes (%s): %w", n, humanBytes(n), err)}
		}
		res.Note = fmt.Sprintf("two buffers of %s could not be allocated; used %s", humanBytes(n), humanBytes(n/2))
		n /= 2
	}
	defer src.Free()
	defer dst.Free()
	samples := make([]time.Duration, 0, reps)
	for i := range warmup + reps {
		t0 := time.Now()
		if err := d.CopyD2D(dst.Ptr, src.Ptr, uint64(n)); err != nil {
			return res, err
		}
		if err := d.Sync(); err != nil {
			return res, err
		}
		if i >= warmup {
			samples = append(samples, time.Since(t0))
		}
	}
	st := summarise(samples)
	res.Bytes, res.MovedBytes, res.MedianMS, res.MinMS = n, 2*n, st.MedianMS, st.MinMS
	if st.MedianMS > 0 {
		res.GBps = float64(res.MovedBytes) / (st.MedianMS * 1e6)
	}
	return res, nil
}

// syncFloor is the median host time of a sync with nothing queued.
func syncFloor(d *kernels.Device, reps int) (float64, error) {
	samples := make([]time.Duration, 0, reps)
	for range reps {
		t0 := time.Now()
		if err := d.Sync(); err != nil {
			return 0, err
		}
		samples = append(samples, time.Since(t0))
	}
	return summarise(samples).MedianMS, nil
}

// benchResult is one row of the report.
type benchResult struct {
	Spec         string      `json:"spec"`
	Summary      string      `json:"summary"`
	Reqs         int         `json:"num_reqs"`
	Tokens       int         `json:"seq_len"`
	QPerReq      int         `json:"queries_per_req"`
	NumQ         int         `json:"num_q"`
	KVHeads      int         `json:"num_kv_heads"`
	QHeads       int         `json:"num_q_heads"`
	G            int         `json:"gqa_group"`
	Splits       int         `json:"num_splits"`
	SplitsAuto   bool        `json:"num_splits_auto"`
	QueryGroup   int         `json:"query_group"`
	Calls        int         `json:"decode_calls_per_iter"`
	NumBlocks    int         `json:"num_blocks"`
	CacheBytes   int64       `json:"cache_bytes"`
	Bytes        int64       `json:"bytes_read"`
	FP16Bytes    int64       `json:"fp16_kv_bytes"`
	QKPairs      int64       `json:"qk_pairs"`
	Timing       timingStats `json:"timing"`
	MedianMS     float64     `json:"median_ms"`
	MinMS        float64     `json:"min_ms"`
	StreamMS     float64     `json:"stream_ms"`
	GBps         float64     `json:"gbps"`
	StreamGBps   float64     `json:"stream_gbps"`
	Fraction     float64     `json:"hbm_fraction"`
	GQKps        float64     `json:"gqk_per_s"`
	Error        string      `json:"error,omitempty"`
	ErrorIsEnv   bool        `json:"-"`
	ErrorIsCheck bool        `json:"-"`
}

// benchReport is the JSON document of --json.
type benchReport struct {
	Tool        string         `json:"tool"`
	Version     string         `json:"version"`
	Date        string         `json:"date"`
	GoRevision  string         `json:"go_vcs_revision,omitempty"`
	Library     map[string]any `json:"library"`
	Device      map[string]any `json:"device"`
	Settings    map[string]any `json:"settings"`
	HBM         *copyResult    `json:"hbm,omitempty"`
	HBMGBps     float64        `json:"hbm_gbps"`
	SyncFloorMS float64        `json:"sync_floor_ms"`
	Results     []benchResult  `json:"results"`
}

func fileSHA256(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:]), nil
}

func vcsRevision() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	rev, modified := "", ""
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = "+modified"
			}
		}
	}
	if rev == "" {
		return ""
	}
	return rev + modified
}

func benchUsage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintf(w, `usage: octant bench --lib PATH [--specs LIST] [--reps N] [--warmup N] [--splits N|auto[,...]] [--json FILE] [flags]

Times the portable decode tier (octave_decode: split-KV attention + reduce) of a kernel library on
a device, for these batch shapes (fp16 query, block size 16, LBHNC cache, default sign patterns,
sm_scale 1/16, G = Hq/Hkv = 6; "100k" is 100000 tokens, "2k" is 2048 queries):

`)
	for _, s := range benchSpecs {
		if !s.Hidden {
			fmt.Fprintf(w, "  %-9s %s\n", s.Name, strings.ReplaceAll(s.Summary, "\n", "\n            "))
		}
	}
	fmt.Fprintf(w, `
  q2ks100k: decode takes at most 128 query tokens per request (KERNELS.md §3.3; longer chunks go to
  prefill in vLLM), so one iteration is ⌈2048/--max-rows⌉ = 16 decode calls of 128 consecutive
  rows, enqueued back to back, then one sync; its time is the whole chunk's. Each call reads the
  request's K/V again: the spec is compute-bound and its GB/s is an effective figure.
  Test shapes: `)
	var hidden []string
	for _, s := range benchSpecs {
		if s.Hidden {
			hidden = append(hidden, s.Name)
		}
	}
	fmt.Fprintf(w, `%s.

Cache: --distinct random slots (fp16 K/V quantized by the oracle) tiled over every block, never
zeros; the block table is a random permutation; queries are random fp16.
Timing: --warmup iterations, then --reps iterations each timed by the host clock around the decode
call(s) and octave_sync, with the L2 flushed before each (an untimed d2d copy of --flush-bytes)
unless --flush-l2=false; median and min are reported. "stream" is the mean of --reps iterations
enqueued back to back with one sync (no per-call sync latency, caches warm).
bytes = Σ over requests of Hkv × seq_len × slot bytes (each KV head's slots once per request: the
kernel reads them once for all G query heads); GB/s = bytes / median; HBM = device-to-device copy
bandwidth measured in the same run (octave_copy_d2d of --copy-bytes, read + write counted);
%%HBM = GB/s / HBM. Gqk/s = (query head, token) scores per second.
num_splits auto = clamp(⌈16·SMs / (⌈rows per call / query_group⌉ · Hkv)⌉, 1, min(1024, ⌊kv_max/T⌋)),
  T = 768 tokens, 384 when query_group · G > 8;
query_group auto = min(4, query tokens per request).
Progress goes to stderr, the table to stdout, all numbers to --json FILE.

Exit status: 0 success; 1 a decode call failed or its output was not finite; 2 usage or
environment error (library missing or invalid, no device, out of device memory).

flags:
`, strings.Join(hidden, ", "))
	fs.PrintDefaults()
}

func runBench(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	lib := fs.String("lib", os.Getenv("OCTANT_LIB"), "kernel library (liboctave_cuda.so, liboctave_hip.so, liboctave_emu.so); default $OCTANT_LIB")
	device := fs.Int("device", 0, "device index")
	specList := fs.String("specs", defaultBenchSpecs, "comma-separated specs")
	reps := fs.Int("reps", 50, "timed iterations per spec")
	warmup := fs.Int("warmup", 5, "untimed iterations before timing")
	splitList := fs.String("splits", "auto", "num_splits: auto, N (1..1024), or a comma-separated list to sweep")
	qg := fs.Int("query-group", 0, "query_group 1..4; 0 = auto (min(4, query tokens per request))")
	maxRows := fs.Int("max-rows", 128, "query rows of one request per decode call (0 = all in one call)")
	fmtName := fs.String("fmt", "octave_k3v4", "cache format: octave_k3v4, octave_k3v3, octave_k3v3_compact (or 4, 3, 19)")
	blockSize := fs.Int("block-size", 16, "tokens per cache block")
	distinct := fs.Int("distinct", 4096, "distinct random slots quantized on the host and tiled over the cache")
	seed := fs.Uint64("seed", 1, "random seed (cache, block table, queries)")
	copyBytesS := fs.String("copy-bytes", "4GiB", "size of the d2d copy that measures HBM bandwidth (0 = skip)")
	copyReps := fs.Int("copy-reps", 20, "timed d2d copies")
	flushL2 := fs.Bool("flush-l2", true, "flush the L2 (an untimed d2d copy) before each timed iteration")
	flushBytesS := fs.String("flush-bytes", "256MiB", "scratch size of the L2 flush")
	jsonPath := fs.String("json", "", "write all numbers as JSON to FILE")
	fs.Usage = func() { benchUsage(stderr, fs) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "octant bench: "+format+"\n", a...)
		fmt.Fprintln(stderr, "run 'octant bench -h' for the flags")
		return 2
	}
	if fs.NArg() != 0 {
		return usageErr("unexpected argument %q", fs.Arg(0))
	}
	specs, err := parseBenchSpecs(*specList)
	if err != nil {
		return usageErr("%v", err)
	}
	splits, err := parseSplits(*splitList)
	if err != nil {
		return usageErr("%v", err)
	}
	id, err := oracle.ParseFormatID(*fmtName)
	if err != nil {
		return usageErr("--fmt: %v", err)
	}
	f, err := oracle.KernelFormat(id)
	if err != nil {
		return usageErr("--fmt: %v", err)
	}
	copyBytes, err := parseByteSize(*copyBytesS)
	if err != nil {
		return usageErr("--copy-bytes: %v", err)
	}
	flushBytes, err := parseByteSize(*flushBytesS)
	if err != nil {
		return usageErr("--flush-bytes: %v", err)
	}
	switch {
	case *reps < 1:
		return usageErr("--reps %d: need at least 1", *reps)
	case *warmup < 0:
		return usageErr("--warmup %d: need at least 0", *warmup)
	case *qg < 0 || *qg > 4:
		return usageErr("--query-group %d: expected 0 (auto) or 1..4", *qg)
	case *maxRows < 0:
		return usageErr("--max-rows %d: expected ≥ 0", *maxRows)
	case *blockSize < 1:
		return usageErr("--block-size %d: expected ≥ 1", *blockSize)
	case *distinct < 1:
		return usageErr("--distinct %d: expected ≥ 1", *distinct)
	case *copyReps < 1:
		return usageErr("--copy-reps %d: need at least 1", *copyReps)
	case *lib == "":
		return usageErr("--lib is required (or set OCTANT_LIB): a kernel library built with make cuda, make hip or make emu")
	}
	progress := func(format string, a ...any) { fmt.Fprintf(stderr, "bench: "+format+"\n", a...) }

	l, err := kernels.Open(*lib)
	if err != nil {
		fmt.Fprintf(stderr, "octant bench: %v\n", err)
		return 2
	}
	defer l.Close()
	libSum, err := fileSHA256(*lib)
	if err != nil {
		fmt.Fprintf(stderr, "octant bench: %v\n", err)
		return 2
	}
	d, err := l.OpenDevice(*device)
	if err != nil {
		if errors.Is(err, kernels.ErrNoDevice) {
			fmt.Fprintf(stderr, "octant bench: no device: %v\n", err)
		} else {
			fmt.Fprintf(stderr, "octant bench: opening device %d: %v\n", *device, err)
		}
		return 2
	}
	defer d.Close()
	info := d.Info
	progress("library %s (sha256 %s…; %s)", *lib, libSum[:16], l.BuildInfo())
	progress("device %d: %s (%s, %s, %d SMs/CUs, %s)", *device, info.Name, info.Arch, info.Runtime, info.ComputeUnits, humanBytes(int64(info.TotalMemory)))

	opts := benchOptions{Fmt: f, BlockSize: *blockSize, QueryGroup: *qg, MaxRows: *maxRows, Distinct: *distinct,
		Seed: *seed, Reps: *reps, Warmup: *warmup, FlushL2: *flushL2, FlushBytes: flushBytes}
	rep := benchReport{Tool: "octant bench", Version: Version, Date: time.Now().UTC().Format(time.RFC3339), GoRevision: vcsRevision(),
		Library: map[string]any{"path": *lib, "sha256": libSum, "build_info": l.BuildInfo(), "abi_version": kernels.ABIVersion},
		Device: map[string]any{"index": *device, "name": info.Name, "arch": info.Arch, "runtime": info.Runtime,
			"compute_units": info.ComputeUnits, "total_memory": info.TotalMemory},
		Settings: map[string]any{"fmt": f.Name(), "fmt_id": int(f.ID), "slot_bytes": f.SlotBytes(), "block_size": *blockSize,
			"layout": "LBHNC", "dtype": "fp16", "signs": "default (FORMAT.md §2), K and V", "sm_scale": 1.0 / 16,
			"tier": "portable", "reps": *reps, "warmup": *warmup, "flush_l2": *flushL2, "flush_bytes": flushBytes,
			"max_rows": *maxRows, "query_group": *qg, "splits": *splitList, "distinct_slots": *distinct, "seed": *seed,
			"timing": "host wall clock around the decode call(s) + octave_sync; stream = mean of reps iterations enqueued back to back, one sync"},
	}

	envFail, checkFail := false, false
	if rep.SyncFloorMS, err = syncFloor(d, 20); err != nil {
		fmt.Fprintf(stderr, "octant bench: sync: %v\n", err)
		return 2
	}
	if copyBytes > 0 {
		progress("HBM: timing octave_copy_d2d of %s, %d reps", humanBytes(copyBytes), *copyReps)
		cr, err := measureCopy(d, copyBytes, *copyReps, 3)
		if err != nil {
			fmt.Fprintf(stderr, "octant bench: %v\n", err)
			envFail = true
		} else {
			if cr.Note != "" {
				progress("HBM: %s", cr.Note)
			}
			progress("HBM: %s copied (read+write %s) in %.3f ms median → %.1f GB/s", humanBytes(cr.Bytes), humanBytes(cr.MovedBytes), cr.MedianMS, cr.GBps)
			rep.HBM, rep.HBMGBps = &cr, cr.GBps
		}
	}
	var fl *l2Flusher
	if *flushL2 && flushBytes >= 2 {
		b, err := d.Alloc(int(flushBytes), 0x33)
		if err != nil {
			d.Sync()
			d.Sync()
			fmt.Fprintf(stderr, "octant bench: cannot allocate the L2 flush scratch of %d bytes (%s): %v\n", flushBytes, humanBytes(flushBytes), err)
			return 2
		}
		defer b.Free()
		fl = &l2Flusher{d: d, b: b}
	}

	for _, s := range specs {
		for _, ns := range splits {
			r := benchResult{Spec: s.Name, Summary: strings.ReplaceAll(s.Summary, "\n", " "), Reqs: s.Reqs, Tokens: s.Tokens, QPerReq: s.QPerReq,
				NumQ: s.NumQ(), KVHeads: s.KVHeads, QHeads: s.Hq(), G: s.G, SplitsAuto: ns == 0,
				CacheBytes: s.CacheBytes(f.SlotBytes(), *blockSize), Bytes: s.ReadBytes(f.SlotBytes()),
				FP16Bytes: s.FP16Bytes(), QKPairs: s.QKPairs(), Calls: len(s.Calls(*maxRows))}
			sp := func(format string, a ...any) { progress(s.Name+": "+format, a...) }
			sp("%s", s.shapeString())
			c, err := setupBench(d, s, ns, opts, sp)
			if err == nil {
				r.Splits, r.QueryGroup, r.NumBlocks = c.Splits, c.QueryGroup, c.NumBlocks
				sp("num_splits %d, query_group %d, %d decode call(s) per iteration; %d warm-up, %d timed", c.Splits, c.QueryGroup, len(c.Args), *warmup, *reps)
				var per timingStats
				var stream float64
				per, stream, err = timeCase(d, c, *reps, *warmup, fl)
				if err == nil {
					err = c.CheckOutput()
				}
				if err == nil {
					r.Timing, r.MedianMS, r.MinMS, r.StreamMS = per, per.MedianMS, per.MinMS, stream
					r.GBps = float64(r.Bytes) / (per.MedianMS * 1e6)
					r.StreamGBps = float64(r.Bytes) / (stream * 1e6)
					r.GQKps = float64(r.QKPairs) / (per.MedianMS * 1e6)
					if rep.HBMGBps > 0 {
						r.Fraction = r.GBps / rep.HBMGBps
					}
					sp("median %.4f ms, min %.4f ms, stream %.4f ms; %s GB/s", r.MedianMS, r.MinMS, r.StreamMS, numStr(r.GBps))
				}
				c.Free()
			}
			if err != nil {
				r.Error = err.Error()
				var ee envError
				if errors.As(err, &ee) {
					r.ErrorIsEnv, envFail = true, true
				} else {
					r.ErrorIsCheck, checkFail = true, true
				}
				fmt.Fprintf(stderr, "octant bench: %v\n", err)
			}
			rep.Results = append(rep.Results, r)
		}
	}

	writeBenchTable(stdout, &rep)
	if *jsonPath != "" {
		b, err := json.MarshalIndent(&rep, "", "  ")
		if err == nil {
			err = os.WriteFile(*jsonPath, append(b, '\n'), 0o644)
		}
		if err != nil {
			fmt.Fprintf(stderr, "octant bench: writing %s: %v\n", *jsonPath, err)
			return 2
		}
		progress("wrote %s", *jsonPath)
	}
	switch {
	case envFail:
		return 2
	case checkFail:
		return 1
	}
	return 0
}

// numStr prints a rate with about four significant digits and no exponent.
func numStr(x float64) string {
	switch {
	case x >= 1000:
		return fmt.Sprintf("%.0f", x)
	case x >= 10:
		return fmt.Sprintf("%.1f", x)
	case x >= 1:
		return fmt.Sprintf("%.2f", x)
	}
	return fmt.Sprintf("%.3g", x)
}

// writeBenchTable prints the results table and the HBM line.
func writeBenchTable(w io.Writer, rep *benchReport) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "spec\treqs x q\tseq_len\tHq/Hkv\tsplits\tqg\tcalls\tMB read\tmedian ms\tmin ms\tstream ms\tGB/s\t% HBM\tGqk/s\t")
	for _, r := range rep.Results {
		if r.Error != "" {
			fmt.Fprintf(tw, "%s\t%dx%d\t%d\t%d/%d\t-\t-\t-\t%.1f\tFAILED\t-\t-\t-\t-\t-\t\n", r.Spec, r.Reqs, r.QPerReq, r.Tokens, r.QHeads, r.KVHeads, float64(r.Bytes)/1e6)
			continue
		}
		frac := "-"
		if r.Fraction > 0 {
			frac = fmt.Sprintf("%.1f", 100*r.Fraction)
		}
		fmt.Fprintf(tw, "%s\t%dx%d\t%d\t%d/%d\t%d\t%d\t%d\t%.1f\t%.4f\t%.4f\t%.4f\t%s\t%s\t%s\t\n",
			r.Spec, r.Reqs, r.QPerReq, r.Tokens, r.QHeads, r.KVHeads, r.Splits, r.QueryGroup, r.Calls, float64(r.Bytes)/1e6,
			r.MedianMS, r.MinMS, r.StreamMS, numStr(r.GBps), frac, numStr(r.GQKps))
	}
	tw.Flush()
	if rep.HBM != nil {
		fmt.Fprintf(w, "HBM (octave_copy_d2d of %s, read+write): %.1f GB/s (median %.3f ms); sync floor %.4f ms; device %s\n",
			humanBytes(rep.HBM.Bytes), rep.HBM.GBps, rep.HBM.MedianMS, rep.SyncFloorMS, rep.Device["name"])
	} else {
		fmt.Fprintf(w, "HBM: not measured; sync floor %.4f ms; device %s\n", rep.SyncFloorMS, rep.Device["name"])
	}
}
