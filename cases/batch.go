package cases

import (
	"fmt"
	"math"

	"github.com/octant-kv/octant/oracle"
	"pgregory.net/rapid"
)

// Request is one request of a batch: its new query tokens and its sequence length (context plus
// new tokens, vLLM's seq_lens).
type Request struct {
	QueryLen int `json:"q_len"`
	SeqLen   int `json:"seq_len"`
}

// Batch is the metadata of one decode call before the query maps are built: its requests and the
// number of query rows, which may exceed the requests' tokens (cudagraph padding at the end).
type Batch struct {
	Requests  []Request `json:"requests"`
	NumTokens int       `json:"num_tokens"`
}

// QSL is query_start_loc: num_reqs+1 running offsets of the requests' query tokens.
func (b Batch) QSL() []int32 {
	q := make([]int32, len(b.Requests)+1)
	for r, req := range b.Requests {
		q[r+1] = q[r] + int32(req.QueryLen)
	}
	return q
}

// SeqLens is seq_lens, one per request.
func (b Batch) SeqLens() []int32 {
	s := make([]int32, len(b.Requests))
	for r, req := range b.Requests {
		s[r] = int32(req.SeqLen)
	}
	return s
}

// QueryTokens is the number of real (non-padding) query tokens.
func (b Batch) QueryTokens() int {
	n := 0
	for _, r := range b.Requests {
		n += r.QueryLen
	}
	return n
}

// MaxSeq is the longest seq_len.
func (b Batch) MaxSeq() int {
	m := 0
	for _, r := range b.Requests {
		m = max(m, r.SeqLen)
	}
	return m
}

// BatchOptions bound a batch. Zero fields take the defaults in brackets.
type BatchOptions struct {
	MaxReqs     int  // requests per batch [8]
	MaxQueryLen int  // query tokens per request [128: the decode kernel's limit]
	MaxSeqLen   int  // seq_len per request [MaxSeqLen = 2^17]
	MinSeqLen   int  // seq_len per request at least this (clipped to MaxSeqLen) [0: the query length]
	MaxTotalSeq int  // Σ seq_len over the batch, to bound a case's cost [no limit]
	MaxPadding  int  // cudagraph padding rows after the last request [8]
	BlockSize   int  // block size whose multiples ±1 the lengths reach [16]
	AllowEmpty  bool // allow requests with no query token (a builder accepts them)
}

func (o BatchOptions) norm() BatchOptions {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.MaxReqs, 8)
	def(&o.MaxQueryLen, 128)
	def(&o.MaxSeqLen, MaxSeqLen)
	def(&o.MaxPadding, 8)
	def(&o.BlockSize, 16)
	return o
}

// Batch shapes.
const (
	shapeMixed  = iota // any mix of decode, MTP and chunks
	shapeDecode        // every request q_len 1
	shapeMTP           // every request the same k+1 tokens
	shapeSingle        // one request
)

func drawBatch(d draw, o BatchOptions) Batch {
	o = o.norm()
	shape := d.intn(0, 3, "batch_shape")
	n := d.intn(1, o.MaxReqs, "num_reqs")
	if shape == shapeSingle {
		n = 1
	}
	mtp := min(o.MaxQueryLen, d.intn(2, 8, "mtp_len"))
	budget := o.MaxTotalSeq
	var b Batch
	for r := 0; r < n; r++ {
		var q int
		switch shape {
		case shapeDecode:
			q = 1
		case shapeMTP:
			q = mtp
		default:
			q = drawQueryLen(d, o.MaxQueryLen, "q_len")
			if o.AllowEmpty && d.intn(0, 9, "empty_request") == 9 {
				q = 0
			}
		}
		hi := o.MaxSeqLen
		if budget > 0 {
			hi = min(hi, max(budget, q))
		}
		lo := max(q, min(o.MinSeqLen, o.MaxSeqLen))
		s := drawLength(d, lo, max(hi, lo), o.BlockSize, "seq_len")
		if budget > 0 {
			budget = max(budget-s, 0)
		}
		b.Requests = append(b.Requests, Request{QueryLen: q, SeqLen: s})
	}
	b.NumTokens = b.QueryTokens()
	switch d.intn(0, 3, "padding_class") {
	case 1:
		b.NumTokens++
	case 2:
		b.NumTokens += d.intn(0, o.MaxPadding, "padding")
	}
	return b
}

// Batches draws valid batch metadata: decode batches, MTP verification batches (every request
// k+1 tokens), mixed batches of decode, MTP runs and short chunks (query lengths 1..128), and
// single requests; sequence lengths up to 2^17 with the boundaries of Lengths; optional cudagraph
// padding rows.
func Batches(o BatchOptions) *rapid.Generator[Batch] {
	return rapid.Custom(func(t *rapid.T) Batch { return drawBatch(rapidDraw{t}, o) })
}

// QueryMaps are the decode kernel's per-row maps (docs/contract.md §4): request and key length of each
// query row. Wild lists the mutations applied to builder maps (empty for builder maps).
type QueryMaps struct {
	QToReq  []int32  `json:"q_to_req"`
	QToKlen []int32  `json:"q_to_klen"`
	Wild    []string `json:"wild,omitempty"`
}

// BuilderMaps builds the maps vLLM's metadata builder produces for b (oracle.BuildQueryMaps).
func BuilderMaps(b Batch) (QueryMaps, error) {
	req, klen, err := oracle.BuildQueryMaps(b.QSL(), b.SeqLens(), b.NumTokens)
	return QueryMaps{QToReq: req, QToKlen: klen}, err
}

// Mutations WildMaps applies to builder maps: maps no builder produces, which the kernels must
// still handle (docs/contract.md §4: "a fuzzer may give them any contents").
const (
	WildInterleave  = "interleave"       // rows of different requests interleaved
	WildKlen        = "klen"             // a row's klen replaced: non-monotone, past seq_len, past max_blocks·block_size, ≤ 0
	WildPadMiddle   = "pad-middle"       // a padding row in the middle
	WildNegativeReq = "negative-req"     // q_to_req < 0
	WildOutOfRange  = "req-out-of-range" // q_to_req ≥ num_reqs
	WildSwapKlen    = "swap-klen"        // two rows exchange klen
)

func drawWildMaps(d draw, b Batch, maxKlen int) QueryMaps {
	m, err := BuilderMaps(b)
	if err != nil {
		panic(fmt.Sprintf("fuzz: builder maps of a generated batch: %v", err))
	}
	n := len(m.QToReq)
	if n == 0 {
		return m
	}
	nr := int32(len(b.Requests))
	muts := d.intn(1, 6, "wild_mutations")
	for k := 0; k < muts; k++ {
		i := d.intn(0, n-1, "wild_row")
		switch d.intn(0, 5, "wild_kind") {
		case 0:
			r := newRand(d.u64("interleave_seed"), 2)
			r.Shuffle(n, func(a, c int) {
				m.QToReq[a], m.QToReq[c] = m.QToReq[c], m.QToReq[a]
				m.QToKlen[a], m.QToKlen[c] = m.QToKlen[c], m.QToKlen[a]
			})
			m.Wild = append(m.Wild, WildInterleave)
		case 1:
			m.QToKlen[i] = int32(drawLength(d, -3, maxKlen+5, 16, "wild_klen"))
			m.Wild = append(m.Wild, WildKlen)
		case 2:
			if d.intn(0, 1, "pad_by_req") == 0 {
				m.QToReq[i] = nr
				m.QToKlen[i] = int32(d.intn(-1, 3, "pad_klen"))
			} else {
				m.QToKlen[i] = int32(-d.intn(0, 2, "pad_klen"))
			}
			m.Wild = append(m.Wild, WildPadMiddle)
		case 3:
			m.QToReq[i] = pick(d, []int32{-1, -2, math.MinInt32}, "negative_req")
			m.Wild = append(m.Wild, WildNegativeReq)
		case 4:
			m.QToReq[i] = pick(d, []int32{nr, nr + 1, math.MaxInt32}, "out_of_range_req")
			m.Wild = append(m.Wild, WildOutOfRange)
		default:
			j := d.intn(0, n-1, "swap_row")
			m.QToKlen[i], m.QToKlen[j] = m.QToKlen[j], m.QToKlen[i]
			m.Wild = append(m.Wild, WildSwapKlen)
		}
	}
	return m
}

// WildMaps draws query maps no builder produces, derived from b's builder maps by 1..6 mutations
// (interleaved requests, non-monotone or out-of-range klen up to maxKlen+5, padding rows in the
// middle, negative and out-of-range requests).
func WildMaps(b Batch, maxKlen int) *rapid.Generator[QueryMaps] {
	return rapid.Custom(func(t *rapid.T) QueryMaps { return drawWildMaps(rapidDraw{t}, b, maxKlen) })
}
