package cases

import (
	"testing"

	"github.com/octant-kv/octant/harness"
	"github.com/octant-kv/octant/oracle"
	"pgregory.net/rapid"
)

// TestRotateReference: the rotation every rotate judgement expects (oracle.Rotate, behind
// harness.RotateCall.Want) equals docs/format.md §3 read independently (refRotate), in float32
// bit for bit, on the rotate target's inputs.
func TestRotateReference(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		c := GPURotateCases().Draw(rt, "case")
		call, err := c.Call()
		if err != nil {
			rt.Fatal(err)
		}
		rc := call.(*harness.RotateCall)
		sh, st := 256+c.HeadGap, c.Heads*(256+c.HeadGap)+c.RowGap
		row := make([]float32, 256)
		for tk := 0; tk < c.Rows; tk++ {
			for h := 0; h < c.Heads; h++ {
				for j := range row {
					row[j] = c.Dtype.FromBits(rc.X[tk*st+h*sh+j])
				}
				y, ref := oracle.Rotate(row, rc.Signs, c.Block()), refRotate(row, rc.Signs, c.Block())
				for j := range y {
					if !sameF32(y[j], ref[j]) {
						rt.Fatalf("oracle.Rotate row %d head %d dim %d = %g, docs/format.md §3 read independently gives %g", tk, h, j, y[j], ref[j])
					}
				}
			}
		}
	})
}
