package bench

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/octant-kv/octant/harness"
	"github.com/octant-kv/octant/kernels"
	"github.com/octant-kv/octant/oracle"
)

// Calls returns the judge's calls of one iteration of c: a harness.DecodeCall per decode call of
// c.Args (the same query rows, num_splits, query_group and partial stride, so that the judge
// launches what is timed), or the one harness.PrefillCall of a prefill spec (the same num_splits).
// The packed cache is read back from the device: the judge sees the bytes the timed calls read.
func (c *Case) Calls(o Options) ([]harness.Call, error) {
	s := c.Spec
	raw, err := c.Cache.Bytes()
	if err != nil {
		return nil, fmt.Errorf("spec %s: reading the packed cache back for the judge: %w", s.Name, err)
	}
	cache, err := oracle.NewCacheLBHNC(o.Fmt, raw, c.NumBlocks, s.KVHeads, o.BlockSize)
	if err != nil {
		return nil, fmt.Errorf("spec %s: the packed cache as the oracle's: %w", s.Name, err)
	}
	q := f16Values(c.HostQuery)
	if s.Prefill {
		in := &oracle.PrefillInput{Cache: cache, Q: q, K: f16Values(c.HostK), V: f16Values(c.HostV), NumTokens: s.NumQ(), NumQHeads: s.Hq(),
			CuSeqlensQ: c.HostCuSeqlens, SeqLens: c.HostSeqLens, BlockTable: c.HostBlockTable, MaxBlocks: c.MaxBlocks, SMScale: 1.0 / 16}
		return []harness.Call{&harness.PrefillCall{In: in, Dtype: harness.F16, Splits: c.Splits}}, nil
	}
	row := s.Hq() * HeadSize
	var calls []harness.Call
	for i, r := range c.Rows {
		a := c.Args[i]
		in := &oracle.DecodeInput{Cache: cache, Query: q[r.Lo*row : r.Hi*row], NumQHeads: s.Hq(), BlockTable: c.HostBlockTable,
			NumReqs: s.Reqs, MaxBlocks: c.MaxBlocks, QToReq: c.HostQToReq[r.Lo:r.Hi], QToKlen: c.HostQToKlen[r.Lo:r.Hi],
			SMScale: float64(a.SMScale), KSigns: oracle.DefaultSigns(HeadSize), VSigns: oracle.DefaultSigns(HeadSize)}
		calls = append(calls, &harness.DecodeCall{In: in, Dtype: harness.F16, NumSplits: int(a.NumSplits), QueryGroup: int(a.QueryGroup),
			PartialStride: int(a.PartialStride)})
	}
	return calls, nil
}

// f16Values converts fp16 bits to float32 values (exact).
func f16Values(h []uint16) []float32 {
	out := make([]float32, len(h))
	for i, x := range h {
		out[i] = oracle.F16ToF32(x)
	}
	return out
}

// Judgement is the one judge's outcome (package harness) for one setup on each tier it was judged
// on: per tier the worst verdict over the iteration's calls, and the output of those calls (fp16
// bits, all rows in order) that the timed output must equal.
type Judgement struct {
	Verdicts map[string]harness.Verdict
	Outputs  map[string][]byte
	Took     time.Duration // wall time of judging every call on every tier at once
}

// JudgeFunc judges one setup on tiers, before any of them is timed. Judge is the one a run uses
// unless Config.Judge replaces it.
type JudgeFunc func(d *kernels.Device, c *Case, o Options, tiers []kernels.TierDesc) (Judgement, error)

// Judge judges c on tiers with package harness (harness.CheckAll over a view of d that offers
// those tiers: each call run on the device and held to the tier's declared profile, to exact
// attention, canaries, untouched inputs and gaps, and the same bits twice). The oracle's side runs
// on the host, once per call for every tier (its cost grows with rows × tokens: docs/performance.md,
// "Judged before timed"). The error is for what keeps the judge from running (reading the cache back).
func Judge(d *kernels.Device, c *Case, o Options, tiers []kernels.TierDesc) (Judgement, error) {
	t0 := time.Now()
	j := Judgement{Verdicts: map[string]harness.Verdict{}, Outputs: map[string][]byte{}}
	calls, err := c.Calls(o)
	if err != nil {
		return j, err
	}
	l := &harness.Lib{Dev: d, Tiers: tiers}
	for _, call := range calls {
		for _, v := range harness.CheckAll(l, call) {
			prev, seen := j.Verdicts[v.Impl]
			if !seen || v.Status > prev.Status {
				j.Verdicts[v.Impl] = v
			}
			j.Outputs[v.Impl] = append(j.Outputs[v.Impl], v.Output...)
		}
	}
	j.Took = time.Since(t0)
	return j, nil
}

// verdictOf is t's verdict in j, or a Fail saying that the judge returned none for it (a tier
// that does not offer the op, or a judge that left it out).
func (j Judgement) verdictOf(t kernels.TierDesc) harness.Verdict {
	if v, ok := j.Verdicts[string(t.Name)]; ok {
		return v
	}
	var got []string
	for n := range j.Verdicts {
		got = append(got, n)
	}
	slices.Sort(got)
	return harness.Verdict{Impl: string(t.Name), Status: harness.Fail,
		Err: fmt.Errorf("tier %s: the judge returned no verdict for it (verdicts for: %s): expected one per judged tier", t.Name, strings.Join(got, ", "))}
}

// sameOutput compares the output of the timed iterations with the judged output, bit for bit:
// the time is then that of the judged computation (the same tier, launch and inputs, whose bits
// the judge requires to be the same run after run).
func sameOutput(s Spec, timed []uint16, judged []byte) error {
	j := kernels.BytesUint16(judged)
	if len(j) != len(timed) {
		return fmt.Errorf("spec %s: the timed output has %d fp16 values, the judged output %d: expected the same calls", s.Name, len(timed), len(j))
	}
	row := s.Hq() * HeadSize
	for i := range timed {
		if timed[i] != j[i] {
			return fmt.Errorf("spec %s: the timed output differs from the judged output at row %d head %d dim %d: 0x%04x after timing, 0x%04x when judged (expected the same bits from the same call)",
				s.Name, i/row, i%row/HeadSize, i%HeadSize, timed[i], j[i])
		}
	}
	return nil
}
