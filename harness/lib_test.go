package harness

import (
	"slices"
	"strings"
	"testing"

	"github.com/octant-kv/octant/arch"
	"github.com/octant-kv/octant/kernels"
)

// TestOnly: $OCTANT_TIERS's view keeps the named tiers in the library's order, and a name the
// device does not offer is an error listing those it does; OnTier of an unknown tier offers none.
func TestOnly(t *testing.T) {
	l := &Lib{Path: "liboctave_x.so", Tiers: []kernels.TierDesc{{Name: "portable"}, {Name: "wmma-model"}}}
	for _, c := range []struct {
		names []arch.TierName
		want  []arch.TierName
	}{
		{[]arch.TierName{"portable"}, []arch.TierName{"portable"}},
		{[]arch.TierName{"wmma-model", "portable"}, []arch.TierName{"portable", "wmma-model"}},
	} {
		v, err := l.Only(c.names)
		if err != nil || !slices.Equal(v.TierNames(), c.want) {
			t.Errorf("Only(%q) = %v, %v; expected %v", c.names, v.TierNames(), err, c.want)
		}
	}
	if _, err := l.Only([]arch.TierName{"portable", "mma"}); err == nil || !strings.Contains(err.Error(), `tier "mma" is not offered by liboctave_x.so: expected some of portable, wmma-model`) {
		t.Errorf("Only with an unknown tier: %v", err)
	}
	if got := l.OnTier("mma").TierNames(); len(got) != 0 {
		t.Errorf("OnTier(mma) offers %v, expected none", got)
	}
	if got := l.TierNames(); len(got) != 2 {
		t.Errorf("Only changed the library's own tiers: %v", got)
	}
}
