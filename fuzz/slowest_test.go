package fuzz

import (
	"testing"
	"time"

	"github.com/octant-kv/octant/cases"
)

// TestSlowestKeeps: slowest keeps the keep slowest cases, slowest first.
func TestSlowestKeeps(t *testing.T) {
	s := &slowest{keep: 3}
	for i, w := range []int{5, 1, 9, 3, 7, 9, 2} {
		s.add(time.Duration(w)*time.Millisecond, 0, &cases.GPUDecodeCase{Spec: &cases.DecodeSpec{Batch: cases.Batch{Requests: []cases.Request{{QueryLen: 1, SeqLen: i + 1}}}}})
	}
	var got []time.Duration
	for _, c := range s.cases {
		got = append(got, c.wall/time.Millisecond)
	}
	if len(got) != 3 || got[0] != 9 || got[1] != 9 || got[2] != 7 {
		t.Errorf("kept %v ms, expected [9 9 7]: %s", got, s)
	}
}
