package cases

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"

	"github.com/octant-kv/octant/harness"

	"github.com/octant-kv/octant/internal/par"
	"github.com/octant-kv/octant/oracle"
	"pgregory.net/rapid"
)

// QueryContent is the recipe of a decode call's query rows: a mix of value kinds, each query head
// at its own scale.
type QueryContent struct {
	Seed          uint64      `json:"seed"`
	Kinds         []ValueKind `json:"kinds"`
	HeadLog2Scale []float64   `json:"head_log2_scale,omitempty"` // per query head
}

// DecodeSpec is the recipe of one decode call (docs/contract.md §3.3): everything small is stored as is
// (batch, maps, block table, signs, scale, splits), the bulk (cache bytes, query values) as seeds
// and value kinds that Build expands deterministically. A DecodeSpec is JSON and rebuilds the same
// call anywhere.
type DecodeSpec struct {
	Dtype     harness.Dtype `json:"dtype"`
	Group     int           `json:"group"`
	Cache     CacheShape    `json:"cache"`
	Content   CacheContent  `json:"content"`
	Batch     Batch         `json:"batch"`
	Maps      QueryMaps     `json:"maps"`
	Table     BlockTable    `json:"block_table"`
	Signs     SignPair      `json:"signs"`
	SMScale   float64       `json:"sm_scale"`
	NumSplits int           `json:"num_splits"`
	Query     QueryContent  `json:"query"`
}

// DecodeOptions bound the decode calls DecodeSpecs draws. Zero fields take the defaults.
type DecodeOptions struct {
	Batch      BatchOptions // requests, query and sequence lengths [BatchOptions defaults]
	MaxKVHeads int          // KV heads [4]
	// NonFiniteReads lets rows read non-finite values: live slots keep +inf scales (the format's
	// overflow hazard) and wild maps may read random garbage. By default every slot a row can
	// read has finite scales, so exact attention is finite.
	NonFiniteReads bool
}

// NumQHeads is Hq = G·Hkv.
func (s *DecodeSpec) NumQHeads() int { return s.Group * s.Cache.NumKVHeads }

// Klen is row i's effective key length as the decode op defines it (0 for padding rows: klen ≤ 0
// or a request outside [0, num_reqs); else clamped to max_blocks·block_size).
func (s *DecodeSpec) Klen(i int) int {
	r, k := int(s.Maps.QToReq[i]), int(s.Maps.QToKlen[i])
	if r < 0 || r >= len(s.Batch.Requests) || k <= 0 {
		return 0
	}
	return min(k, s.Table.MaxBlocks*s.Cache.BlockSize)
}

// KVMax is the largest effective klen.
func (s *DecodeSpec) KVMax() int {
	m := 0
	for i := range s.Maps.QToReq {
		m = max(m, s.Klen(i))
	}
	return m
}

func drawDecodeSpec(d draw, o DecodeOptions) *DecodeSpec {
	if o.MaxKVHeads <= 0 {
		o.MaxKVHeads = 4
	}
	s := &DecodeSpec{}
	format := pick(d, oracle.AllFormats, "format")
	f, _ := oracle.KernelFormat(format)
	s.Dtype = pick(d, harness.Dtypes, "dtype")
	hkv := d.intn(1, o.MaxKVHeads, "num_kv_heads")
	s.Group = pick(d, oracle.AllowedGroups, "group")
	bs := pick(d, []int{16, 16, 32, 48, 64, 128}, "block_size")
	bo := o.Batch
	bo.BlockSize = bs
	s.Batch = drawBatch(d, bo)
	seqs := make([]int, len(s.Batch.Requests))
	for r, q := range s.Batch.Requests {
		seqs[r] = q.SeqLen
	}
	s.Table = drawBlockTable(d, seqs, bs)
	wild := d.intn(0, 2, "wild_maps") == 2
	if wild {
		s.Maps = drawWildMaps(d, s.Batch, s.Table.MaxBlocks*bs)
	} else {
		m, err := BuilderMaps(s.Batch)
		if err != nil {
			panic(fmt.Sprintf("fuzz: builder maps of a generated batch: %v", err))
		}
		s.Maps = m
	}
	s.Cache = CacheShape{Format: f.Name(), NumBlocks: s.Table.NumBlocks, NumKVHeads: hkv, BlockSize: bs}
	drawCacheLayout(d, f, &s.Cache)
	garbage := []Garbage{GarbageRandom, GarbageFinite, GarbageStale, GarbageZero}
	if wild && !o.NonFiniteReads {
		garbage = garbage[1:] // wild klens read past seq_len: keep what they read finite
	}
	s.Content = drawCacheContent(d, s.Dtype, hkv, garbage)
	s.Content.FiniteScales = !o.NonFiniteReads
	s.Signs = drawSignPair(d)
	s.SMScale = drawSMScale(d)
	s.NumSplits = drawSplits(d, s.KVMax(), "num_splits")
	s.Query = QueryContent{
		Seed:          d.u64("query_seed"),
		Kinds:         drawKindMix(d, FiniteKinds, "query_kind"),
		HeadLog2Scale: drawHeadScales(d, s.NumQHeads(), "query_head_log2_scale"),
	}
	return s
}

func drawSignSpec(d draw, label string) SignSpec {
	switch d.intn(0, 5, label+"_kind") {
	case 0, 1, 2:
		return DefaultSignSpec
	case 3:
		return SignSpec{Words: make([]int32, 8)}
	case 4:
		return SignSpec{Words: []int32{-1, -1, -1, -1, -1, -1, -1, -1}}
	default:
		w := make([]int32, 8)
		for i := range w {
			w[i] = int32(uint32(d.u64(label + "_word")))
		}
		return SignSpec{Words: w}
	}
}

func drawSignPair(d draw) SignPair {
	k := drawSignSpec(d, "k_signs")
	if d.intn(0, 3, "v_same_as_k") == 1 {
		return SignPair{K: k, V: k}
	}
	return SignPair{K: k, V: drawSignSpec(d, "v_signs")}
}

func drawSMScale(d draw) float64 {
	switch d.intn(0, 3, "sm_scale_class") {
	case 0:
		return DefaultSMScale
	case 1:
		return pick(d, []float64{1 / math.Sqrt(128), 0.01, 0.3, 1, 2}, "sm_scale")
	default:
		return math.Exp2(d.f64(-10, 4, "log2_sm_scale"))
	}
}

// DecodeSpecs draws decode calls: any format, dtype, Hkv 1..4, G ∈ {1, 2, 4, 6, 8}, block sizes
// 16..128, both cache layouts with padded strides, batches of decode/MTP/chunk requests (Batches),
// builder or wild query maps, shuffled block tables with shared prefixes, invalid ids and garbage
// past klen, stale garbage in unused slots, default or random K and V signs, any sm_scale and
// 1..1024 splits (one token per split and more splits than tokens included).
func DecodeSpecs(o DecodeOptions) *rapid.Generator[*DecodeSpec] {
	return rapid.Custom(func(t *rapid.T) *DecodeSpec { return drawDecodeSpec(rapidDraw{t}, o) })
}

// liveSet is the set of (block, token) slots (every head) holding a token some request has
// stored: position p < seq_len of request r with block_table[r][p / block_size] = block.
func (s *DecodeSpec) liveSet() liveSlots {
	bs := s.Cache.BlockSize
	live := liveSlots{bs: bs, live: make([]bool, max(s.Cache.NumBlocks, 0)*bs)}
	for r, q := range s.Batch.Requests {
		row := s.Table.Row(r)
		nb := (max(q.SeqLen, 0) + bs - 1) / bs
		for lb := 0; lb < nb && lb < len(row); lb++ {
			pb := int(row[lb])
			if pb < 0 || pb >= s.Cache.NumBlocks {
				continue
			}
			for t := lb * bs; t < min((lb+1)*bs, q.SeqLen); t++ {
				live.live[pb*bs+t-lb*bs] = true
			}
		}
	}
	return live
}

// liveSlots marks the (block, offset) pairs holding a request's token (every KV head's slot there
// is live).
type liveSlots struct {
	bs   int
	live []bool
}

func (l liveSlots) at(b, h, t int) bool { return l.live[b*l.bs+t] }

// Build expands the recipe into the oracle's decode input: the cache (BuildCache; the live slots
// are the tokens of each request's seq_len through its block table), the query rows
// [num_tokens][Hq][256] and the maps.
func (s *DecodeSpec) Build() (*oracle.DecodeInput, error) {
	f, err := KernelFormat(s.Cache.Format)
	if err != nil {
		return nil, err
	}
	live := s.liveSet()
	c, err := BuildCache(s.Cache, s.Content, s.Signs, live.at)
	if err != nil {
		return nil, err
	}
	d := f.HeadSize
	hq := s.NumQHeads()
	n := len(s.Maps.QToReq)
	q := make([]float32, n*hq*d)
	r := newRand(s.Query.Seed, 6)
	dr := rngDraw{r}
	kinds := s.Query.Kinds
	if len(kinds) == 0 {
		kinds = []ValueKind{Gaussian}
	}
	ks := s.Signs.K.Signs(d)
	// The recipes are drawn in order from the stream; each vector is then built from its own
	// seed, in parallel.
	specs := make([]ValueSpec, n*hq)
	for i := 0; i < n; i++ {
		for h := 0; h < hq; h++ {
			spec := drawValueSpec(dr, pick(dr, kinds, ""), s.Dtype)
			if scaledKind(spec.Kind) {
				spec.Log2Scale += sliceAt(s.Query.HeadLog2Scale, h)
			}
			specs[i*hq+h] = spec
		}
	}
	par.Chunks(len(specs), func(lo, hi int) {
		for e := lo; e < hi; e++ {
			copy(q[e*d:], specs[e].Build(d, ks, f.KRotBlock()))
		}
	})
	in := &oracle.DecodeInput{Cache: c, Query: q, NumQHeads: hq, BlockTable: s.Table.Table, NumReqs: len(s.Batch.Requests),
		MaxBlocks: s.Table.MaxBlocks, QToReq: s.Maps.QToReq, QToKlen: s.Maps.QToKlen, SMScale: s.SMScale,
		KSigns: ks, VSigns: s.Signs.V.Signs(d)}
	if err := in.Validate(); err != nil {
		return nil, err
	}
	return in, nil
}

// Digest is a SHA-256 over everything Build produced (cache bytes, query bits, maps, table,
// signs, scale): a reproducer stores it so that a replay notices when the generators changed
// under it and no longer rebuild the same call.
func Digest(in *oracle.DecodeInput) string {
	h := sha256.New()
	h.Write(in.Cache.Data)
	var b [8]byte
	put := func(v uint64) { binary.LittleEndian.PutUint64(b[:], v); h.Write(b[:]) }
	for _, x := range in.Query {
		put(uint64(math.Float32bits(x)))
	}
	for _, s := range [][]int32{in.QToReq, in.QToKlen, in.BlockTable} {
		put(uint64(len(s)))
		for _, x := range s {
			put(uint64(uint32(x)))
		}
	}
	for _, sg := range []oracle.Signs{in.KSigns, in.VSigns} {
		for _, w := range sg.Words() {
			put(uint64(w))
		}
	}
	put(math.Float64bits(in.SMScale))
	c := in.Cache
	for _, v := range []int{c.NumBlocks, c.NumKVHeads, c.BlockSize, c.StrideBlock, c.StrideHead, c.StrideToken, in.NumQHeads, in.NumReqs, in.MaxBlocks} {
		put(uint64(v))
	}
	return hex.EncodeToString(h.Sum(nil))
}
