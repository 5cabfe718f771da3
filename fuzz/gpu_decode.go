package fuzz

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/octant-kv/octant/kernels"
	"github.com/octant-kv/octant/oracle"
	"pgregory.net/rapid"
)

// GPUDecodeCase is one decode call for FuzzDecode: the call (a DecodeSpec, everything the oracle
// sees) and the launch parameters only a kernel sees: the query group (consecutive rows sharing one
// workgroup's K/V reads, 1..4), the partials row stride, a query tensor that is a view into a fused
// QKV tensor (extra heads after each row's query heads) and output rows with a gap after them
// (which must stay untouched).
type GPUDecodeCase struct {
	Spec          *DecodeSpec `json:"spec"`
	QueryGroup    int         `json:"query_group"`
	PartialStride int         `json:"partial_stride"` // 0: the default (oracle.DefaultPartialStride)
	QueryPadHeads int         `json:"query_pad_heads"`
	OutPad        int         `json:"out_pad"` // elements after each output row
	// StaleWorkspace fills the partials workspace with finite stale values (byte 0x3F: about
	// 0.75 as fp32) instead of NaN: vLLM reuses the workspace between steps, and a kernel that
	// leaves a partial unwritten then reads a finite old value, which NaN would hide.
	StaleWorkspace bool   `json:"stale_workspace,omitempty"`
	Digest         string `json:"digest,omitempty"`
}

// GPUDecodeOptions bound FuzzDecode's large calls: requests up to 4096 tokens (every length
// boundary below that reachable), up to 6 requests and 3 KV heads, Σ_rows klen·(Hkv + Hq) up to
// gpuDecodeCostBudget.
var GPUDecodeOptions = DecodeOptions{
	Batch:      BatchOptions{MaxReqs: 6, MaxSeqLen: 4096, MaxTotalSeq: 8192, MaxPadding: 4},
	MaxKVHeads: 3,
}

// gpuDecodeSmallOptions bound the small calls, most of FuzzDecode's cases: up to 4 requests of
// up to 1024 tokens (1024 in all), 2 KV heads, cost up to gpuDecodeSmallCost. A fuzzer finds
// more with many cheap calls than with a few large ones (every tile, split and padding edge
// below 1024 tokens is reachable in them); a few percent are large (gpuDecodeLargeEvery).
var gpuDecodeSmallOptions = DecodeOptions{
	Batch:      BatchOptions{MaxReqs: 4, MaxSeqLen: 1024, MaxTotalSeq: 1024, MaxPadding: 4},
	MaxKVHeads: 2,
}

// gpuDecodeCostBudget bounds Σ_rows klen·(Hkv + Hq) of a large call (the oracle's profile
// evaluation and the cache it must build scale with it); costlier draws are drawn again.
const gpuDecodeCostBudget = 400_000

// gpuDecodeSmallCost bounds the cost of a small call.
const gpuDecodeSmallCost = 24_000

// gpuDecodeLargeEvery: a call is large when size_class, drawn in [0, gpuDecodeLargeEvery), hits
// its maximum. rapid biases integer draws towards both ends, so that happens in about 3% of
// rapid.Check's cases (10% of Example's), not one in 64.
const gpuDecodeLargeEvery = 64

// gpuWorkspaceBudget bounds the partials workspace (bytes): the split count is lowered to fit.
const gpuWorkspaceBudget = 64 << 20

// GPUDecodeCases draws FuzzDecode's calls and their launch parameters: a few percent
// (gpuDecodeLargeEvery) from DecodeSpecs(o) with cost up to gpuDecodeCostBudget, the others small
// (gpuDecodeSmallOptions, cost up to gpuDecodeSmallCost). Passing other options than
// GPUDecodeOptions draws every call from them.
func GPUDecodeCases(o DecodeOptions) *rapid.Generator[*GPUDecodeCase] {
	return rapid.Custom(func(t *rapid.T) *GPUDecodeCase {
		opts, budget := o, gpuDecodeCostBudget
		// rapid shrinks towards 0: towards the small calls.
		if o == GPUDecodeOptions && rapid.IntRange(0, gpuDecodeLargeEvery-1).Draw(t, "size_class") != gpuDecodeLargeEvery-1 {
			opts, budget = gpuDecodeSmallOptions, gpuDecodeSmallCost
		}
		s := DecodeSpecs(opts).Filter(func(s *DecodeSpec) bool { return mergeCost(s) <= budget }).Draw(t, "decode")
		c := &GPUDecodeCase{Spec: s}
		c.QueryGroup = rapid.IntRange(1, 4).Draw(t, "query_group")
		c.PartialStride = rapid.SampledFrom([]int{0, oracle.DefaultPartialStride, 264, 512}).Draw(t, "partial_stride")
		if rapid.IntRange(0, 3).Draw(t, "fused_view") == 3 {
			c.QueryPadHeads = 2 * s.Cache.NumKVHeads
			c.OutPad = rapid.SampledFrom([]int{8, 128, 256}).Draw(t, "out_pad")
		}
		c.StaleWorkspace = rapid.Bool().Draw(t, "stale_workspace")
		c.fitWorkspace()
		return c
	})
}

func (c *GPUDecodeCase) pstride() int {
	if c.PartialStride == 0 {
		return oracle.DefaultPartialStride
	}
	return c.PartialStride
}

// fitWorkspace lowers the split count until the partials fit gpuWorkspaceBudget.
func (c *GPUDecodeCase) fitWorkspace() {
	rows := max(1, len(c.Spec.Maps.QToReq)*c.Spec.NumQHeads())
	if lim := max(1, gpuWorkspaceBudget/(rows*c.pstride()*4)); c.Spec.NumSplits > lim {
		c.Spec.NumSplits = lim
	}
}

// decodeRun is the output of one implementation: dtype bits [num_q][Hq][256] and their values.
type decodeRun struct {
	raw []uint16
	got []float64
}

// runDecodeLib uploads the call and runs decode once on tier, checking the status, the canaries,
// that inputs are unchanged and that the gap after each output row is untouched.
func runDecodeLib(g *GPU, tier kernels.TierDesc, c *GPUDecodeCase, in *oracle.DecodeInput) (*decodeRun, error) {
	s := c.Spec
	dt := s.Dtype
	d := in.Cache.F.HeadSize
	nq, hq, hkv := in.NumQ(), in.NumQHeads, in.Cache.NumKVHeads
	qTok := (hq + c.QueryPadHeads) * d
	q := make([]byte, 2*max(nq*qTok, 1))
	one := dt.Bits(1)
	for i := 0; i < nq; i++ {
		for j := 0; j < qTok; j++ {
			v := one // the K and V parts of a fused tensor
			if j < hq*d {
				v = dt.Bits(in.Query[i*hq*d+j])
			}
			binary.LittleEndian.PutUint16(q[2*(i*qTok+j):], v)
		}
	}
	bufs := &kernels.BufferSet{Dev: g.Dev, MinLen: 1}
	defer bufs.Free()
	query := bufs.Input("query", q)
	cache := bufs.Input("cache", in.Cache.Data)
	bt := bufs.Input("block_table", kernels.Int32Bytes(in.BlockTable))
	qr := bufs.Input("q_to_req", kernels.Int32Bytes(in.QToReq))
	qk := bufs.Input("q_to_klen", kernels.Int32Bytes(in.QToKlen))
	outTok := hq*d + c.OutPad
	out := bufs.Output("out", 2*nq*outTok, 0xFF)
	ws := g.Dev.WorkspaceBytes(nq, hq, s.NumSplits, c.PartialStride)
	if want := uint64(nq * hq * s.NumSplits * c.pstride() * 4); ws != want {
		return nil, fmt.Errorf("octave_decode_workspace_bytes(%d, %d, %d, %d) = %d, expected num_q·Hq·num_splits·partial_stride·4 = %d", nq, hq, s.NumSplits, c.PartialStride, ws, want)
	}
	fill := byte(0xFF)
	if c.StaleWorkspace {
		fill = 0x3F
	}
	part := bufs.Output("partials", int(ws), fill)
	if err := bufs.Err(); err != nil {
		return nil, err
	}
	f := in.Cache.F
	a := kernels.DecodeArgs{Out: out.Ptr, Query: query.Ptr, Cache: cache.Ptr, BlockTable: bt.Ptr, QToReq: qr.Ptr, QToKlen: qk.Ptr,
		Partials: part.Ptr, PartialsBytes: ws, OutStrideToken: int64(outTok), OutStrideHead: int64(d), QueryStrideToken: int64(qTok), QueryStrideHead: int64(d),
		CacheStrideBlock: int64(in.Cache.StrideBlock), CacheStrideHead: int64(in.Cache.StrideHead), CacheStrideTk: int64(in.Cache.StrideToken),
		Fmt: int32(f.ID), Dtype: kernelDtype(dt), HeadSize: int32(d), Tier: tier.Tier, NumQ: int32(nq), NumQHeads: int32(hq), NumKVHeads: int32(hkv),
		NumReqs: int32(in.NumReqs), NumBlocks: int32(in.Cache.NumBlocks), BlockSize: int32(in.Cache.BlockSize), MaxBlocks: int32(in.MaxBlocks),
		NumSplits: int32(s.NumSplits), QueryGroup: int32(c.QueryGroup), PartialStride: int32(c.PartialStride), SMScale: float32(in.SMScale),
		KSigns: kernels.SignWords(in.KSigns.Words()), VSigns: kernels.SignWords(in.VSigns.Words())}
	op := "decode (tier " + tier.Name + ")"
	if err := g.finish(bufs, op, g.Dev.Decode(a)); err != nil {
		return nil, err
	}
	raw, err := outputRows(out, op, nq, hq*d, outTok)
	if err != nil {
		return nil, err
	}
	r := &decodeRun{raw: raw, got: make([]float64, len(raw))}
	for i, v := range raw {
		r.got[i] = float64(dt.FromBits(v))
	}
	return r, nil
}

// runDecodeOracle is the oracle as an implementation: the profile's float32 model of the
// portable tier (oracle.DecodeProfileF32 over the portable split geometry), rounded to the dtype.
func runDecodeOracle(c *GPUDecodeCase, in *oracle.DecodeInput) (*decodeRun, error) {
	geom, err := oracle.PortableGeometry(in.KVMax(), c.Spec.NumSplits)
	if err != nil {
		return nil, err
	}
	got, err := oracle.DecodeProfileF32(oracle.ProfileDot4Int8Q, in, geom, c.Spec.Dtype.Oracle())
	if err != nil {
		return nil, err
	}
	r := &decodeRun{raw: make([]uint16, len(got)), got: got}
	for j, v := range got {
		r.raw[j] = c.Spec.Dtype.Bits(float32(v))
	}
	return r, nil
}

// decodeJudge holds the oracle's side of one call, computed once for every implementation.
type decodeJudge struct {
	c        *GPUDecodeCase
	in       *oracle.DecodeInput
	profiles map[oracle.Profile]*oracle.ProfileResult
}

func (j *decodeJudge) profile(p oracle.Profile) (*oracle.ProfileResult, error) {
	if r, ok := j.profiles[p]; ok {
		return r, nil
	}
	r, err := oracle.DecodeProfile(p, j.in, oracle.ProfileOptions{Out: j.c.Spec.Dtype.Oracle()})
	if err != nil {
		return nil, fmt.Errorf("oracle.DecodeProfile(%s): %w", p, err)
	}
	j.profiles[p] = r
	return r, nil
}

// implProfile is the decode profile an implementation declares (the oracle's model: the portable
// tier's dot4-int8q).
func implProfile(im Impl, declared string) (oracle.Profile, error) {
	if im.Oracle {
		return oracle.ProfileDot4Int8Q, nil
	}
	p, err := oracle.ParseProfile(declared)
	if err != nil {
		return "", fmt.Errorf("tier %s declares profile %q: %w", im.Name, declared, err)
	}
	return p, nil
}

// check judges one output: padding rows exactly ±0, then every element within the declared
// profile's bound of its model; the worst element is reported with its value, model, bound and
// where the bound comes from.
func (j *decodeJudge) check(im Impl, r *decodeRun) (float64, error) {
	in := j.in
	d := in.Cache.F.HeadSize
	hq := in.NumQHeads
	rowLen := hq * d
	for i := 0; i < in.NumQ(); i++ {
		if in.Klen(i) != 0 {
			continue
		}
		for e := i * rowLen; e < (i+1)*rowLen; e++ {
			if r.raw[e]&0x7FFF != 0 {
				return 0, fmt.Errorf("%s: padding row %d (q_to_req %d, q_to_klen %d) is not exactly zero: %s = %#04x (%g); bound 0 (KERNELS.md §3.3: rows that attend to nothing are written as exact zeros)",
					im.Name, i, in.QToReq[i], in.QToKlen[i], elemName(e, hq, d), r.raw[e], r.got[e])
			}
		}
	}
	p, err := implProfile(im, im.Tier.DecodeProfile)
	if err != nil {
		return 0, err
	}
	if !p.ReadsCache() {
		return 0, fmt.Errorf("tier %s declares decode profile %q: the oracle has no decode model for it", im.Name, p)
	}
	res, err := j.profile(p)
	if err != nil {
		return 0, err
	}
	worst, ratio := res.Check(r.got)
	if ratio > 1 {
		msg := fmt.Sprintf("%s (profile %s): %s = %.9g, model %.9g ± bound %.3g: |error| %.3g is %.3g × the bound (bound: the %s profile's fp32 arithmetic and %s output rounding, oracle.DecodeProfile, docs/bounds.md)",
			im.Name, p, elemName(worst, hq, d), r.got[worst], res.Model[worst], res.Bound[worst], math.Abs(r.got[worst]-res.Model[worst]), ratio, p, j.c.Spec.Dtype)
		be := &BoundError{Msg: msg, Ratio: ratio, RelL2: math.NaN()}
		if exact, err := oracle.ExactDecode(in); err == nil {
			be.RelL2 = oracle.RelL2(r.got, exact)
			be.WithinContract = be.RelL2 < oracle.ContractRelL2
		}
		return ratio, be
	}
	return ratio, nil
}

// BoundError is a result outside its declared profile's bound (every other failure — padding,
// canaries, inputs, races, statuses — is a plain error). RelL2 is the output's relative L2 distance
// from exact attention; WithinContract says it is below oracle.ContractRelL2, which the
// conformance runner reports as a quality warning rather than a failure.
type BoundError struct {
	Msg            string
	Ratio          float64 // |error| / bound at the worst element
	RelL2          float64
	WithinContract bool
}

func (e *BoundError) Error() string {
	return fmt.Sprintf("%s; relative L2 from exact attention %.3g (contract %g)", e.Msg, e.RelL2, oracle.ContractRelL2)
}

// CheckGPUDecode runs the call on the oracle and on every decode tier of g (nil: the oracle
// alone) and checks each output; every tier is run twice and must give the same bits.
func CheckGPUDecode(g *GPU, c *GPUDecodeCase) error {
	in, err := c.Spec.Build()
	if err != nil {
		return fmt.Errorf("building the call: %w", err)
	}
	if c.Digest != "" && c.Digest != Digest(in) {
		return fmt.Errorf("digest mismatch: the generators no longer rebuild the recorded call (recorded %s, built %s); re-record the case", c.Digest, Digest(in))
	}
	return checkGPUDecode(g, c, in)
}

func checkGPUDecode(g *GPU, c *GPUDecodeCase, in *oracle.DecodeInput) error {
	impls, err := Impls(g, OpDecode)
	if err != nil {
		return err
	}
	decodeTiming.count()
	j := &decodeJudge{c: c, in: in, profiles: map[oracle.Profile]*oracle.ProfileResult{}}
	// The oracle's model is computed while the device runs (the host would otherwise idle during
	// the launches, and the GPU during the model); it is waited for before any check.
	model := make(chan error, 1)
	go func() {
		t0 := time.Now()
		_, err := j.profile(oracle.ProfileDot4Int8Q)
		decodeTiming.add("oracle", t0)
		model <- err
	}()
	modelErr, waited := error(nil), false
	wait := func() error {
		if !waited {
			modelErr, waited = <-model, true
		}
		return modelErr
	}
	defer wait()
	for _, im := range impls {
		var r, r2 *decodeRun
		if im.Oracle {
			if g != nil {
				continue // the oracle's own float32 model is checked when no library is given (CI)
			}
			if r, err = runDecodeOracle(c, in); err != nil {
				return err
			}
		} else {
			t0 := time.Now()
			r, err = runDecodeLib(g, im.Tier, c, in)
			if err != nil {
				return err
			}
			r2, err = runDecodeLib(g, im.Tier, c, in)
			decodeTiming.add("device", t0)
			if err != nil {
				return fmt.Errorf("second run: %w", err)
			}
		}
		if err := wait(); err != nil {
			return err
		}
		ratio, err := j.check(im, r)
		if err != nil {
			return err
		}
		if im.Oracle {
			continue
		}
		g.observe(im.Name, ratio)
		if err := sameBits(im, "decode", r.raw, r2.raw, func(e int) string { return elemName(e, in.NumQHeads, in.Cache.F.HeadSize) }); err != nil {
			return err
		}
	}
	return nil
}

// elemIndex describes flat element i of an output by its index alone.
func elemIndex(i int) string { return fmt.Sprintf("element %d", i) }

// elemName describes flat element e of a [rows][heads][d] output.
func elemName(e, heads, d int) string {
	return fmt.Sprintf("row %d head %d dim %d", e/(heads*d), e/d%heads, e%d)
}

func kernelDtype(dt Dtype) kernels.Dtype {
	if dt == BF16 {
		return kernels.BF16
	}
	return kernels.F16
}
