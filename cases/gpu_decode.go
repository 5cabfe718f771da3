package cases

import (
	"flag"
	"fmt"
	"math"

	"github.com/octant-kv/octant/harness"
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
	StaleWorkspace bool `json:"stale_workspace,omitempty"`
	// HostileSeed, when not 0, fills every input the result must not depend on with hostile
	// content (hostile.go, DecodeRegions): drawn in about half the calls.
	HostileSeed uint64 `json:"hostile_seed,omitempty"`
	// TailLog2Scale, when not 0, multiplies the V scale of every token that some but not all rows
	// of its request attend (the positions past the first row's klen: a later MTP or chunk row's)
	// by 2^TailLog2Scale, saturating at 65504: a row that attends one token too many is then far
	// off, while the rows that must attend it see finite values.
	TailLog2Scale int    `json:"tail_log2_scale,omitempty"`
	Digest        string `json:"digest,omitempty"`
}

// GPUDecodeOptions bound FuzzDecode's large calls: requests up to 4096 tokens (every length
// boundary below that reachable), up to 6 requests and 3 KV heads, Σ_rows klen·(Hkv + Hq) up to
// gpuDecodeCostBudget.
func GPUDecodeOptions() DecodeOptions {
	return DecodeOptions{
		Batch:      BatchOptions{MaxReqs: 6, MaxSeqLen: 4096, MaxTotalSeq: 8192, MaxPadding: 4},
		MaxKVHeads: 3,
	}
}

// gpuDecodeSmallOptions bound the small calls, most of FuzzDecode's cases: up to 4 requests of
// up to 1024 tokens (1024 in all), 2 KV heads, cost up to GpuDecodeSmallCost. A fuzzer finds
// more with many cheap calls than with a few large ones (every tile, split and padding edge
// below 1024 tokens is reachable in them); a few percent are large (gpuDecodeLargeEvery).
var gpuDecodeSmallOptions = DecodeOptions{
	Batch:      BatchOptions{MaxReqs: 4, MaxSeqLen: 1024, MaxTotalSeq: 1024, MaxPadding: 4},
	MaxKVHeads: 2,
}

// gpuDecodeLongOptions bound the long calls: one request (and up to 2 padding rows) of 2^16 to
// MaxSeqLen (2^17) tokens, 1..4 query rows (decode, MTP), one KV head. Long context is where
// accumulation defects hide (a running sum kept in fp16, a rescale skipped once a tile's maximum
// stops growing); the bound is the one the oracle derives for the case's own length.
var gpuDecodeLongOptions = DecodeOptions{
	Batch:      BatchOptions{MaxReqs: 1, MaxQueryLen: 4, MinSeqLen: 1 << 16, MaxSeqLen: MaxSeqLen, MaxPadding: 2},
	MaxKVHeads: 1,
}

// gpuDecodeLongCost bounds a long call's cost: 4 rows of 2^17 tokens at G 4 (the oracle's profile
// model of such a call takes about a second of one core).
const gpuDecodeLongCost = 4 * MaxSeqLen * (1 + 4)

// gpuDecodeLongEvery: a large call is long when long_class, drawn in [0, gpuDecodeLongEvery), hits
// its maximum: about 1 in 1000 of rapid.Check's cases (measured over 2 × 20000 draws), a
// long call costing about as much as a hundred small ones.
const gpuDecodeLongEvery = 64

// inFuzzWorker reports whether this process is a worker of Go's coverage-guided fuzzer (go test
// -fuzz): there a long call is never drawn, because the fuzzer ends a worker whose input runs
// longer than 10 s ("fuzzing process hung or terminated unexpectedly", not configurable:
// golang/go#56238), and a 131072-token call in the instrumented worker does (measured on the
// H200, 2026-12-01, the long-context seed: 1.1 s in the plain test binary, over 8 s in the
// worker). The rapid properties, `go test` of the fuzz targets (their long-context seeds) and the
// kernel grids (TestDecodeLong, TestPrefillLong) reach long context instead.
func inFuzzWorker() bool {
	f := flag.Lookup("test.fuzzworker")
	return f != nil && f.Value.String() == "true"
}

// gpuDecodeCostBudget bounds Σ_rows klen·(Hkv + Hq) of a large call (the oracle's profile
// evaluation and the cache it must build scale with it); costlier draws are drawn again.
const gpuDecodeCostBudget = 400_000

// GpuDecodeSmallCost bounds the cost of a small call.
const GpuDecodeSmallCost = 24_000

// gpuDecodeLargeEvery: a call is large when size_class, drawn in [0, gpuDecodeLargeEvery), hits
// its maximum. rapid biases integer draws towards both ends, so that happens in about 3% of
// rapid.Check's cases (10% of Example's), not one in 64.
const gpuDecodeLargeEvery = 64

// gpuWorkspaceBudget bounds the partials workspace (bytes): the split count is lowered to fit.
const gpuWorkspaceBudget = 64 << 20

// GPUDecodeCases draws FuzzDecode's calls and their launch parameters (drawGPUDecodeCase).
func GPUDecodeCases(o DecodeOptions) *rapid.Generator[*GPUDecodeCase] {
	return rapid.Custom(func(t *rapid.T) *GPUDecodeCase { return drawGPUDecodeCase(rapidDraw{t}, o) })
}

// drawGPUDecodeCase draws a call: a few percent (gpuDecodeLargeEvery) from DecodeSpecs(o) with
// cost up to gpuDecodeCostBudget, a few of those long (gpuDecodeLongOptions: 2^16..2^17
// tokens), the others small (gpuDecodeSmallOptions, cost up to
// GpuDecodeSmallCost); passing other options than GPUDecodeOptions() draws every call from them. A
// call over its cost budget is drawn again.
func drawGPUDecodeCase(d draw, o DecodeOptions) *GPUDecodeCase {
	opts, budget := o, gpuDecodeCostBudget
	// rapid shrinks towards 0: towards the small calls.
	if o == GPUDecodeOptions() {
		if d.intn(0, gpuDecodeLargeEvery-1, "size_class") != gpuDecodeLargeEvery-1 {
			opts, budget = gpuDecodeSmallOptions, GpuDecodeSmallCost
		} else if d.intn(0, gpuDecodeLongEvery-1, "long_class") == gpuDecodeLongEvery-1 && !inFuzzWorker() {
			// long_class is drawn in a fuzz worker too: the same bytes then mean the same draws
			// in the worker and in `go test`'s replay of the seeds (only the length differs).
			opts, budget = gpuDecodeLongOptions, gpuDecodeLongCost
		}
	}
	return drawGPUDecodeCall(d, opts, budget)
}

// gpuDecodeSmallCases draws FuzzDecode's small calls alone (gpuDecodeSmallOptions, cost up to
// GpuDecodeSmallCost): what drawGPUDecodeCase draws in all but a few percent of its cases, for a
// -short form whose time does not depend on drawing a large call.
func gpuDecodeSmallCases() *rapid.Generator[*GPUDecodeCase] {
	return rapid.Custom(func(t *rapid.T) *GPUDecodeCase {
		return drawGPUDecodeCall(rapidDraw{t}, gpuDecodeSmallOptions, GpuDecodeSmallCost)
	})
}

// drawGPUDecodeCall draws a call from opts with cost up to budget (a costlier draw is drawn
// again) and its launch parameters.
func drawGPUDecodeCall(d draw, opts DecodeOptions, budget int) *GPUDecodeCase {
	s := drawDecodeSpec(d, opts)
	for MergeCost(s) > budget {
		s = drawDecodeSpec(d, opts)
	}
	c := &GPUDecodeCase{Spec: s}
	c.QueryGroup = d.intn(1, 4, "query_group")
	c.PartialStride = pick(d, []int{0, oracle.DefaultPartialStride, 264, 512}, "partial_stride")
	if d.intn(0, 3, "fused_view") == 3 {
		c.QueryPadHeads = 2 * s.Cache.NumKVHeads
		c.OutPad = pick(d, []int{8, 128, 256}, "out_pad")
	}
	c.StaleWorkspace = d.intn(0, 1, "stale_workspace") == 1
	if d.intn(0, 1, "hostile") == 1 {
		c.HostileSeed = d.u64("hostile_seed") | 1
	}
	c.TailLog2Scale = pick(d, []int{0, 0, 6, 10}, "tail_log2_scale")
	c.fitWorkspace()
	return c
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

// Call builds the call the judges run (harness.DecodeCall). A recorded digest must match the
// rebuilt cache and query: otherwise the generators changed since the case was recorded.
func (c *GPUDecodeCase) Call() (harness.Call, error) {
	if c.Spec == nil {
		return nil, fmt.Errorf("decode case without spec")
	}
	in, err := c.Spec.Build()
	if err != nil {
		return nil, fmt.Errorf("building the call: %w", err)
	}
	if c.TailLog2Scale != 0 {
		scaleTails(c.Spec, in, c.TailLog2Scale)
	}
	call := c.call(in)
	if c.HostileSeed != 0 {
		call = hostileDecode(call, c.HostileSeed, DecodeRegions)
	}
	if c.Digest != "" {
		if got := Digest(call.In); got != c.Digest {
			return nil, fmt.Errorf("digest mismatch: the generators no longer rebuild the recorded call (recorded %s, built %s); re-record the case", c.Digest, got)
		}
	}
	return call, nil
}

// scaleTails multiplies by 2^k (saturating at 65504) the V scale of every token some but not all
// rows of its request attend: positions ctx+1 .. seq_len−1 of a request of q_len ≥ 2 under the
// builder's maps (row j attends ctx + j + 1 tokens).
func scaleTails(s *DecodeSpec, in *oracle.DecodeInput, k int) {
	c := in.Cache
	f := c.F
	vs := f.OffScales() + 2*f.NumKScales()
	for r, q := range s.Batch.Requests {
		if q.QueryLen < 2 {
			continue
		}
		row := in.BlockTable[r*in.MaxBlocks:][:in.MaxBlocks]
		for p := max(q.SeqLen-q.QueryLen+1, 0); p < q.SeqLen && p/c.BlockSize < in.MaxBlocks; p++ {
			b := int(row[p/c.BlockSize])
			if b < 0 || b >= c.NumBlocks {
				continue
			}
			for h := 0; h < c.NumKVHeads; h++ {
				sl := c.Slot(b, h, p%c.BlockSize)
				x := oracle.F16ToF32(uint16(sl[vs]) | uint16(sl[vs+1])<<8)
				y := oracle.F32ToF16(float32(math.Max(-65504, math.Min(65504, math.Ldexp(float64(x), k)))))
				sl[vs], sl[vs+1] = byte(y), byte(y>>8)
			}
		}
	}
}

// Record sets the case's digest from its built call, so that a reproducer notices when the
// generators no longer rebuild it.
func (c *GPUDecodeCase) Record(call harness.Call) {
	if d, ok := call.(*harness.DecodeCall); ok {
		c.Digest = Digest(d.In)
	}
}

func (c *GPUDecodeCase) call(in *oracle.DecodeInput) *harness.DecodeCall {
	return &harness.DecodeCall{In: in, Dtype: c.Spec.Dtype, NumSplits: c.Spec.NumSplits, QueryGroup: c.QueryGroup, PartialStride: c.PartialStride,
		QueryPadHeads: c.QueryPadHeads, OutPad: c.OutPad, StaleWorkspace: c.StaleWorkspace}
}
