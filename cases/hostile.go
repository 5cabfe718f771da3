package cases

import (
	"math"
	"math/rand/v2"
	"strings"

	"github.com/octant-kv/octant/harness"
	"github.com/octant-kv/octant/oracle"
)

// Hostile content for every input a result must not depend on (docs/contract.md §3; the
// complement of oracle's ReadSet): cache slots no row attends, pad bytes and the bytes between
// slots, block-table entries no row reads and preallocated table rows after the batch's, the query
// values and map entries of rows that attend to nothing, the workspace; for prefill the token rows
// in no sequence; for the store the K and V rows it does not store and the old bytes of the slots it
// writes; for the reduce the o of empty splits and the floats past 258 in each partial row. A
// recipe with a HostileSeed gets this fill (the generators draw one in about half the cases), and
// the must-not-matter properties (mustnotmatter.go) require that a second, different hostile fill
// changes no output bit.

// Region is a set of must-not-matter regions (bits), so that a failure can name the one that
// mattered.
type Region uint

// The regions.
const (
	RegionUnreadSlots   Region = 1 << iota // cache slots no row attends: codes random, every scale +inf, −inf, NaN, subnormal or ±65504
	RegionPadBytes                         // pad bytes of every slot and the bytes between slots (padded strides)
	RegionTable                            // block-table entries no row reads (past every row's klen; rows of requests no row reads)
	RegionTableTail                        // preallocated table rows after num_reqs (decode)
	RegionPaddingRows                      // query values of rows that attend to nothing, and their map entries among padding values (decode)
	RegionWorkspace                        // the partials workspace: NaN or stale finite values (decode)
	RegionChunkRows                        // q, k and v of token rows in no sequence (prefill)
	RegionSkippedTokens                    // K and V rows the store does not store (slot < 0, or past num_tokens)
	RegionSlotsBefore                      // the old data bytes of the slots the store writes
	RegionEmptySplits                      // o of the splits with no token (m = −inf) (reduce)
	RegionStridePad                        // the floats past 258 in each partial row (reduce)
	regionEnd
)

var regionNames = []string{"unread-slots", "pad-bytes", "table", "table-tail", "padding-rows", "workspace", "chunk-rows",
	"skipped-tokens", "slots-before", "empty-splits", "stride-pad"}

func (r Region) String() string {
	var n []string
	for i, name := range regionNames {
		if r&(1<<i) != 0 {
			n = append(n, name)
		}
	}
	if len(n) == 0 {
		return "none"
	}
	return strings.Join(n, "+")
}

// Regions of each op.
const (
	DecodeRegions  = RegionUnreadSlots | RegionPadBytes | RegionTable | RegionTableTail | RegionPaddingRows | RegionWorkspace
	PrefillRegions = RegionUnreadSlots | RegionPadBytes | RegionTable | RegionChunkRows
	StoreRegions   = RegionSkippedTokens | RegionSlotsBefore
	ReduceRegions  = RegionEmptySplits | RegionStridePad
)

// hostileScales are the fp16 scale patterns a hostile slot holds: ±inf, NaNs, ±smallest
// subnormal, ±65504.
var hostileScales = []uint16{0x7c00, 0xfc00, 0x7e00, 0xfe01, 0x0001, 0x8001, 0x7bff, 0xfbff}

// hostileValue is an activation a row that must not matter may hold: NaN, ±inf, ±65504 (the
// dtype's nearest), or a large random value.
func hostileValue(dt harness.Dtype, r *rand.Rand) float32 {
	switch r.IntN(6) {
	case 0:
		return float32(math.NaN())
	case 1:
		return float32(math.Inf(1))
	case 2:
		return float32(math.Inf(-1))
	case 3:
		return dt.Round(65504)
	case 4:
		return dt.Round(-65504)
	}
	return dt.Round(float32(r.NormFloat64() * 1e4))
}

// hostileRows fills rows rows of width values in x (row-major) where keep is false.
func hostileRows(x []float32, width int, keep []bool, dt harness.Dtype, r *rand.Rand) {
	for i, k := range keep {
		if k {
			continue
		}
		for j := i * width; j < (i+1)*width; j++ {
			x[j] = hostileValue(dt, r)
		}
	}
}

// hostileCache returns a copy of c whose bytes outside rs.Cache hold hostile content: unread
// slots (RegionUnreadSlots) random codes and hostile scales; pad bytes and the bytes between slots
// (RegionPadBytes) random.
func hostileCache(c *oracle.Cache, rs oracle.ReadSet, regions Region, r *rand.Rand) *oracle.Cache {
	out := *c
	out.Data = append([]byte(nil), c.Data...)
	f := c.F
	sb, data := f.SlotBytes(), f.SlotBytes()-f.PadBytes()
	inSlot := make([]bool, len(out.Data))
	for b := 0; b < c.NumBlocks; b++ {
		for h := 0; h < c.NumKVHeads; h++ {
			for t := 0; t < c.BlockSize; t++ {
				o := c.SlotOffset(b, h, t)
				for i := o; i < o+sb; i++ {
					inSlot[i] = true
				}
				s := out.Data[o : o+sb]
				if regions&RegionPadBytes != 0 {
					for i := data; i < sb; i++ {
						s[i] = byte(r.Uint32())
					}
				}
				if rs.Cache[o] || regions&RegionUnreadSlots == 0 {
					continue
				}
				for i := 0; i < f.OffScales(); i++ {
					s[i] = byte(r.Uint32())
				}
				for g := 0; g < f.NumScales(); g++ {
					h := hostileScales[r.IntN(len(hostileScales))]
					s[f.OffScales()+2*g], s[f.OffScales()+2*g+1] = byte(h), byte(h>>8)
				}
			}
		}
	}
	if regions&RegionPadBytes != 0 {
		for i, in := range inSlot {
			if !in {
				out.Data[i] = byte(r.Uint32())
			}
		}
	}
	return &out
}

// hostileTable returns a copy of table whose entries outside read hold valid ids of random blocks
// (they point at hostile slots) or invalid ones.
func hostileTable(table []int32, read []bool, numBlocks int, r *rand.Rand) []int32 {
	out := append([]int32(nil), table...)
	bad := invalidIDs(numBlocks)
	for i, ok := range read {
		if ok {
			continue
		}
		if r.IntN(2) == 0 {
			out[i] = int32(r.IntN(max(numBlocks, 1)))
		} else {
			out[i] = bad[r.IntN(len(bad))]
		}
	}
	return out
}

// hostileDecode returns a copy of c with hostile content in the given regions (DecodeRegions).
func hostileDecode(c *harness.DecodeCall, seed uint64, regions Region) *harness.DecodeCall {
	r := newRand(seed, 20)
	in := *c.In
	rs := in.ReadSet()
	in.Cache = hostileCache(c.In.Cache, rs, regions, r)
	out := &harness.DecodeCall{In: &in, Dtype: c.Dtype, NumSplits: c.NumSplits, QueryGroup: c.QueryGroup, PartialStride: c.PartialStride,
		QueryPadHeads: c.QueryPadHeads, OutPad: c.OutPad, StaleWorkspace: c.StaleWorkspace, SkipContract: c.SkipContract,
		TableTail: append([]int32(nil), c.TableTail...)}
	if regions&RegionTable != 0 {
		in.BlockTable = hostileTable(c.In.BlockTable, rs.Table, in.Cache.NumBlocks, r)
	}
	if regions&RegionTableTail != 0 {
		tail := make([]int32, (1+r.IntN(3))*max(in.MaxBlocks, 1))
		out.TableTail = hostileTable(tail, make([]bool, len(tail)), in.Cache.NumBlocks, r)
	}
	if regions&RegionPaddingRows != 0 {
		in.Query = append([]float32(nil), c.In.Query...)
		hostileRows(in.Query, in.NumQHeads*in.Cache.F.HeadSize, rs.Rows, c.Dtype, r)
		in.QToReq, in.QToKlen = append([]int32(nil), c.In.QToReq...), append([]int32(nil), c.In.QToKlen...)
		pads := paddingPairs(in.NumReqs)
		for i, ok := range rs.Rows {
			if !ok {
				p := pads[r.IntN(len(pads))]
				in.QToReq[i], in.QToKlen[i] = p[0], p[1]
			}
		}
	}
	if regions&RegionWorkspace != 0 {
		out.StaleWorkspace = !c.StaleWorkspace
	}
	return out
}

// paddingPairs are (q_to_req, q_to_klen) pairs of rows that attend to nothing: cudagraph padding
// (num_reqs, 0), requests outside [0, num_reqs), and klen ≤ 0 (docs/contract.md §3.3).
func paddingPairs(numReqs int) [][2]int32 {
	p := [][2]int32{{int32(numReqs), 0}, {-1, 9}, {int32(numReqs + 7), 5}, {math.MaxInt32, math.MaxInt32}, {math.MinInt32, 1}}
	if numReqs > 0 {
		p = append(p, [2]int32{0, 0}, [2]int32{int32(numReqs - 1), -3}, [2]int32{0, math.MinInt32})
	}
	return p
}

// hostilePrefill returns a copy of c with hostile content in the given regions (PrefillRegions).
func hostilePrefill(c *harness.PrefillCall, seed uint64, regions Region) *harness.PrefillCall {
	r := newRand(seed, 21)
	in := *c.In
	rs := in.ReadSet()
	in.Cache = hostileCache(c.In.Cache, rs, regions, r)
	if regions&RegionTable != 0 {
		in.BlockTable = hostileTable(c.In.BlockTable, rs.Table, in.Cache.NumBlocks, r)
	}
	if regions&RegionChunkRows != 0 {
		d, hkv := in.Cache.F.HeadSize, in.Cache.NumKVHeads
		in.Q, in.K, in.V = append([]float32(nil), c.In.Q...), append([]float32(nil), c.In.K...), append([]float32(nil), c.In.V...)
		hostileRows(in.Q, in.NumQHeads*d, rs.Rows, c.Dtype, r)
		hostileRows(in.K, hkv*d, rs.Rows, c.Dtype, r)
		hostileRows(in.V, hkv*d, rs.Rows, c.Dtype, r)
	}
	return &harness.PrefillCall{In: &in, Dtype: c.Dtype, Fused: c.Fused, OutPad: c.OutPad, Splits: c.Splits}
}

// hostileStore returns a copy of c with hostile content in the given regions (StoreRegions).
func hostileStore(c *harness.StoreCall, seed uint64, regions Region) *harness.StoreCall {
	r := newRand(seed, 22)
	out := *c
	view := *c.Cache
	view.Data = append([]byte(nil), c.Cache.Data...)
	out.Cache = &view
	d, hkv := view.F.HeadSize, view.NumKVHeads
	stored := make([]bool, c.Rows)
	for t, s := range c.Mapping {
		if s >= 0 && s < int64(view.NumBlocks*view.BlockSize) {
			stored[t] = true
		}
	}
	if regions&RegionSkippedTokens != 0 {
		out.K, out.V = append([]float32(nil), c.K...), append([]float32(nil), c.V...)
		hostileRows(out.K, hkv*d, stored, c.Dtype, r)
		hostileRows(out.V, hkv*d, stored, c.Dtype, r)
	}
	if regions&RegionSlotsBefore != 0 {
		data := view.F.SlotBytes() - view.F.PadBytes()
		for t, s := range c.Mapping {
			if !stored[t] {
				continue
			}
			for h := 0; h < hkv; h++ {
				o := view.SlotOffset(int(s)/view.BlockSize, h, int(s)%view.BlockSize)
				for i := o; i < o+data; i++ {
					view.Data[i] = byte(r.Uint32())
				}
			}
		}
	}
	return &out
}

// hostileReduce returns a copy of c with hostile content in the given regions (ReduceRegions).
func hostileReduce(c *harness.ReduceCall, seed uint64, regions Region) *harness.ReduceCall {
	r := newRand(seed, 23)
	out := *c
	out.Partials = append([]float32(nil), c.Partials...)
	P := c.PartialStride
	if P == 0 {
		P = oracle.DefaultPartialStride
	}
	vals := func() float32 {
		return []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), math.MaxFloat32, float32(r.NormFloat64() * 1e30)}[r.IntN(5)]
	}
	for row := 0; row < c.NumQ*c.Heads*c.Splits; row++ {
		p := out.Partials[row*P:][:P]
		if regions&RegionEmptySplits != 0 && math.IsInf(float64(p[256]), -1) {
			for i := 0; i < 256; i++ {
				p[i] = vals()
			}
		}
		if regions&RegionStridePad != 0 {
			for i := 258; i < P; i++ {
				p[i] = vals()
			}
		}
	}
	return &out
}
