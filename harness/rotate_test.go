package harness

import (
	"strings"
	"testing"

	"github.com/octant-kv/octant/oracle"
)

// TestRotateOracleIndependent: the oracle's implementation of rotate is computed apart from the
// expected tensor, so an expected tensor that is wrong in one element fails the oracle's verdict
// instead of being compared with itself.
func TestRotateOracleIndependent(t *testing.T) {
	for _, inverse := range []bool{false, true} {
		c := &RotateCall{Dtype: F16, Rows: 2, Heads: 2, HeadGap: 3, RowGap: 5, Block64: !inverse, Inverse: inverse,
			Signs: oracle.DefaultSigns(256)}
		sh, st := c.strides()
		c.X = make([]uint16, c.Rows*st)
		for i := range c.X {
			c.X[i] = F16.Bits(float32(i%97)/16 - 3)
		}
		im := Impl{Name: OracleImpl, Oracle: true}
		if v := c.judge(nil, im); v.Status != Pass {
			t.Fatalf("inverse %v: the oracle's rotate against its own model: %v", inverse, v)
		}
		want := c.Want()
		want[st+sh+17] ^= 1 // one element of row 1, head 1 off by one unit in the last place
		v := c.judgeAgainst(nil, im, want)
		if v.Status != Fail || !strings.Contains(v.Err.Error(), "rotate row 1 head 1 dim 17") {
			t.Errorf("inverse %v: an expected tensor wrong in one element: %v, expected a Fail naming row 1 head 1 dim 17", inverse, v)
		}
	}
}
