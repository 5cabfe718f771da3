package arch

import (
	"slices"
	"testing"
)

// TestTierName: a model tier's name is its native tier's with ModelSuffix, and back; a registered
// name is its own base; a list parses to names without blanks.
func TestTierName(t *testing.T) {
	if m := WMMA.Model(); m != "wmma-model" || !m.IsModel() || m.Base() != WMMA {
		t.Errorf("WMMA.Model() = %q (IsModel %v, Base %q)", m, m.IsModel(), m.Base())
	}
	for _, n := range []TierName{Portable, WMMA, MFMA, MMA} {
		if n.IsModel() || n.Base() != n {
			t.Errorf("%s: IsModel %v, Base %q", n, n.IsModel(), n.Base())
		}
		if !slices.Contains(TierNames(), n) {
			t.Errorf("%s is not registered (TierNames %v)", n, TierNames())
		}
	}
	if got := ParseTierNames("portable, wmma-model"); !slices.Equal(got, []TierName{Portable, WMMA.Model()}) {
		t.Errorf("ParseTierNames = %q", got)
	}
}
