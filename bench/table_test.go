package bench

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestFormatSplits(t *testing.T) {
	for _, in := range []string{"auto", "64", "auto,1,1024"} {
		s, err := ParseSplits(in)
		if err != nil || FormatSplits(s) != in {
			t.Errorf("FormatSplits(ParseSplits(%q)) = %q, %v", in, FormatSplits(s), err)
		}
	}
	if got := FormatSplits([]int{0, 3}); got != "auto,3" {
		t.Errorf("FormatSplits([0 3]) = %q", got)
	}
}

func TestHumanBytesAndNumStr(t *testing.T) {
	for n, want := range map[int64]string{12: "12 B", 2048: "2.0 KiB", 3 << 19: "1.5 MiB", 4 << 30: "4.00 GiB"} {
		if got := HumanBytes(n); got != want {
			t.Errorf("HumanBytes(%d) = %q, want %q", n, got, want)
		}
	}
	for x, want := range map[float64]string{4321.7: "4322", 42.25: "42.2", 3.14159: "3.14", 0.012345: "0.0123"} {
		if got := NumStr(x); got != want {
			t.Errorf("NumStr(%g) = %q, want %q", x, got, want)
		}
	}
}

func TestSummarise(t *testing.T) {
	ms := func(x ...float64) []time.Duration {
		var d []time.Duration
		for _, v := range x {
			d = append(d, time.Duration(v*1e6))
		}
		return d
	}
	if st := Summarise(ms(3, 1, 2)); st.MedianMS != 2 || st.MinMS != 1 || !slices.Equal(st.SamplesM, []float64{3, 1, 2}) {
		t.Errorf("odd: %+v", st)
	}
	if st := Summarise(ms(4, 1, 2, 3)); st.MedianMS != 2.5 || st.MinMS != 1 {
		t.Errorf("even: %+v", st)
	}
	if st := Summarise(nil); st.MedianMS != 0 || len(st.SamplesM) != 0 {
		t.Errorf("empty: %+v", st)
	}
}

// checkRows rejects a non-finite value and an all-zero row, naming the row.
func TestCheckRows(t *testing.T) {
	s := specNamed(t, "tinymulti") // 6 rows of Hq 8 × 256
	row := s.Hq() * HeadSize
	out := make([]uint16, s.NumQ()*row)
	for i := range out {
		out[i] = 0x3C00 // 1.0
	}
	klen := make([]int32, s.NumQ())
	if err := checkRows(s, out, klen); err != nil {
		t.Fatal(err)
	}
	out[2*row+5] = 0x7E00 // NaN
	if err := checkRows(s, out, klen); err == nil || !strings.Contains(err.Error(), "output row 2, element 5 is not finite") {
		t.Errorf("NaN: %v", err)
	}
	out[2*row+5] = 0x3C00
	klen[4] = 999
	for j := range row {
		out[4*row+j] = 0x8000 // -0
	}
	if err := checkRows(s, out, klen); err == nil || !strings.Contains(err.Error(), "output row 4 is all zero although its klen is 999") {
		t.Errorf("zero row: %v", err)
	}
}

// The table prints a failed result as FAILED and its reason and says when HBM was not measured; Failed tells an
// environment failure from a failed check.
func TestWriteTableAndFailed(t *testing.T) {
	rep := &Report{Device: map[string]any{"name": "Emu"}, SyncFloorMS: 0.01, Results: []Result{
		{Spec: "tiny", Reqs: 1, QPerReq: 1, Tokens: 2048, QHeads: 6, KVHeads: 1, Splits: 2, QueryGroup: 1, Calls: 1, Bytes: 507904,
			MedianMS: 1.5, MinMS: 1.25, DeviceMS: 0.75, DeviceMinMS: 0.625, StreamMS: 1, GBps: 0.3386, GQKps: 0.0082},
		{Spec: "tinymulti", Reqs: 3, QPerReq: 2, Tokens: 1000, QHeads: 8, KVHeads: 2, Bytes: 1488000, Error: "FAILED: boom", ErrorIsCheck: true},
	}}
	var b strings.Builder
	WriteTable(&b, rep)
	out := b.String()
	for _, want := range []string{"device ms", "host ms", "0.7500", "0.6250", "1.5000", "0.339", "FAILED: boom", "HBM: not measured; sync floor 0.0100 ms; device Emu"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if env, check := rep.Failed(); env || !check {
		t.Errorf("Failed() = %v, %v; want a failed check only", env, check)
	}
	rep.HBMError = "copy bandwidth: cannot allocate"
	if env, _ := rep.Failed(); !env {
		t.Error("an HBM failure is not an environment failure")
	}
}
