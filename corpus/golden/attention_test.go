package golden_test

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/octant-kv/octant/corpus/golden"
	"github.com/octant-kv/octant/oracle"
)

// TestGoldenAttention checks the oracle's exact decode against every upstream attention case:
// relative L2 ≤ oracle.GoldenAttentionRelL2 per case, and padding rows exactly zero.
func TestGoldenAttention(t *testing.T) {
	path := filepath.Join("upstream", "attention.json.gz")
	file, err := golden.LoadAttention(path, oracle.SlotBytesFor)
	if err != nil {
		t.Fatal(err)
	}
	if len(file.Cases) == 0 {
		t.Fatalf("%s: no attention cases", path)
	}
	worst := 0.0
	for _, c := range file.Cases {
		t.Run(c.Name, func(t *testing.T) {
			in, err := file.DecodeInput(c)
			if err != nil {
				t.Fatal(err)
			}
			ref := make([]float32, 0, len(c.OutF32)/4)
			for _, u := range c.OutF32.U32() {
				ref = append(ref, math.Float32frombits(u))
			}
			chk, _, err := oracle.CheckDecode(in, ref)
			if err != nil {
				t.Fatal(err)
			}
			worst = math.Max(worst, chk.RelL2)
			t.Logf("%s %s G=%d: rel L2 %.3g, max abs %.3g, %d padding rows", c.Name, c.CacheDtype, in.Group(), chk.RelL2, chk.MaxAbsErr, chk.PaddingRows)
			if chk.RelL2 > oracle.GoldenAttentionRelL2 {
				t.Errorf("rel L2 %.3g against the reference, expected ≤ %g", chk.RelL2, oracle.GoldenAttentionRelL2)
			}
			if len(chk.BadPadding) > 0 {
				t.Errorf("padding rows %v are not exactly zero (in the output or the reference)", chk.BadPadding)
			}
		})
	}
	t.Logf("worst golden attention rel L2 over %d cases: %.3g", len(file.Cases), worst)
}
