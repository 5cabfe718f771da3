package bench

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/octant-kv/octant/kernels"
	"github.com/octant-kv/octant/oracle"
)

// Options are the settings of every case of a run.
type Options struct {
	Fmt        oracle.Format
	BlockSize  int // tokens per cache block
	QueryGroup int // query_group 1..4; 0: auto (AutoQueryGroup)
	MaxRows    int // query rows of one request per decode call; 0: all in one call
	Distinct   int // distinct random slots tiled over the cache
	Seed       uint64
	Reps       int   // timed iterations
	Warmup     int   // untimed iterations before them
	FlushL2    bool  // flush the L2 before each timed iteration
	FlushBytes int64 // scratch size of the L2 flush
}

// Case is one spec set up on a device: the buffers and the decode calls of one iteration.
type Case struct {
	Spec       Spec
	Splits     int
	QueryGroup int
	NumBlocks  int
	MaxBlocks  int
	Args       []kernels.DecodeArgs // a decode spec's calls of one iteration
	Rows       []RowRange           // the query rows of each decode call of Args
	Prefill    *kernels.PrefillArgs // a prefill spec's one call

	// Host copies of the inputs: what the judge gives the oracle (Judge), beside the packed
	// cache, which it reads back from the device.
	HostQuery      []uint16
	HostBlockTable []int32
	HostQToReq     []int32
	HostQToKlen    []int32
	HostK, HostV   []uint16 // prefill: the chunk's own K and V, [NumQ][Hkv][HeadSize]
	HostCuSeqlens  []int32  // prefill: cu_seqlens_q
	HostSeqLens    []int32  // prefill: seq_lens

	Cache, Query, Out, BlockTable, QToReq, QToKlen, Partials *kernels.Buffer
	K, V, CuSeqlens, SeqLens                                 *kernels.Buffer // prefill: the chunk's own K/V and the sequence arrays
}

// EnvError is a failure of the environment (library, device, device memory), not of the decode.
type EnvError struct{ Err error }

func (e EnvError) Error() string { return e.Err.Error() }
func (e EnvError) Unwrap() error { return e.Err }

// alloc allocates one buffer, turning a failure into an EnvError that names the spec, the buffer
// and its size. A failed allocation leaves the runtime's last error set (cudaMalloc does): two
// syncs clear it so that the next launch check does not report it.
func alloc(d *kernels.Device, s Spec, what string, n int64, fill byte) (*kernels.Buffer, error) {
	b, err := d.Alloc(int(n), fill)
	if err != nil {
		d.Sync()
		d.Sync()
		return nil, EnvError{fmt.Errorf("spec %s (%s): cannot allocate the %s, %d bytes (%s): %w", s.Name, s.Shape(), what, n, HumanBytes(n), err)}
	}
	return b, nil
}

// f16Rand is a standard normal value rounded to fp16, as raw bits.
func f16Rand(rng *rand.Rand) uint16 { return oracle.F32ToF16(float32(rng.NormFloat64())) }

// decodeShape is what num_splits "auto" depends on for decode spec s: the most query rows of one
// call, the query_group and kv_max.
func decodeShape(s Spec, o Options) (rowsPerCall, queryGroup, kvMax int) {
	queryGroup = o.QueryGroup
	if queryGroup == 0 {
		queryGroup = AutoQueryGroup(s)
	}
	for _, r := range s.Calls(o.MaxRows) {
		rowsPerCall = max(rowsPerCall, r.Hi-r.Lo)
	}
	return rowsPerCall, queryGroup, s.BlocksPerReq(o.BlockSize) * o.BlockSize
}

// TierAutoSplits is num_splits "auto" for decode spec s on tier t: AutoSplitsMMA on the mma tier,
// AutoSplits on the others.
func TierAutoSplits(t kernels.Tier, s Spec, o Options, computeUnits int) int {
	rows, qg, kvMax := decodeShape(s, o)
	if t == kernels.TierMMA {
		return AutoSplitsMMA(o.Fmt.ID, rows, qg, s.G, s.KVHeads, kvMax, computeUnits)
	}
	return AutoSplits(rows, qg, s.G, s.KVHeads, kvMax, computeUnits)
}

// Setup allocates and fills the buffers of spec s with splits (0: auto, AutoSplits) and builds its calls.
// progress receives a line about the cache it fills. The inputs depend only on s and o.Seed.
func Setup(d *kernels.Device, s Spec, splits int, o Options, progress func(string, ...any)) (c *Case, err error) {
	slot := o.Fmt.SlotBytes()
	bs := o.BlockSize
	hq := s.Hq()
	c = &Case{Spec: s, MaxBlocks: s.BlocksPerReq(bs)}
	c.NumBlocks = s.Reqs * c.MaxBlocks
	if int64(c.NumBlocks)*int64(s.KVHeads)*int64(bs) > math.MaxInt32 || c.NumBlocks > math.MaxInt32 {
		return nil, fmt.Errorf("spec %s: %d blocks of %d tokens do not fit the ABI's int32 counts", s.Name, c.NumBlocks, bs)
	}
	numQ := s.NumQ()
	rowBytes := int64(hq * HeadSize * 2)
	cacheBytes := s.CacheBytes(slot, bs)
	var calls []RowRange
	var ws uint64
	const partialStride = oracle.DefaultPartialStride
	need := cacheBytes + 2*int64(numQ)*rowBytes + 4*int64(c.NumBlocks) + 8*int64(numQ)
	if s.Prefill {
		need += 2 * int64(numQ*s.KVHeads*HeadSize*2) // the chunk's K and V
		c.Splits = splits                            // octave_prefill's num_splits (0: the tier chooses)
	} else {
		var rowsPerCall, kvMax int
		rowsPerCall, c.QueryGroup, kvMax = decodeShape(s, o)
		calls = s.Calls(o.MaxRows)
		c.Splits = splits
		if c.Splits == 0 {
			c.Splits = AutoSplits(rowsPerCall, c.QueryGroup, s.G, s.KVHeads, kvMax, d.Info.ComputeUnits)
		}
		ws = d.WorkspaceBytes(rowsPerCall, hq, c.Splits, partialStride)
		if ws == 0 {
			return nil, fmt.Errorf("spec %s: octave_decode_workspace_bytes(%d, %d, %d, %d) = 0", s.Name, rowsPerCall, hq, c.Splits, partialStride)
		}
		need += int64(ws)
	}
	if tm := d.Info.TotalMemory; tm > 0 && uint64(need) > tm {
		return nil, EnvError{fmt.Errorf("spec %s (%s): needs %d bytes (%s) of device memory (packed cache %d bytes), the device has %d (%s)",
			s.Name, s.Shape(), need, HumanBytes(need), cacheBytes, tm, HumanBytes(int64(tm)))}
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
		HumanBytes(cacheBytes), c.NumBlocks, s.KVHeads, bs, slot, o.Distinct)
	if c.Cache, err = alloc(d, s, "packed cache", cacheBytes, 0); err != nil {
		return c, err
	}
	ks, vs := oracle.DefaultSigns(HeadSize), oracle.DefaultSigns(HeadSize)
	qz, err := oracle.NewQuantizer(o.Fmt, ks, vs)
	if err != nil {
		return c, err
	}
	nd := int(min(int64(max(o.Distinct, 1)), cacheBytes/int64(slot)))
	tile := make([]byte, nd*slot)
	k, v := make([]float32, HeadSize), make([]float32, HeadSize)
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
	c.HostQuery = make([]uint16, numQ*hq*HeadSize)
	for i := range c.HostQuery {
		c.HostQuery[i] = f16Rand(rng)
	}
	if c.BlockTable, err = alloc(d, s, "block table", 4*int64(c.NumBlocks), 0); err != nil {
		return c, err
	}
	if s.Prefill {
		return c, setupPrefill(d, c, o, rng)
	}
	if c.QToReq, err = alloc(d, s, "q_to_req map", 4*int64(numQ), 0); err != nil {
		return c, err
	}
	if c.QToKlen, err = alloc(d, s, "q_to_klen map", 4*int64(numQ), 0); err != nil {
		return c, err
	}
	if c.Query, err = alloc(d, s, "query", int64(numQ)*rowBytes, 0); err != nil {
		return c, err
	}
	if c.Out, err = alloc(d, s, "output", int64(numQ)*rowBytes, 0xFF); err != nil {
		return c, err
	}
	if c.Partials, err = alloc(d, s, "split partials", int64(ws), 0); err != nil {
		return c, err
	}
	for _, w := range []struct {
		b    *kernels.Buffer
		data []byte
	}{
		{c.BlockTable, kernels.Int32Bytes(c.HostBlockTable)}, {c.QToReq, kernels.Int32Bytes(c.HostQToReq)},
		{c.QToKlen, kernels.Int32Bytes(c.HostQToKlen)}, {c.Query, kernels.Uint16Bytes(c.HostQuery)},
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
		OutStrideToken: int64(hq * HeadSize), OutStrideHead: HeadSize,
		QueryStrideToken: int64(hq * HeadSize), QueryStrideHead: HeadSize,
		CacheStrideBlock: int64(s.KVHeads * bs * slot), CacheStrideHead: int64(bs * slot), CacheStrideTk: int64(slot),
		Cache: c.Cache.Ptr, Fmt: int32(o.Fmt.ID), Dtype: kernels.F16, HeadSize: HeadSize, Tier: kernels.TierPortable,
		NumQHeads: int32(hq), NumKVHeads: int32(s.KVHeads), NumReqs: int32(s.Reqs), NumBlocks: int32(c.NumBlocks),
		BlockSize: int32(bs), MaxBlocks: int32(c.MaxBlocks), NumSplits: int32(c.Splits), QueryGroup: int32(c.QueryGroup),
		PartialStride: partialStride, SMScale: 1.0 / 16, KSigns: kernels.SignWords(ks.Words()), VSigns: kernels.SignWords(vs.Words()),
	}
	for _, r := range calls {
		a := base
		a.Out = c.Out.Ptr + uintptr(int64(r.Lo)*rowBytes)
		a.Query = c.Query.Ptr + uintptr(int64(r.Lo)*rowBytes)
		a.QToReq = c.QToReq.Ptr + uintptr(4*r.Lo)
		a.QToKlen = c.QToKlen.Ptr + uintptr(4*r.Lo)
		a.NumQ = int32(r.Hi - r.Lo)
		c.Args = append(c.Args, a)
		c.Rows = append(c.Rows, r)
	}
	return c, nil
}

// SetTier makes every decode call of the case run on tier t. The output buffer is refilled with
// 0xFF first, so that a tier that writes nothing fails CheckOutput instead of passing on the
// previous tier's rows.
func (c *Case) SetTier(t kernels.Tier) error {
	for i := range c.Args {
		c.Args[i].Tier = t
	}
	if c.Prefill != nil {
		c.Prefill.Tier = t
	}
	return c.Out.Write(0, bytes.Repeat([]byte{0xFF}, c.Out.Len))
}

// Enqueue enqueues one iteration's decode calls, or its prefill call (no sync).
func (c *Case) Enqueue(d *kernels.Device) error {
	if c.Prefill != nil {
		if err := d.Prefill(*c.Prefill); err != nil {
			return fmt.Errorf("spec %s: prefill call (%d query tokens): %w", c.Spec.Name, c.Prefill.NumTokens, err)
		}
		return nil
	}
	for i, a := range c.Args {
		if err := d.Decode(a); err != nil {
			return fmt.Errorf("spec %s: decode call %d of %d (num_q %d, num_splits %d, query_group %d): %w",
				c.Spec.Name, i+1, len(c.Args), a.NumQ, a.NumSplits, a.QueryGroup, err)
		}
	}
	return nil
}

// ReadOut returns the output rows as fp16 bits.
func (c *Case) ReadOut() ([]uint16, error) {
	b, err := c.Out.Bytes()
	if err != nil {
		return nil, err
	}
	return kernels.BytesUint16(b), nil
}

// CheckOutput verifies that every output value is finite and no row is all zero (every row has
// klen > 0), and that no buffer's canaries were overwritten.
func (c *Case) CheckOutput() error {
	for _, b := range []struct {
		name string
		b    *kernels.Buffer
	}{{"packed cache", c.Cache}, {"output", c.Out}, {"split partials", c.Partials}} {
		if b.b == nil {
			continue
		}
		if err := b.b.CheckCanaries(b.name); err != nil {
			return fmt.Errorf("spec %s: %w", c.Spec.Name, err)
		}
	}
	out, err := c.ReadOut()
	if err != nil {
		return err
	}
	return checkRows(c.Spec, out, c.HostQToKlen)
}

// checkRows is CheckOutput's check of the output values: out holds the rows of s, klen their klens.
func checkRows(s Spec, out []uint16, klen []int32) error {
	row := s.Hq() * HeadSize
	for i := 0; i < len(out); i += row {
		nonZero := false
		for j, h := range out[i : i+row] {
			if h&0x7C00 == 0x7C00 {
				return fmt.Errorf("spec %s: output row %d, element %d is not finite (fp16 0x%04x)", s.Name, i/row, j, h)
			}
			if h&0x7FFF != 0 {
				nonZero = true
			}
		}
		if !nonZero {
			return fmt.Errorf("spec %s: output row %d is all zero although its klen is %d", s.Name, i/row, klen[i/row])
		}
	}
	return nil
}

// Free releases the case's buffers.
func (c *Case) Free() {
	for _, b := range []*kernels.Buffer{c.Cache, c.Query, c.Out, c.BlockTable, c.QToReq, c.QToKlen, c.Partials, c.K, c.V, c.CuSeqlens, c.SeqLens} {
		if b != nil {
			b.Free()
		}
	}
}

// setupPrefill completes a prefill spec's case: the query rows of every request are one chunk
// whose own K and V (random fp16, Hkv heads) go to octave_prefill with the packed prefix; the
// sequence is the request's Tokens (prefix Tokens − QPerReq, then the chunk).
func setupPrefill(d *kernels.Device, c *Case, o Options, rng *rand.Rand) error {
	s := c.Spec
	numQ, hq := s.NumQ(), s.Hq()
	cu := make([]int32, s.Reqs+1)
	sl := make([]int32, s.Reqs)
	for r := range s.Reqs {
		cu[r+1] = int32((r + 1) * s.QPerReq)
		sl[r] = int32(s.Tokens)
	}
	c.HostCuSeqlens, c.HostSeqLens = cu, sl
	c.HostK, c.HostV = make([]uint16, numQ*s.KVHeads*HeadSize), make([]uint16, numQ*s.KVHeads*HeadSize)
	for _, kv := range [][]uint16{c.HostK, c.HostV} {
		for i := range kv {
			kv[i] = f16Rand(rng)
		}
	}
	var err error
	for _, b := range []struct {
		dst  **kernels.Buffer
		what string
		data []byte
	}{
		{&c.Query, "query", kernels.Uint16Bytes(c.HostQuery)}, {&c.K, "chunk K", kernels.Uint16Bytes(c.HostK)}, {&c.V, "chunk V", kernels.Uint16Bytes(c.HostV)},
		{&c.CuSeqlens, "cu_seqlens_q", kernels.Int32Bytes(cu)}, {&c.SeqLens, "seq_lens", kernels.Int32Bytes(sl)},
		{&c.BlockTable, "", kernels.Int32Bytes(c.HostBlockTable)},
	} {
		if *b.dst == nil {
			if *b.dst, err = alloc(d, s, b.what, int64(len(b.data)), 0); err != nil {
				return err
			}
		}
		if err := (*b.dst).Write(0, b.data); err != nil {
			return err
		}
	}
	if c.Out, err = alloc(d, s, "output", int64(numQ*hq*HeadSize*2), 0xFF); err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		return err
	}
	c.Prefill = &kernels.PrefillArgs{Out: c.Out.Ptr, Q: c.Query.Ptr, K: c.K.Ptr, V: c.V.Ptr, Cache: c.Cache.Ptr, BlockTable: c.BlockTable.Ptr,
		CuSeqlensQ: c.CuSeqlens.Ptr, SeqLens: c.SeqLens.Ptr,
		OutStrideToken: int64(hq * HeadSize), OutStrideHead: HeadSize, QStrideToken: int64(hq * HeadSize), QStrideHead: HeadSize,
		KStrideToken: int64(s.KVHeads * HeadSize), KStrideHead: HeadSize, VStrideToken: int64(s.KVHeads * HeadSize), VStrideHead: HeadSize,
		CacheStrideBlock: int64(s.KVHeads * o.BlockSize * o.Fmt.SlotBytes()), CacheStrideHead: int64(o.BlockSize * o.Fmt.SlotBytes()),
		CacheStrideToken: int64(o.Fmt.SlotBytes()), Fmt: int32(o.Fmt.ID), Dtype: kernels.F16, HeadSize: HeadSize, Tier: kernels.TierPortable,
		NumTokens: int32(numQ), NumSeqs: int32(s.Reqs), NumQHeads: int32(hq), NumKVHeads: int32(s.KVHeads), NumBlocks: int32(c.NumBlocks),
		BlockSize: int32(o.BlockSize), MaxBlocks: int32(c.MaxBlocks), MaxQueryLen: int32(s.QPerReq), SMScale: 1.0 / 16,
		NumSplits: int32(c.Splits)}
	return nil
}
