package cases

import (
	"fmt"
	"sync"

	"github.com/octant-kv/octant/harness"

	"github.com/octant-kv/octant/internal/par"
	"github.com/octant-kv/octant/oracle"
	"pgregory.net/rapid"
)

// Layout is the order of a cache's outer dims (docs/contract.md §1).
type Layout string

// The two layouts vLLM uses.
const (
	LBHNC Layout = "LBHNC" // blocks, heads, tokens, slot (the contiguous form)
	LBNHC Layout = "LBNHC" // blocks, tokens, heads, slot
)

// CacheShape is the geometry of a packed cache: format, sizes, layout, and extra bytes between
// slots (PadToken for LBHNC, PadHead for LBNHC), between the middle dim's runs and between blocks.
// The pads are multiples of 8 bytes (4 for the compact format), so slots stay dword-aligned.
type CacheShape struct {
	Format     string `json:"format"` // cache dtype name, e.g. "octave_k3v4"
	NumBlocks  int    `json:"num_blocks"`
	NumKVHeads int    `json:"num_kv_heads"`
	BlockSize  int    `json:"block_size"`
	Layout     Layout `json:"layout"`
	PadToken   int    `json:"pad_token,omitempty"`
	PadHead    int    `json:"pad_head,omitempty"`
	PadBlock   int    `json:"pad_block,omitempty"`
}

// KernelFormat parses a cache dtype name into the kernels' layout (head 256, rope 64).
func KernelFormat(name string) (oracle.Format, error) {
	return oracle.ParseFormat(name, oracle.KernelHeadSize, oracle.KernelRopeDim)
}

// Strides returns the byte strides (block, head, token) of the shape.
func (c CacheShape) Strides(f oracle.Format) (block, head, token int) {
	sb := f.SlotBytes()
	if c.Layout == LBNHC {
		head = sb + c.PadHead
		token = c.NumKVHeads*head + c.PadToken
		block = c.BlockSize*token + c.PadBlock
	} else {
		token = sb + c.PadToken
		head = c.BlockSize*token + c.PadHead
		block = c.NumKVHeads*head + c.PadBlock
	}
	return
}

// Bytes is the size of the cache's data.
func (c CacheShape) Bytes(f oracle.Format) int {
	b, _, _ := c.Strides(f)
	return c.NumBlocks * b
}

// View returns a validated oracle view of data with this shape.
func (c CacheShape) View(f oracle.Format, data []byte) (*oracle.Cache, error) {
	b, h, t := c.Strides(f)
	v := &oracle.Cache{F: f, Data: data, NumBlocks: c.NumBlocks, NumKVHeads: c.NumKVHeads, BlockSize: c.BlockSize,
		StrideBlock: b, StrideHead: h, StrideToken: t}
	if err := v.Validate(); err != nil {
		return nil, fmt.Errorf("cache shape %+v: %w", c, err)
	}
	return v, nil
}

// Padded reports whether the shape has any extra bytes between slots, runs or blocks.
func (c CacheShape) Padded() bool { return c.PadToken+c.PadHead+c.PadBlock > 0 }

func drawCacheLayout(d draw, f oracle.Format, c *CacheShape) {
	c.Layout = pick(d, []Layout{LBHNC, LBNHC}, "layout")
	align := 8
	if f.Compact() {
		align = 4
	}
	if d.intn(0, 2, "padded") == 2 {
		c.PadToken = align * d.intn(0, 4, "pad_token")
		c.PadHead = align * d.intn(0, 4, "pad_head")
		c.PadBlock = align * d.intn(0, 8, "pad_block")
	}
}

// CacheShapes draws a cache shape for format name with the given sizes: either layout, and padded
// strides in a third of the draws.
func CacheShapes(format string, numBlocks, numKVHeads, blockSize int) *rapid.Generator[CacheShape] {
	return rapid.Custom(func(t *rapid.T) CacheShape {
		f, err := KernelFormat(format)
		if err != nil {
			panic("fuzz: " + err.Error())
		}
		c := CacheShape{Format: format, NumBlocks: numBlocks, NumKVHeads: numKVHeads, BlockSize: blockSize}
		drawCacheLayout(rapidDraw{t}, f, &c)
		return c
	})
}

// Garbage is what the slots no request has written hold (docs/contract.md §3.1: the store writes only
// the slots it maps; everything else keeps what was there).
type Garbage string

// Kinds of stale content.
const (
	GarbageRandom = Garbage("random")        // random bytes: non-finite scales included, so an over-read shows
	GarbageFinite = Garbage("random-finite") // random bytes with every scale made finite
	GarbageStale  = Garbage("stale")         // slots quantized from other values (a previous request's)
	GarbageZero   = Garbage("zero")          // zero bytes (a fresh allocation)
)

// CacheContent is the recipe of a cache's bytes: the values behind the live slots (a mix of value
// kinds, each KV head at its own scale), the garbage elsewhere, and whether non-finite fp16 scales
// are replaced by the largest finite one (for properties that need every readable value finite).
// Bytes between slots and the pad bytes of live slots are always random: readers must ignore them.
type CacheContent struct {
	Seed          uint64        `json:"seed"`
	Dtype         harness.Dtype `json:"dtype"`
	Kinds         []ValueKind   `json:"kinds"`
	HeadLog2Scale []float64     `json:"head_log2_scale,omitempty"` // per KV head, added to each value's scale
	Garbage       Garbage       `json:"garbage"`
	FiniteScales  bool          `json:"finite_scales,omitempty"`
}

// scaledKind reports whether a kind's magnitude follows Log2Scale (so a per-head shift applies).
func scaledKind(k ValueKind) bool {
	switch k {
	case Zero, F16Subnormal, DtypeExtremes:
		return false
	}
	return true
}

func drawKindMix(d draw, kinds []ValueKind, label string) []ValueKind {
	if d.intn(0, 2, label+"_single") < 2 {
		return []ValueKind{pick(d, kinds, label)}
	}
	n := d.intn(2, 4, label+"_count")
	mix := make([]ValueKind, n)
	for i := range mix {
		mix[i] = pick(d, kinds, label)
	}
	return mix
}

func drawHeadScales(d draw, n int, label string) []float64 {
	if d.intn(0, 2, label+"_spread") < 2 {
		return nil
	}
	s := make([]float64, n)
	for i := range s {
		s[i] = d.f64(-8, 8, label)
	}
	return s
}

// drawCacheContent draws a content recipe; garbage is one of allowed.
func drawCacheContent(d draw, dt harness.Dtype, hkv int, allowed []Garbage) CacheContent {
	return CacheContent{
		Seed:          d.u64("cache_seed"),
		Dtype:         dt,
		Kinds:         drawKindMix(d, FiniteKinds, "cache_kind"),
		HeadLog2Scale: drawHeadScales(d, hkv, "cache_head_log2_scale"),
		Garbage:       pick(d, allowed, "garbage"),
	}
}

// sliceAt returns s[i] or 0.
func sliceAt(s []float64, i int) float64 {
	if i < len(s) {
		return s[i]
	}
	return 0
}

// BuildCache allocates and fills a cache: every slot for which live reports true holds the
// quantization (oracle.Quantizer, signs sp) of K and V drawn from content's kinds, with random pad
// bytes; every other slot holds content's garbage; bytes between slots are random.
func BuildCache(shape CacheShape, content CacheContent, sp SignPair, live func(block, head, token int) bool) (*oracle.Cache, error) {
	f, err := KernelFormat(shape.Format)
	if err != nil {
		return nil, err
	}
	data := make([]byte, shape.Bytes(f))
	c, err := shape.View(f, data)
	if err != nil {
		return nil, err
	}
	r := newRand(content.Seed, 3)
	for i := 0; i+8 <= len(data); i += 8 {
		u := r.Uint64()
		for k := 0; k < 8; k++ {
			data[i+k] = byte(u >> (8 * k))
		}
	}
	for i := len(data) &^ 7; i < len(data); i++ {
		data[i] = byte(r.Uint32())
	}
	d := rngDraw{r}
	d256 := f.HeadSize
	ks, vs := sp.K.Signs(d256), sp.V.Signs(d256)
	q, err := oracle.NewQuantizer(f, ks, vs)
	if err != nil {
		return nil, err
	}
	kinds := content.Kinds
	if len(kinds) == 0 {
		kinds = []ValueKind{Gaussian}
	}
	dt := content.Dtype
	if !dt.Valid() {
		dt = harness.F16
	}
	pad := f.SlotBytes() - f.PadBytes()
	// Stale slots: a small pool of slots quantized from Gaussian values (an earlier request's),
	// copied around.
	var stale [][]byte
	if content.Garbage == GarbageStale {
		for i := 0; i < 8; i++ {
			kspec := ValueSpec{Kind: Gaussian, Dtype: dt, Seed: r.Uint64()}
			vspec := ValueSpec{Kind: Gaussian, Dtype: dt, Seed: r.Uint64()}
			sl := make([]byte, f.SlotBytes())
			q.QuantizeInto(sl, kspec.Build(d256, ks, f.KRotBlock()), vspec.Build(d256, vs, f.VRotBlock()))
			stale = append(stale, sl)
		}
	}
	// First pass, in slot order: every draw from the stream (garbage, value recipes). Second pass,
	// in parallel: the live slots' values built and quantized (the bulk of the cost); the result
	// does not depend on the schedule.
	type liveSlot struct {
		s            []byte
		kspec, vspec ValueSpec
	}
	var lives []liveSlot
	for b := 0; b < c.NumBlocks; b++ {
		for h := 0; h < c.NumKVHeads; h++ {
			for t := 0; t < c.BlockSize; t++ {
				s := c.Slot(b, h, t)
				if live == nil || !live(b, h, t) {
					switch content.Garbage {
					case GarbageZero:
						clear(s)
					case GarbageFinite:
						finiteScales(f, s)
					case GarbageStale:
						copy(s[:pad], stale[r.IntN(len(stale))])
					}
					continue
				}
				kspec := drawValueSpec(d, pick(d, kinds, ""), dt)
				vspec := drawValueSpec(d, pick(d, kinds, ""), dt)
				if scaledKind(kspec.Kind) {
					kspec.Log2Scale += sliceAt(content.HeadLog2Scale, h)
				}
				if scaledKind(vspec.Kind) {
					vspec.Log2Scale += sliceAt(content.HeadLog2Scale, h)
				}
				lives = append(lives, liveSlot{s, kspec, vspec})
			}
		}
	}
	var qerr error
	var qmu sync.Mutex
	par.Chunks(len(lives), func(lo, hi int) {
		q, err := oracle.NewQuantizer(f, ks, vs) // one per goroutine: a Quantizer has scratch space
		if err != nil {
			qmu.Lock()
			qerr = err
			qmu.Unlock()
			return
		}
		for _, l := range lives[lo:hi] {
			k := l.kspec.Build(d256, ks, f.KRotBlock())
			v := l.vspec.Build(d256, vs, f.VRotBlock())
			keep := append([]byte(nil), l.s[pad:]...)
			q.QuantizeInto(l.s, k, v)
			copy(l.s[pad:], keep) // the store never writes pad bytes
			if content.FiniteScales {
				finiteScales(f, l.s)
			}
		}
	})
	if qerr != nil {
		return nil, qerr
	}
	return c, nil
}

// finiteScales replaces every non-finite fp16 scale of a slot (exponent all ones) by the largest
// finite value with the same sign.
func finiteScales(f oracle.Format, s []byte) {
	o := f.OffScales()
	for g := 0; g < f.NumScales(); g++ {
		h := uint16(s[o+2*g]) | uint16(s[o+2*g+1])<<8
		if h&0x7c00 == 0x7c00 {
			h = h&0x8000 | 0x7bff
			s[o+2*g], s[o+2*g+1] = byte(h), byte(h>>8)
		}
	}
}
