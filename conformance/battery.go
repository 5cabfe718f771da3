package conformance

import (
	"errors"
	"fmt"
	"strings"

	"github.com/octant-kv/octant/arch"
	"github.com/octant-kv/octant/fuzz"
	"github.com/octant-kv/octant/kernels"
)

// Unit is one (op, tier) of the battery: it draws case seed and runs it on the library.
type Unit struct {
	Op, Tier string
	// run builds case seed, checks it on g (restricted to the tier) and returns the case's path
	// (without the seed), the check's error and the case (for a reproducer).
	run func(g *fuzz.GPU, seed int) (path string, c any, err error)
	// Property names the fuzz property whose reproducer replays the case.
	Property string
}

// onTier returns a view of g with only the named tier (decode and prefill checks run every tier
// g lists).
func onTier(g *fuzz.GPU, tier string) *fuzz.GPU {
	v := *g
	v.Tiers = nil
	for _, t := range g.Tiers {
		if t.Name == tier {
			v.Tiers = append(v.Tiers, t)
		}
	}
	return &v
}

func fmtShort(name string) string {
	return strings.NewReplacer("octave_", "", "_compact", "c").Replace(name)
}

// Units returns the battery's units for the requirements of an architecture, on the tiers the
// library offers. Ops with no tiers (store, reduce, rotate) have one unit each.
func Units(reqs []arch.Requirement) []Unit {
	var out []Unit
	for _, r := range reqs {
		switch string(r.Op) {
		case "decode":
			for _, t := range r.Tiers {
				out = append(out, Unit{Op: "decode", Tier: t, Property: fuzz.PropNameGPUDecode, run: func(g *fuzz.GPU, seed int) (string, any, error) {
					c := fuzz.GPUDecodeCases(fuzz.GPUDecodeOptions).Example(seed)
					s := c.Spec
					in, err := s.Build()
					if err == nil {
						c.Digest = fuzz.Digest(in)
					}
					path := fmt.Sprintf("decode/%s/%s/%s/g%d/bs%d/%s/splits%d/q%d", t, fmtShort(s.Cache.Format), s.Dtype, s.Group, s.Cache.BlockSize,
						strings.ToLower(string(s.Cache.Layout)), s.NumSplits, len(s.Maps.QToReq))
					if err != nil {
						return path, c, err
					}
					return path, c, fuzz.CheckGPUDecode(onTier(g, t), c)
				}})
			}
		case "prefill":
			for _, t := range r.Tiers {
				out = append(out, Unit{Op: "prefill", Tier: t, Property: fuzz.PropNameGPUPrefill, run: func(g *fuzz.GPU, seed int) (string, any, error) {
					c := fuzz.GPUPrefillCases().Example(seed)
					path := fmt.Sprintf("prefill/%s/%s/%s/g%d/bs%d/%s/seqs%d/t%d", t, fmtShort(c.Cache.Format), c.Dtype, c.Group, c.Cache.BlockSize,
						strings.ToLower(string(c.Cache.Layout)), len(c.Batch.Requests), c.Batch.NumTokens)
					return path, c, fuzz.CheckGPUPrefill(onTier(g, t), c)
				}})
			}
		case "store":
			out = append(out, Unit{Op: "store", Tier: "portable", Property: fuzz.PropNameGPUStore, run: func(g *fuzz.GPU, seed int) (string, any, error) {
				c := fuzz.GPUStoreCases().Example(seed)
				path := fmt.Sprintf("store/portable/%s/%s/hkv%d/bs%d/%s/n%d", fmtShort(c.Cache.Format), c.Dtype, c.Cache.NumKVHeads, c.Cache.BlockSize,
					strings.ToLower(string(c.Cache.Layout)), len(c.Mapping))
				return path, c, fuzz.CheckGPUStore(g, c)
			}})
		case "reduce":
			out = append(out, Unit{Op: "reduce", Tier: "portable", Property: fuzz.PropNameGPUReduce, run: func(g *fuzz.GPU, seed int) (string, any, error) {
				c := fuzz.GPUReduceCases().Example(seed)
				path := fmt.Sprintf("reduce/portable/%s/splits%d/q%d/h%d", c.Dtype, c.Splits, c.NumQ, c.Heads)
				return path, c, fuzz.CheckGPUReduce(g, c)
			}})
		case "rotate":
			out = append(out, Unit{Op: "rotate", Tier: "portable", Property: fuzz.PropNameGPURotate, run: func(g *fuzz.GPU, seed int) (string, any, error) {
				c := fuzz.GPURotateCases().Example(seed)
				dir := "forward"
				if c.Inverse {
					dir = "inverse"
				}
				path := fmt.Sprintf("rotate/portable/%s/block%d/%s/rows%d", c.Dtype, map[bool]int{true: 64, false: 256}[c.Block64], dir, c.Rows)
				return path, c, fuzz.CheckGPURotate(g, c)
			}})
		}
	}
	return out
}

// statusOf classifies a check's error: nil Pass; a fuzz.BoundError within the contract
// QualityWarning; anything else Fail.
func statusOf(err error) (Status, *fuzz.BoundError) {
	if err == nil {
		return Pass, nil
	}
	var be *fuzz.BoundError
	if errors.As(err, &be) && be.WithinContract {
		return QualityWarning, be
	}
	errors.As(err, &be)
	return Fail, be
}

// tierPresent reports whether the library offers the tier for op (store, reduce and rotate have
// no tiers: always present).
func tierPresent(g *fuzz.GPU, op, tier string) bool {
	bit := map[string]int{"decode": kernels.OpDecode, "prefill": kernels.OpPrefill}[op]
	if bit == 0 {
		return true
	}
	for _, t := range g.Tiers {
		if t.Name == tier && t.Ops&bit != 0 {
			return true
		}
	}
	return false
}
