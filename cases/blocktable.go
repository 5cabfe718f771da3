package cases

import (
	"math"

	"pgregory.net/rapid"
)

// BlockTable is a decode call's block table (docs/contract.md §1: int32 [num_reqs][max_blocks],
// row-major) with how it was made.
type BlockTable struct {
	Table     []int32 `json:"table"`
	NumReqs   int     `json:"num_reqs"`
	MaxBlocks int     `json:"max_blocks"`
	NumBlocks int     `json:"num_blocks"` // physical blocks of the cache
	// Shared[r] is the number of leading blocks request r shares with request 0 (prefix caching:
	// the same physical blocks in both rows).
	Shared []int `json:"shared,omitempty"`
	// Invalid counts ids outside [0, num_blocks) placed inside a request's blocks (tokens there
	// are skipped, docs/contract.md §3.3); Garbage counts entries past a request's last block that hold
	// something other than 0.
	Invalid int `json:"invalid,omitempty"`
	Garbage int `json:"garbage,omitempty"`
}

// Row returns request r's row.
func (b BlockTable) Row(r int) []int32 { return b.Table[r*b.MaxBlocks : (r+1)*b.MaxBlocks] }

// invalidIDs are the out-of-range physical ids a table may hold.
func invalidIDs(numBlocks int) []int32 {
	return []int32{-1, int32(numBlocks), int32(numBlocks) + 7, math.MinInt32, math.MaxInt32}
}

func drawBlockTable(d draw, seqLens []int, bs int) BlockTable {
	n := len(seqLens)
	nb := make([]int, n)
	maxNB := 0
	for r, s := range seqLens {
		nb[r] = (max(s, 0) + bs - 1) / bs
		maxNB = max(maxNB, nb[r])
	}
	t := BlockTable{NumReqs: n, MaxBlocks: max(1, maxNB+d.intn(0, 2, "extra_table_cols"))}
	// Prefix caching: later requests share their first full blocks with request 0.
	t.Shared = make([]int, n)
	if n >= 2 && d.intn(0, 2, "share_prefix") == 2 {
		want := d.intn(1, max(1, seqLens[0]/bs), "shared_blocks")
		for r := 1; r < n; r++ {
			t.Shared[r] = min(want, seqLens[0]/bs, max(seqLens[r], 0)/bs)
		}
	}
	need := 0
	for r := range nb {
		need += nb[r] - t.Shared[r]
	}
	t.NumBlocks = max(1, need+d.intn(0, 3, "spare_blocks"))
	r := newRand(d.u64("table_seed"), 4)
	perm := r.Perm(t.NumBlocks)
	t.Table = make([]int32, n*t.MaxBlocks)
	next := 0
	for q := 0; q < n; q++ {
		row := t.Row(q)
		for lb := 0; lb < nb[q]; lb++ {
			if lb < t.Shared[q] {
				row[lb] = t.Row(0)[lb]
				continue
			}
			row[lb] = int32(perm[next])
			next++
		}
	}
	// Invalid ids inside requests' blocks.
	if d.intn(0, 3, "invalid_ids") == 3 {
		bad := invalidIDs(t.NumBlocks)
		for k := d.intn(1, 3, "invalid_count"); k > 0; k-- {
			q := d.intn(0, n-1, "invalid_req")
			if nb[q] == 0 {
				continue
			}
			t.Row(q)[d.intn(0, nb[q]-1, "invalid_block")] = pick(d, bad, "invalid_id")
			t.Invalid++
		}
	}
	// Entries past each request's last block: zeros (what vLLM leaves), or garbage.
	mode := d.intn(0, 3, "past_klen")
	for q := 0; q < n; q++ {
		row := t.Row(q)
		for lb := nb[q]; lb < t.MaxBlocks; lb++ {
			switch mode {
			case 1: // valid ids of other requests' blocks
				row[lb] = int32(r.IntN(t.NumBlocks))
			case 2: // anything
				row[lb] = int32(r.Uint32())
			case 3:
				row[lb] = -1
			}
			if row[lb] != 0 {
				t.Garbage++
			}
		}
	}
	return t
}

// BlockTables draws a block table for requests of the given sequence lengths and block size:
// physical blocks shuffled, leading blocks shared between requests (prefix caching), invalid ids
// inside a request's blocks, and garbage past each request's last block.
func BlockTables(seqLens []int, blockSize int) *rapid.Generator[BlockTable] {
	return rapid.Custom(func(t *rapid.T) BlockTable { return drawBlockTable(rapidDraw{t}, seqLens, blockSize) })
}

// SlotMappingPatterns are the shapes of a store's slot_mapping (docs/contract.md §3.1).
var SlotMappingPatterns = []string{"sequential", "reversed", "random", "pad-first", "pad-middle", "pad-last", "sparse"}

// drawSlotMapping draws n distinct flat slot indices in [0, numSlots), or −1 (skip).
func drawSlotMapping(d draw, n, numSlots int) []int64 {
	pattern := pick(d, SlotMappingPatterns, "slot_pattern")
	r := newRand(d.u64("slot_seed"), 5)
	m := make([]int64, n)
	perm := r.Perm(numSlots)
	base := r.IntN(max(1, numSlots-n+1))
	for i := range m {
		switch pattern {
		case "sequential":
			m[i] = int64(base + i)
		case "reversed":
			m[i] = int64(base + n - 1 - i)
		default:
			m[i] = int64(perm[i%numSlots])
		}
	}
	switch pattern {
	case "pad-first":
		m[0] = -1
	case "pad-middle":
		m[n/2] = -1
	case "pad-last":
		m[n-1] = -1
	case "sparse":
		for i := range m {
			if r.IntN(3) == 0 {
				m[i] = -1
			}
		}
	}
	return m
}

// SlotMappings draws a store's slot_mapping of n ≥ 1 entries into a cache of numSlots ≥ n slots:
// distinct indices (docs/contract.md §3.1 makes a repeated slot an error) in sequential, reversed or
// random order, with −1 (skip) first, in the middle, last or scattered.
func SlotMappings(n, numSlots int) *rapid.Generator[[]int64] {
	return rapid.Custom(func(t *rapid.T) []int64 { return drawSlotMapping(rapidDraw{t}, n, numSlots) })
}
