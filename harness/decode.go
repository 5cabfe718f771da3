package harness

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/octant-kv/octant/arch"
	"github.com/octant-kv/octant/kernels"
	"github.com/octant-kv/octant/oracle"
)

// DecodeCall is one decode call (docs/contract.md §3.3) with concrete inputs: everything the
// oracle sees (In: cache, query values exactly representable in Dtype, block table, query maps,
// sm_scale, signs) and the launch parameters only a kernel sees: the split count, the query group
// (consecutive rows sharing one workgroup's K/V reads, 1..4), the partials row stride (0: the
// default), a query tensor that is a view into a fused QKV tensor (QueryPadHeads extra heads
// after each row's query heads), output rows with OutPad elements of gap after them (which must
// stay untouched), and a workspace of finite stale values instead of NaN.
type DecodeCall struct {
	In             *oracle.DecodeInput
	Dtype          Dtype
	NumSplits      int
	QueryGroup     int
	PartialStride  int // 0: oracle.DefaultPartialStride
	QueryPadHeads  int
	OutPad         int
	StaleWorkspace bool // fill the partials with byte 0x3F (about 0.75 as fp32) instead of 0xFF (NaN)
	// SkipContract leaves exact attention out where it cannot change whether the call fails: when
	// every element is within its bound and the output is within the contract's relative L2 of the
	// declared profile's model (over the elements the profile makes a claim about), the one rule
	// that fails a call within its bounds (judgeAttention: an output that far from its own model)
	// cannot apply, and only the difference between Pass and QualityWarning goes unmeasured.
	// Otherwise exact attention is computed and the call judged in full. The fuzz targets set it
	// for throughput (exact attention costs about as much as the profile's model).
	SkipContract bool
	// TableTail is uploaded after the block table's num_reqs rows: rows a serving engine has
	// preallocated for requests not in this batch (stale ids). No result may depend on them.
	TableTail []int32
	// Timing, when set, accumulates where the judge's time goes on this call (oracle: the profile
	// models of every tier, one computation, while the device runs; exact: exact attention;
	// device: each tier's uploads, launches, read-back and buffer checks, twice per tier, the
	// tiers on their own goroutines, so that their sum may exceed the wall time).
	Timing *Timing

	memo oracleMemo
}

// Op is arch.Decode.
func (c *DecodeCall) Op() arch.Op { return arch.Decode }

func (c *DecodeCall) pstride() int {
	if c.PartialStride == 0 {
		return oracle.DefaultPartialStride
	}
	return c.PartialStride
}

// workgroups is the decode launch's size: ⌈num_q/query_group⌉ · num_splits · Hkv.
func (c *DecodeCall) workgroups() int {
	qg := max(1, c.QueryGroup)
	return (c.In.NumQ() + qg - 1) / qg * c.NumSplits * c.In.Cache.NumKVHeads
}

// oracleMemo computes the oracle's side of a call once, for every implementation judged on it,
// and lets the computation run while the device does.
type oracleMemo struct {
	mu      sync.Mutex
	entries map[string]*memoEntry
}

type memoEntry struct {
	done chan struct{}
	val  any
	err  error
}

// start begins computing key with f (once per key) and returns a function that waits for it.
func (m *oracleMemo) start(key string, f func() (any, error)) func() (any, error) {
	m.mu.Lock()
	if m.entries == nil {
		m.entries = map[string]*memoEntry{}
	}
	e, ok := m.entries[key]
	if !ok {
		e = &memoEntry{done: make(chan struct{})}
		m.entries[key] = e
		go func() {
			defer close(e.done)
			e.val, e.err = f()
		}()
	}
	m.mu.Unlock()
	return func() (any, error) {
		<-e.done
		return e.val, e.err
	}
}

// startAll begins computing those of keys not yet started with one call of f, which returns one
// value per key it is given, in order.
func (m *oracleMemo) startAll(keys []string, f func(keys []string) ([]any, error)) {
	m.mu.Lock()
	if m.entries == nil {
		m.entries = map[string]*memoEntry{}
	}
	var todo []string
	var es []*memoEntry
	for _, k := range keys {
		if _, ok := m.entries[k]; !ok && !slices.Contains(todo, k) {
			e := &memoEntry{done: make(chan struct{})}
			m.entries[k] = e
			todo, es = append(todo, k), append(es, e)
		}
	}
	m.mu.Unlock()
	if len(todo) == 0 {
		return
	}
	go func() {
		vals, err := f(todo)
		for j, e := range es {
			if err == nil {
				e.val = vals[j]
			}
			e.err = err
			close(e.done)
		}
	}()
}

// profileKey is the memo key of the model under profile p.
func profileKey(p oracle.Profile) string { return "profile/" + string(p) }

// profiles starts the oracle's models of the call under every profile of ps not started yet, as
// one computation (oracle.DecodeProfiles: the slots decoded once for all of them).
func (c *DecodeCall) profiles(ps []oracle.Profile) {
	keys := make([]string, len(ps))
	for j, p := range ps {
		keys[j] = profileKey(p)
	}
	c.memo.startAll(keys, func(todo []string) ([]any, error) {
		t0 := time.Now()
		defer c.Timing.Add("oracle", t0)
		var want []oracle.Profile
		for _, k := range todo {
			want = append(want, oracle.Profile(strings.TrimPrefix(k, "profile/")))
		}
		rs, err := oracle.DecodeProfiles(want, c.In, oracle.ProfileOptions{Out: c.Dtype.Oracle()})
		if err != nil {
			return nil, fmt.Errorf("oracle.DecodeProfiles(%v): %w", want, err)
		}
		vals := make([]any, len(rs))
		for j, r := range rs {
			vals[j] = r
		}
		return vals, nil
	})
}

// profile starts the oracle's model of the call under profile p.
func (c *DecodeCall) profile(p oracle.Profile) func() (*oracle.ProfileResult, error) {
	w := c.memo.start(profileKey(p), func() (any, error) {
		t0 := time.Now()
		defer c.Timing.Add("oracle", t0)
		r, err := oracle.DecodeProfile(p, c.In, oracle.ProfileOptions{Out: c.Dtype.Oracle()})
		if err != nil {
			return nil, fmt.Errorf("oracle.DecodeProfile(%s): %w", p, err)
		}
		return r, nil
	})
	return func() (*oracle.ProfileResult, error) {
		v, err := w()
		r, _ := v.(*oracle.ProfileResult)
		return r, err
	}
}

// exact starts exact attention on the dequantized cache (oracle.ExactDecode).
func (c *DecodeCall) exact() func() ([]float64, error) {
	w := c.memo.start("exact", func() (any, error) {
		t0 := time.Now()
		defer c.Timing.Add("exact", t0)
		return oracle.ExactDecode(c.In)
	})
	return func() ([]float64, error) {
		v, err := w()
		r, _ := v.([]float64)
		return r, err
	}
}

// declaredProfile is the decode profile an implementation declares (the oracle's own model: the
// portable tier's dot4-int8q), which must be one the registry allows its tier
// (arch.CheckProfile): a tier that declares a looser profile than its own fails.
func declaredProfile(im Impl, op arch.Op) (oracle.Profile, error) {
	if im.Oracle {
		return oracle.ProfileDot4Int8Q, nil
	}
	decl := im.Tier.Profile(op)
	if err := arch.CheckProfile(im.Tier.Name, op, decl); err != nil {
		return "", err
	}
	p, err := oracle.ParseProfile(decl)
	if err != nil {
		return "", fmt.Errorf("tier %s declares %s profile %q: %w", im.Name, op, decl, err)
	}
	if !p.ReadsCache() {
		return "", fmt.Errorf("tier %s declares %s profile %q: the oracle has no decode model for it", im.Name, op, p)
	}
	return p, nil
}

// prefetch starts the oracle's model under every implementation's declared profile (an
// implementation whose profile it cannot parse is left for judge to fail).
func (c *DecodeCall) prefetch(impls []Impl) {
	var ps []oracle.Profile
	for _, im := range impls {
		if p, err := declaredProfile(im, arch.Decode); err == nil {
			ps = append(ps, p)
		}
	}
	c.profiles(ps)
}

// judge runs the call on im and judges it: padding rows exactly ±0; every element within the
// declared profile's bound of the oracle's model; the batch within the contract's relative L2 of
// exact attention (Verdict's rule); canaries, inputs and output gaps intact; the same bits when
// run twice.
func (c *DecodeCall) judge(l *Lib, im Impl) Verdict {
	v := newVerdict(arch.Decode, im)
	p, err := declaredProfile(im, arch.Decode)
	if err != nil {
		return v.fail(err)
	}
	model := c.profile(p)
	var exact func() ([]float64, error)
	if !c.SkipContract {
		exact = c.exact()
	}
	var raw []uint16
	if im.Oracle {
		raw, err = c.runOracle()
	} else {
		t0 := time.Now()
		raw, err = runTwice("decode", l.repeat(c.workgroups()), func() ([]uint16, error) { return c.runLib(l, im.Tier) },
			func(e int) string { return elemName(e, c.In.NumQHeads, c.In.Cache.F.HeadSize) })
		c.Timing.Add("device", t0)
	}
	if err != nil {
		return v.fail(err)
	}
	v.Output = kernels.Uint16Bytes(raw)
	got := make([]float64, len(raw))
	for i, b := range raw {
		got[i] = float64(c.Dtype.FromBits(b))
	}
	if err := c.checkPadding(raw, got); err != nil {
		return v.fail(err)
	}
	res, err := model()
	if err != nil {
		return v.fail(err)
	}
	if exact == nil {
		if _, ratio := res.Check(got); ratio <= 1 && nearModel(res, got, ratio) {
			v.Ratio, v.Judged = ratio, held(res, nil)
			return v
		}
		exact = c.exact() // judged in full: a failure also reports its distance from exact attention
	}
	ex, err := exact()
	if err != nil {
		return v.fail(err)
	}
	return judgeAttention(v, p, c.Dtype, res, got, ex, nil, func(e int) string { return elemName(e, c.In.NumQHeads, c.In.Cache.F.HeadSize) },
		fmt.Sprintf("the %s profile's fp32 arithmetic and %s output rounding, oracle.DecodeProfile, docs/bounds.md", p, c.Dtype))
}

// checkPadding: a row that attends to nothing is written as exact zeros (docs/contract.md §3.3).
func (c *DecodeCall) checkPadding(raw []uint16, got []float64) error {
	in := c.In
	d := in.Cache.F.HeadSize
	rowLen := in.NumQHeads * d
	for i := 0; i < in.NumQ(); i++ {
		if in.Klen(i) != 0 {
			continue
		}
		for e := i * rowLen; e < (i+1)*rowLen; e++ {
			if raw[e]&0x7FFF != 0 {
				return fmt.Errorf("padding row %d (q_to_req %d, q_to_klen %d) is not exactly zero: %s = %#04x (%g); bound 0 (docs/contract.md §3.3: rows that attend to nothing are written as exact zeros)",
					i, in.QToReq[i], in.QToKlen[i], elemName(e, in.NumQHeads, d), raw[e], got[e])
			}
		}
	}
	return nil
}

// judgeAttention applies the bound and contract rules shared by decode and prefill (Verdict) to an
// output got, the declared profile's result and exact attention. judged, when not nil, masks the
// elements a claim is made about (prefill: the rows of some sequence). The contract distance is
// taken over the elements the profile makes a claim about: not where its bound is +Inf (the
// profile's own arithmetic overflows, or the cache holds non-finite scales), nor where the output
// overflowed to ±inf within the bound (rounding to the output dtype may overflow there).
//
// With every element within its bound of the model, the output's distance from exact attention
// exceeds the model's by at most the bounds' norm. A contract miss is then a QualityWarning saying
// whose it is: the profile's arithmetic (its model misses the contract too), or the output dtype's
// rounding of values it cannot hold to 2e-2 (dtypeRoom). When the model meets the contract and the
// output is farther than the contract from that model with the dtype's rounding unable to explain
// it, the bound was too loose to judge (its norm beyond the output's: many cancelling terms at long
// context) and the verdict is a Fail. An element outside its bound is a Fail, whatever the distance.
func judgeAttention(v Verdict, p oracle.Profile, dt Dtype, res *oracle.ProfileResult, got, exact []float64, judged []bool, name func(int) string, boundWhy string) Verdict {
	worst, ratio := res.Check(got)
	v.Ratio = ratio
	v.Judged = held(res, judged)
	idx := claimed(res, got, judged, ratio)
	g, e, m, b := pick(got, idx), pick(exact, idx), pick(res.Model, idx), pick(res.Bound, idx)
	if len(idx) > 0 {
		v.RelL2 = oracle.RelL2(g, e)
		v.ModelRelL2 = oracle.RelL2(m, e)
	}
	if ratio > 1 {
		where := "within"
		if !(v.RelL2 < oracle.ContractRelL2) {
			where = "outside"
		}
		return v.failf("(profile %s): %s = %.9g, model %.9g ± bound %.3g: |error| %.3g is %.3g × the bound (bound: %s); relative L2 from exact attention %.3g, %s the contract's %g",
			p, name(worst), got[worst], res.Model[worst], res.Bound[worst], math.Abs(got[worst]-res.Model[worst]), ratio, boundWhy, v.RelL2, where, oracle.ContractRelL2)
	}
	if len(idx) == 0 || v.RelL2 < oracle.ContractRelL2 {
		return v // no element with a claim: no distance to measure (RelL2 NaN, Judged 0)
	}
	v.Status = QualityWarning
	whose := "the profile's own arithmetic misses the contract on this input"
	if v.ModelRelL2 < oracle.ContractRelL2 {
		// The profile's model meets the contract and the tier does not. Within the bound, but the
		// bound may say nothing here: over many terms that cancel (near-uniform weights on
		// zero-mean values at long context) its order-free accumulation term exceeds the output
		// itself, and a tier that writes zeros is "within" it. Only the output dtype's rounding
		// excuses a tier that far from its own profile's model.
		dev, room := oracle.RelL2(g, m), dtypeRoom(dt, e)
		if dev >= oracle.ContractRelL2 && room < oracle.ContractRelL2/2 {
			return v.failf("(profile %s): relative L2 from exact attention %.3g, outside the contract's %g, while the profile's own model is %.3g from it: the output is %.3g (relative L2) from the model of its declared arithmetic, which neither the profile nor the %s output's rounding (at most %.3g) explains. Every element is within the bound (worst %.3g × it), which is too loose to judge this case element by element: its norm is %.3g of exact attention's (an order-free accumulation term over many terms that cancel, docs/bounds.md, \"Long context\")",
				p, v.RelL2, oracle.ContractRelL2, v.ModelRelL2, dev, dt, room, ratio, norm2(b)/norm2(e))
		}
		whose = fmt.Sprintf("the bounds' norm is %.3g of exact attention's (mostly the output's rounding to its dtype: values it cannot hold to the contract's precision)", norm2(b)/norm2(e))
	}
	v.Err = fmt.Errorf("%s: relative L2 from exact attention %.3g, not below the contract's %g (docs/contract.md §5); every element is within the declared profile %s's bound (worst %.3g) and the profile's model is %.3g from exact attention: not the tier's miss: %s",
		v.Impl, v.RelL2, oracle.ContractRelL2, p, ratio, v.ModelRelL2, whose)
	return v
}

// claimed lists the elements of got that the contract distance is taken over (judgeAttention):
// those judged (every one when judged is nil) where the profile makes a claim: its bound is
// finite, and the output did not overflow to ±inf within the bound.
func claimed(res *oracle.ProfileResult, got []float64, judged []bool, ratio float64) []int {
	var idx []int
	for j := range got {
		if judged != nil && !judged[j] {
			continue
		}
		bj := res.Bound[j]
		if math.IsInf(bj, 1) || math.IsNaN(bj) || math.IsInf(got[j], 0) && !math.IsInf(res.Model[j], 0) && ratio <= 1 {
			continue
		}
		idx = append(idx, j)
	}
	return idx
}

// held counts the elements judged (every one when judged is nil) whose bound is a finite number:
// the elements the profile makes a claim about. Where the profile's own arithmetic overflows (an
// fp16 query or P' out of range) or the cache holds non-finite scales, its bound is +Inf and the
// element is not held to anything.
func held(res *oracle.ProfileResult, judged []bool) int {
	n := 0
	for j, b := range res.Bound {
		if (judged == nil || judged[j]) && !math.IsInf(b, 0) && !math.IsNaN(b) {
			n++
		}
	}
	return n
}

// pick is x at the indices idx.
func pick(x []float64, idx []int) []float64 {
	out := make([]float64, len(idx))
	for i, j := range idx {
		out[i] = x[j]
	}
	return out
}

// nearModel reports whether got, every element within its bound (ratio ≤ 1), is within the
// contract's relative L2 of the profile's model over the elements the contract distance is taken
// over (claimed). judgeAttention fails such an output only when it is at least that far from the
// model, so where nearModel holds its verdict is Pass or QualityWarning whatever exact attention
// is: exact attention can be left out without turning a Fail into a Pass (SkipContract).
func nearModel(res *oracle.ProfileResult, got []float64, ratio float64) bool {
	idx := claimed(res, got, nil, ratio)
	return oracle.RelL2(pick(got, idx), pick(res.Model, idx)) < oracle.ContractRelL2
}

// runOracle is the oracle as an implementation: the profile's float32 model of the portable tier
// (oracle.DecodeProfileF32 over the portable split geometry), rounded to the dtype.
func (c *DecodeCall) runOracle() ([]uint16, error) {
	geom, err := oracle.PortableGeometry(c.In.KVMax(), c.NumSplits)
	if err != nil {
		return nil, err
	}
	got, err := oracle.DecodeProfileF32(oracle.ProfileDot4Int8Q, c.In, geom, c.Dtype.Oracle())
	if err != nil {
		return nil, err
	}
	raw := make([]uint16, len(got))
	for j, x := range got {
		raw[j] = c.Dtype.Bits(float32(x))
	}
	return raw, nil
}

// runLib uploads the call and runs decode once on tier, checking the status, the workspace size
// the library asks for, the canaries, that inputs are unchanged and that the gap after each output
// row is untouched.
func (c *DecodeCall) runLib(l *Lib, tier kernels.TierDesc) ([]uint16, error) {
	in, dt := c.In, c.Dtype
	d := in.Cache.F.HeadSize
	nq, hq, hkv := in.NumQ(), in.NumQHeads, in.Cache.NumKVHeads
	qTok := (hq + c.QueryPadHeads) * d
	q := make([]byte, 2*max(nq*qTok, 1))
	one := dt.Bits(1)
	for i := 0; i < nq; i++ {
		for j := 0; j < qTok; j++ {
			x := one // the K and V parts of a fused tensor
			if j < hq*d {
				x = dt.Bits(in.Query[i*hq*d+j])
			}
			binary.LittleEndian.PutUint16(q[2*(i*qTok+j):], x)
		}
	}
	bufs := l.newBufs()
	defer bufs.Free()
	query := bufs.Input("query", q)
	cache := bufs.Input("cache", in.Cache.Data)
	bt := bufs.Input("block_table", kernels.Int32Bytes(append(append([]int32(nil), in.BlockTable...), c.TableTail...)))
	qr := bufs.Input("q_to_req", kernels.Int32Bytes(in.QToReq))
	qk := bufs.Input("q_to_klen", kernels.Int32Bytes(in.QToKlen))
	outTok := hq*d + c.OutPad
	out := bufs.Output("out", 2*nq*outTok, 0xFF)
	ws := l.Runner().WorkspaceBytes(nq, hq, c.NumSplits, c.PartialStride)
	if want := uint64(nq * hq * c.NumSplits * c.pstride() * 4); ws != want {
		return nil, fmt.Errorf("octave_decode_workspace_bytes(%d, %d, %d, %d) = %d, expected num_q·Hq·num_splits·partial_stride·4 = %d", nq, hq, c.NumSplits, c.PartialStride, ws, want)
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
		Fmt: int32(f.ID), Dtype: dt.Kernel(), HeadSize: int32(d), Tier: tier.Tier, NumQ: int32(nq), NumQHeads: int32(hq), NumKVHeads: int32(hkv),
		NumReqs: int32(in.NumReqs), NumBlocks: int32(in.Cache.NumBlocks), BlockSize: int32(in.Cache.BlockSize), MaxBlocks: int32(in.MaxBlocks),
		NumSplits: int32(c.NumSplits), QueryGroup: int32(c.QueryGroup), PartialStride: int32(c.PartialStride), SMScale: float32(in.SMScale),
		KSigns: kernels.SignWords(in.KSigns.Words()), VSigns: kernels.SignWords(in.VSigns.Words())}
	op := "decode (tier " + string(tier.Name) + ")"
	if err := l.finish(bufs, op, l.Runner().Decode(a)); err != nil {
		return nil, err
	}
	return outputRows(out, op, nq, hq*d, outTok)
}

// dtypeRoom is the relative L2 that rounding exact to dt may cost at most, as the bounds model the
// output rounding (oracle.Dtype.Rounding: u·|x| + abs per value), over the norm of exact.
func dtypeRoom(dt Dtype, exact []float64) float64 {
	u, abs, err := dt.Oracle().Rounding()
	n := norm2(exact)
	if err != nil || n == 0 {
		return math.Inf(1)
	}
	room := make([]float64, len(exact))
	for i, x := range exact {
		room[i] = u*math.Abs(x) + abs
	}
	return norm2(room) / n
}

// norm2 is the Euclidean norm of x.
func norm2(x []float64) float64 {
	var s float64
	for _, v := range x {
		s += v * v
	}
	return math.Sqrt(s)
}
