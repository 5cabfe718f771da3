package grids_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/octant-kv/octant/kernels"
	"github.com/octant-kv/octant/oracle"
)

// refQueryMaps is query_maps as docs/kernels.md defines it for a non-decreasing query_start_loc:
// req = #{j in 1..R : qsl[j] ≤ t}; klen = 0 for req = R, else
// seq_lens[req] − (qsl[req+1] − qsl[req]) + (t − qsl[req]) + 1 computed in 64 bits and wrapped to
// int32. Where oracle.BuildQueryMaps accepts the input it gives the same maps (checked).
func refQueryMaps(qsl, seqLens []int32, nq int) (req, klen []int32) {
	R := len(seqLens)
	req, klen = make([]int32, nq), make([]int32, nq)
	for t := 0; t < nq; t++ {
		r := 0
		for j := 1; j <= R; j++ {
			if int(qsl[j]) <= t {
				r++
			}
		}
		req[t] = int32(r)
		if r < R {
			k := int64(seqLens[r]) - (int64(qsl[r+1]) - int64(qsl[r])) + (int64(t) - int64(qsl[r])) + 1
			klen[t] = int32(uint32(uint64(k)))
		}
	}
	return req, klen
}

// runQueryMaps runs query_maps on the device; outputs start as 0xFF bytes (−1).
func runQueryMaps(t *testing.T, dev *kernels.Device, qsl, seqLens []int32, nq int) (req, klen []int32) {
	t.Helper()
	bufs := newBufSet(t, dev)
	q := bufs.input("query_start_loc", kernels.Int32Bytes(qsl))
	sl := bufs.input("seq_lens", kernels.Int32Bytes(seqLens))
	r := bufs.output("q_to_req", 4*nq, 0xFF)
	k := bufs.output("q_to_klen", 4*nq, 0xFF)
	must(t, dev.QueryMaps(kernels.QueryMapsArgs{QueryStartLoc: q.Ptr, SeqLens: sl.Ptr, QToReq: r.Ptr, QToK: k.Ptr,
		NumReqs: int32(len(seqLens)), NumQ: int32(nq)}), "query_maps")
	must(t, dev.Sync(), "sync after query_maps")
	bufs.checkCanaries(t, "query_maps")
	bufs.checkInputs(t, "query_maps")
	return kernels.BytesInt32(read(t, r)), kernels.BytesInt32(read(t, k))
}

// TestQueryMaps compares query_maps (docs/contract.md §4) with the oracle's metadata builder on batches
// the builder produces (decode, MTP runs, chunks, empty requests, cudagraph padding, no requests),
// and with the documented formula on batches it refuses (seq_len < q_len, qsl[0] ≠ 0, values that
// wrap int32); on a decreasing query_start_loc only the range of req is checked.
func TestQueryMaps(t *testing.T) {
	dev := device(t)
	skipNoQueryMaps(t)
	for i := 0; i < 24; i++ {
		kind := []string{"builder", "builder", "builder", "refused", "wrap", "decreasing"}[i%6]
		path := fmt.Sprintf("%s/%d", kind, i)
		t.Run(path, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(caseSeed("querymaps/"+path), 6))
			R := rng.IntN(12)
			if i == 0 {
				R = 0
			}
			qsl := []int32{0}
			seq := make([]int32, R)
			for r := 0; r < R; r++ {
				ql := int32([]int{0, 1, 1, 1, 2, 4, 5, 17, 128}[rng.IntN(9)])
				qsl = append(qsl, qsl[r]+ql)
				seq[r] = ql + int32(rng.IntN(5000))
			}
			nq := int(qsl[R]) + rng.IntN(9)
			switch kind {
			case "refused":
				for r := range seq {
					if rng.IntN(2) == 0 {
						seq[r] = int32(rng.IntN(3)) - 1 // shorter than the query: klen ≤ 0 for early tokens
					}
				}
				if R > 0 {
					d := int32(rng.IntN(3))
					for r := range qsl {
						qsl[r] += d // qsl[0] ≠ 0: tokens before it belong to request 0
					}
					nq += int(d)
				}
			case "wrap":
				for r := range seq {
					seq[r] = math.MaxInt32 - int32(rng.IntN(3))
				}
			case "decreasing":
				for r := 1; r < len(qsl); r++ {
					qsl[r] = int32(rng.IntN(nq + 1))
				}
			}
			req, klen := runQueryMaps(t, dev, qsl, seq, nq)
			if kind == "decreasing" {
				for t2 := range req {
					if req[t2] < 0 || int(req[t2]) > R {
						failf(t, "query_maps with query_start_loc %v (not monotone): q_to_req[%d] = %d, expected a value in [0, %d]", qsl, t2, req[t2], R)
						break
					}
				}
				return
			}
			wr, wk := refQueryMaps(qsl, seq, nq)
			if kind == "builder" {
				br, bk, err := oracle.BuildQueryMaps(qsl, seq, nq)
				must(t, err, "oracle.BuildQueryMaps")
				for j := range br {
					if br[j] != wr[j] || bk[j] != wk[j] {
						t.Fatalf("test defect: refQueryMaps and oracle.BuildQueryMaps disagree at token %d", j)
					}
				}
			}
			for j := range req {
				if req[j] != wr[j] || klen[j] != wk[j] {
					failf(t, "query_maps (query_start_loc %v, seq_lens %v, num_q %d): token %d got (req %d, klen %d), expected (%d, %d)", qsl, seq, nq, j, req[j], klen[j], wr[j], wk[j])
					break
				}
			}
		})
	}
}

// TestDecodeArbitraryMaps: the kernels only read the query maps, so any contents must work:
// rows of different requests interleaved, klen not monotone, padding anywhere, requests negative
// or past num_reqs, klen ≤ 0, past max_blocks·block_size (clamped), up to INT32_MAX. The output
// is compared with the oracle as in the grid (no slot is poisoned here: every clamped klen reads
// only quantized slots or skipped blocks).
func TestDecodeArbitraryMaps(t *testing.T) {
	device(t)
	for i := 0; i < 12; i++ {
		c := &decodeCase{f: kernelFormat(t, oracle.AllFormats[i%3]), dt: []kernels.Dtype{kernels.F16, kernels.BF16}[i/3%2], g: oracle.AllowedGroups[i%5],
			hkv: 1 + i%2, bs: []int{16, 32, 48, 64}[i%4], lbnhc: i%2 == 1, splits: []int{1, 5, 64}[i%3], qg: 1 + i%4, mode: "decode", pad: "last",
			signs: signKinds[i%3], scale: 1.0 / 16, lens: []int{40 + 13*i, 200, 7}, noPoison: true}
		c.path = fmt.Sprintf("%d/%s/%s/g%d/hkv%d/bs%d/splits%d/qg%d", i, fmtName(c.f.ID), dtName(c.dt), c.g, c.hkv, c.bs, c.splits, c.qg)
		c.remap = func(t *testing.T, s *decodeSetup, rng *rand.Rand) {
			R := int32(s.nreqs)
			kvMax := int32(s.maxBlocks * c.bs)
			n := 6 + rng.IntN(12)
			req, klen := make([]int32, n), make([]int32, n)
			for j := range req {
				req[j] = []int32{int32(rng.IntN(int(R))), int32(rng.IntN(int(R))), int32(rng.IntN(int(R))), -1, R, R + 3, math.MinInt32, math.MaxInt32}[rng.IntN(8)]
				klen[j] = []int32{1 + int32(rng.IntN(int(kvMax))), 1 + int32(rng.IntN(int(kvMax))), 1, 0, -int32(rng.IntN(100)) - 1, kvMax, kvMax + 5, math.MaxInt32}[rng.IntN(8)]
			}
			s.qToReq, s.qToKlen, s.nq = req, klen, n
			_, qf := randRows(rng, n*s.hq, c.dt, gaussian)
			s.in.Query, s.in.QToReq, s.in.QToKlen = qf, req, klen
			must(t, s.in.Validate(), "decode input")
		}
		t.Run(c.path, func(t *testing.T) {
			t.Parallel()
			runDecodeCase(t, c)
		})
	}
}
