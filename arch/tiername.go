package arch

import "strings"

// TierName is the one spelling of a tier's name everywhere in Octant: a registered tier
// (Portable, WMMA, MFMA, MMA) or a native tier that a library runs on a model of its
// architecture's instructions, the registered name with ModelSuffix ("wmma-model"). A kernel
// library reports its tiers' names (octave_tier_info) in this spelling.
type TierName string

// The registered tiers.
const (
	Portable TierName = "portable"
	WMMA     TierName = "wmma"
	MFMA     TierName = "mfma"
	MMA      TierName = "mma"
)

// ModelSuffix ends the name under which a library offers a native tier that it runs on a model of
// the architecture's instructions: the emulator and CUDA builds offer gfx1100's wmma tier as
// "wmma-model" and sm_90's mma tier as "mma-model" on the emulator.
const ModelSuffix = "-model"

// Model is the name of tier n run on a model of its architecture's instructions.
func (n TierName) Model() TierName { return n + ModelSuffix }

// Base is the registered tier n stands for: n itself, or the native tier that a "<tier>-model"
// tier runs on a model.
func (n TierName) Base() TierName { return TierName(strings.TrimSuffix(string(n), ModelSuffix)) }

// IsModel reports whether n names a tier run on a model of its architecture's instructions.
func (n TierName) IsModel() bool { return n.Base() != n }

// ParseTierNames splits a comma-separated list of tier names ("portable, wmma-model"); blanks
// around a name are dropped.
func ParseTierNames(list string) []TierName {
	var out []TierName
	for _, n := range strings.Split(list, ",") {
		out = append(out, TierName(strings.TrimSpace(n)))
	}
	return out
}
