package oracle

import (
	"fmt"
	"math"
)

// PrefillInput is one call of the prefill operation (docs/contract.md §3.5). Q, K and V are the chunk's
// own tokens, already rotated (Q and K with the K rotation, V with the V rotation), as float32
// values (fp16 in the kernels).
//
// Sequence s owns query rows CuSeqlensQ[s]..CuSeqlensQ[s+1]−1 (qlen of them) and a cached prefix of
// ctx = clamp(SeqLens[s] − qlen, 0, MaxBlocks·BlockSize) tokens in the packed cache, addressed
// through row s of BlockTable. Row j of the sequence (token CuSeqlensQ[s]+j) attends to the whole
// prefix, read from the cache (dequantized, rotated space; tokens of an out-of-range physical block
// are skipped), and to the chunk's tokens 0..j, read exactly from K and V (causal). Any
// G = NumQHeads/Hkv ≥ 1 is allowed.
type PrefillInput struct {
	Cache      *Cache
	Q          []float32 // [NumTokens][NumQHeads][HeadSize], rotated
	K, V       []float32 // [NumTokens][Hkv][HeadSize], rotated
	NumTokens  int
	NumQHeads  int
	CuSeqlensQ []int32 // [S+1], non-decreasing, CuSeqlensQ[S] ≤ NumTokens
	SeqLens    []int32 // [S]: context plus new tokens of each sequence
	BlockTable []int32 // [S][MaxBlocks], row-major
	MaxBlocks  int
	SMScale    float64
}

// NumSeqs is the number of sequences (len(SeqLens)).
func (in *PrefillInput) NumSeqs() int { return len(in.SeqLens) }

// Ctx is the number of cached prefix tokens of sequence s.
func (in *PrefillInput) Ctx(s int) int {
	qlen := int(in.CuSeqlensQ[s+1] - in.CuSeqlensQ[s])
	return max(0, min(int(in.SeqLens[s])-qlen, in.MaxBlocks*in.Cache.BlockSize))
}

// Validate checks shapes and parameters.
func (in *PrefillInput) Validate() error {
	if in.Cache == nil {
		return fmt.Errorf("prefill: no cache")
	}
	if err := in.Cache.Validate(); err != nil {
		return fmt.Errorf("prefill: %w", err)
	}
	d, hkv := in.Cache.F.HeadSize, in.Cache.NumKVHeads
	if in.NumQHeads <= 0 || in.NumQHeads%hkv != 0 {
		return fmt.Errorf("prefill: num_q_heads %d: expected a positive multiple of num_kv_heads %d", in.NumQHeads, hkv)
	}
	if in.NumTokens < 0 {
		return fmt.Errorf("prefill: num_tokens %d: expected ≥ 0", in.NumTokens)
	}
	for _, x := range []struct {
		name      string
		got, want int
	}{{"q", len(in.Q), in.NumTokens * in.NumQHeads * d}, {"k", len(in.K), in.NumTokens * hkv * d}, {"v", len(in.V), in.NumTokens * hkv * d}} {
		if x.got != x.want {
			return fmt.Errorf("prefill: %s has %d values, expected %d (num_tokens %d, heads, head_size %d)", x.name, x.got, x.want, in.NumTokens, d)
		}
	}
	S := len(in.SeqLens)
	if len(in.CuSeqlensQ) != S+1 {
		return fmt.Errorf("prefill: cu_seqlens_q has %d entries, expected num_seqs+1 = %d", len(in.CuSeqlensQ), S+1)
	}
	if in.CuSeqlensQ[0] < 0 {
		return fmt.Errorf("prefill: cu_seqlens_q[0] = %d, expected ≥ 0", in.CuSeqlensQ[0])
	}
	for s := 0; s < S; s++ {
		if in.CuSeqlensQ[s+1] < in.CuSeqlensQ[s] {
			return fmt.Errorf("prefill: cu_seqlens_q[%d] = %d < cu_seqlens_q[%d] = %d: expected non-decreasing", s+1, in.CuSeqlensQ[s+1], s, in.CuSeqlensQ[s])
		}
	}
	if int(in.CuSeqlensQ[S]) > in.NumTokens {
		return fmt.Errorf("prefill: cu_seqlens_q[%d] = %d exceeds num_tokens %d", S, in.CuSeqlensQ[S], in.NumTokens)
	}
	if in.MaxBlocks < 0 || len(in.BlockTable) != S*in.MaxBlocks {
		return fmt.Errorf("prefill: block_table has %d entries, expected num_seqs %d × max_blocks %d = %d", len(in.BlockTable), S, in.MaxBlocks, S*in.MaxBlocks)
	}
	if err := attCheckScale(in.SMScale); err != nil {
		return fmt.Errorf("prefill: %w", err)
	}
	return nil
}

// prefixSlots appends the slots of the cached prefix of sequence s through KV head h, skipping
// tokens whose physical block is out of range.
func (in *PrefillInput) prefixSlots(s, h int, dst [][]byte) [][]byte {
	c := in.Cache
	for pb, tin := range cacheBlocks(c, in.BlockTable[s*in.MaxBlocks:][:in.MaxBlocks], 0, in.Ctx(s)) {
		dst = append(dst, c.Slot(pb, h, tin))
	}
	return dst
}

// ExactPrefill computes prefill attention exactly (float64) in the rotated space: out is
// [NumTokens][NumQHeads][HeadSize], rotated like V (the kernels' output before the caller rotates
// back). Rows that belong to no sequence are not written: they stay NaN, and written reports which
// token rows were.
func ExactPrefill(in *PrefillInput) (out []float64, written []bool, err error) {
	if err := in.Validate(); err != nil {
		return nil, nil, err
	}
	c := in.Cache
	d, hkv := c.F.HeadSize, c.NumKVHeads
	G := in.NumQHeads / hkv
	cs := in.SMScale * math.Log2E
	out = make([]float64, in.NumTokens*in.NumQHeads*d)
	for i := range out {
		out[i] = math.NaN()
	}
	written = make([]bool, in.NumTokens)
	dec := newSlotDecoder64(c.F)
	acc := newSoftmaxAcc(d)
	q := make([]float64, d)
	kv := make([]float64, d)
	vv := make([]float64, d)
	var slots [][]byte
	for s := 0; s < in.NumSeqs(); s++ {
		lo, hi := int(in.CuSeqlensQ[s]), int(in.CuSeqlensQ[s+1])
		for h := 0; h < hkv; h++ {
			// Decode the prefix once per (sequence, KV head).
			slots = in.prefixSlots(s, h, slots[:0])
			pk := make([]float64, len(slots)*d)
			pv := make([]float64, len(slots)*d)
			for t, sl := range slots {
				dec.load(sl)
				copy(pk[t*d:], dec.k)
				copy(pv[t*d:], dec.v)
			}
			for i := lo; i < hi; i++ {
				written[i] = true
				for k := 0; k < G; k++ {
					hq := h*G + k
					for j, x := range in.Q[(i*in.NumQHeads+hq)*d:][:d] {
						q[j] = float64(x)
					}
					acc.reset()
					for t := range slots {
						acc.add(cs*attDot(q, pk[t*d:(t+1)*d]), pv[t*d:(t+1)*d])
					}
					for u := lo; u <= i; u++ {
						for j := 0; j < d; j++ {
							kv[j] = float64(in.K[(u*hkv+h)*d+j])
							vv[j] = float64(in.V[(u*hkv+h)*d+j])
						}
						acc.add(cs*attDot(q, kv), vv)
					}
					dst := out[(i*in.NumQHeads+hq)*d:][:d]
					for j := range dst {
						dst[j] = acc.o[j] / acc.l
					}
				}
			}
		}
	}
	return out, written, nil
}
