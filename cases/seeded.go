package cases

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/octant-kv/octant/arch"
)

// CaseGenVersion names the seeded case generator (SeededRecipe): the draw functions of this
// package fed by a PCG stream of math/rand/v2, a specified algorithm. The same (op, seed) gives
// the same recipe, bit for bit, on every platform and with any version of rapid, which the seeded
// path never touches (rapid documents Generator.Example as for examples only: its encoding of
// choices may change between versions, and a certificate's "seed 12" must not). Bump it whenever
// a draw function changes what a seed produces; TestSeededRecipesPinned holds the digest of the
// current version's cases and fails until it is bumped.
const CaseGenVersion = "octant-cases/4" // 4: prefill recipes draw num_splits

// seededStream separates the ops' PCG streams, so that seed n of one op is unrelated to seed n of
// another.
var seededStream = map[arch.Op]uint64{arch.Store: 0x5701, arch.Rotate: 0x5702, arch.Decode: 0x5703, arch.Reduce: 0x5704, arch.Prefill: 0x5705}

// SeededRecipe draws the recipe of one call of op from seed alone (CaseGenVersion): what the
// conformance battery certifies. The distributions are the fuzz targets' (the same draw
// functions), with every choice taken uniformly from the PCG stream instead of rapid's
// small-biased choices.
func SeededRecipe(op arch.Op, seed uint64) (Recipe, error) {
	stream, ok := seededStream[op]
	if !ok {
		return nil, fmt.Errorf("no seeded generator for op %q: expected one of %v", op, arch.Ops())
	}
	d := rngDraw{rand.New(rand.NewPCG(seed, stream))}
	switch op {
	case arch.Store:
		return drawGPUStoreCase(d), nil
	case arch.Rotate:
		return drawGPURotateCase(d), nil
	case arch.Decode:
		return drawGPUDecodeCase(d, GPUDecodeOptions()), nil
	case arch.Reduce:
		return drawGPUReduceCase(d), nil
	default:
		return drawGPUPrefillCase(d), nil
	}
}

// fmtShort is a cache dtype's short name in case paths ("k3v4", "k3v3c").
func fmtShort(name string) string {
	return strings.NewReplacer("octave_", "", "_compact", "c").Replace(name)
}

// Path names the store case by its shape: format/dtype/hkv<H>/bs<B>/<layout>/n<tokens>.
func (c *GPUStoreCase) Path() string {
	return fmt.Sprintf("%s/%s/hkv%d/bs%d/%s/n%d", fmtShort(c.Cache.Format), c.Dtype, c.Cache.NumKVHeads, c.Cache.BlockSize,
		strings.ToLower(string(c.Cache.Layout)), len(c.Mapping))
}

// Path names the rotate case by its shape: dtype/block<64|256>/<forward|inverse>/rows<T>.
func (c *GPURotateCase) Path() string {
	dir := "forward"
	if c.Inverse {
		dir = "inverse"
	}
	return fmt.Sprintf("%s/block%d/%s/rows%d", c.Dtype, c.Block(), dir, c.Rows)
}

// Path names the decode case by its shape: format/dtype/g<G>/bs<B>/<layout>/splits<S>/q<rows>.
func (c *GPUDecodeCase) Path() string {
	s := c.Spec
	return fmt.Sprintf("%s/%s/g%d/bs%d/%s/splits%d/q%d", fmtShort(s.Cache.Format), s.Dtype, s.Group, s.Cache.BlockSize,
		strings.ToLower(string(s.Cache.Layout)), s.NumSplits, len(s.Maps.QToReq))
}

// Path names the reduce case by its shape: dtype/splits<S>/q<Q>/h<H>.
func (c *GPUReduceCase) Path() string {
	return fmt.Sprintf("%s/splits%d/q%d/h%d", c.Dtype, c.Splits, c.NumQ, c.Heads)
}

// Path names the prefill case by its shape: format/dtype/g<G>/bs<B>/<layout>/seqs<S>/t<T>.
func (c *GPUPrefillCase) Path() string {
	return fmt.Sprintf("%s/%s/g%d/bs%d/%s/seqs%d/t%d", fmtShort(c.Cache.Format), c.Dtype, c.Group, c.Cache.BlockSize,
		strings.ToLower(string(c.Cache.Layout)), len(c.Batch.Requests), c.Batch.NumTokens)
}
