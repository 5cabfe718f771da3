package cases_test

import (
	"fmt"

	"github.com/octant-kv/octant/cases"
	"github.com/octant-kv/octant/harness"
	"github.com/octant-kv/octant/oracle"
)

// A batch of one decode request, one MTP verification run (3 drafts + 1) and a cudagraph
// padding row, turned into the decode kernel's query maps.
func ExampleBuilderMaps() {
	b := cases.Batch{Requests: []cases.Request{{QueryLen: 1, SeqLen: 17}, {QueryLen: 4, SeqLen: 64}}, NumTokens: 6}
	m, err := cases.BuilderMaps(b)
	if err != nil {
		panic(err)
	}
	fmt.Println("q_to_req ", m.QToReq)
	fmt.Println("q_to_klen", m.QToKlen)
	// Output:
	// q_to_req  [0 1 1 1 1 2]
	// q_to_klen [17 61 62 63 64 0]
}

// A hadamard-row vector puts all its energy in one rotated coordinate: rotated with the signs and
// block it was built for, it is a one-hot vector.
func ExampleValueSpec_Build() {
	f, _ := oracle.KernelFormat(oracle.K3V4)
	signs := oracle.DefaultSigns(256)
	spec := cases.ValueSpec{Kind: cases.HadamardRow, Dtype: harness.F16, Log2Scale: 3, Param: 70, Factor: 1}
	x := spec.Build(256, signs, f.KRotBlock())
	y := oracle.Rotate(x, signs, f.KRotBlock())
	nonzero := 0
	for i, v := range y {
		if v != 0 {
			nonzero++
			fmt.Printf("rotated dim %d = %g\n", i, v)
		}
	}
	fmt.Println("non-zero rotated dims:", nonzero)
	fmt.Println("|x| in K block 1 (dims 64..127):", max(x[64], -x[64]), "elsewhere:", max(x[0], -x[0]))
	// Output:
	// rotated dim 70 = 8
	// non-zero rotated dims: 1
	// |x| in K block 1 (dims 64..127): 1 elsewhere: 0
}

// Replaying a reproducer file: nil means the property holds on its case.
func ExampleReplay() {
	err := cases.Replay("../corpus/regressions/slot/example-roundtrip.json")
	fmt.Println("replay:", err)
	// Output:
	// replay: <nil>
}
