package golden_test

import (
	"testing"

	"github.com/octant-kv/octant/corpus/golden"
)

// TestUpstreamSlots checks the oracle against the upstream reference's slots: no slot may be
// unexplained, and at least 85% must be identical byte for byte (docs/format.md §10: the rest are
// exact ties of the reference's summation order).
func TestUpstreamSlots(t *testing.T) {
	paths, _, err := golden.Dir("upstream")
	if err != nil {
		t.Fatal(err)
	}
	total, identical := 0, 0
	for _, p := range paths {
		f, err := golden.LoadSlots(p)
		if err != nil {
			t.Fatal(err)
		}
		st, err := golden.CheckSlots(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range st.UnexplainedCases {
			t.Errorf("%s: %s", p, u)
		}
		t.Logf("%s: %d identical, %d explained, %d unexplained (%.1f%% identical)", p, st.Identical, st.Explained, st.Unexplained, st.IdenticalPercent())
		total += st.Total()
		identical += st.Identical
	}
	if pct := 100 * float64(identical) / float64(total); pct < 85 {
		t.Errorf("%.1f%% of %d golden slots identical byte for byte, want at least 85%%", pct, total)
	}
}
