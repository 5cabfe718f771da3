package kernels

import (
	"slices"
	"strings"
	"testing"
)

// TestUnpackRows checks the row extraction and the gap check every strided output goes through
// (the kernel tests and the fuzz harness).
func TestUnpackRows(t *testing.T) {
	// Two rows of 3 elements, stride 5: gap elements 3, 4 and 8, 9 hold 0xFFFF.
	b := []byte{1, 0, 2, 0, 3, 0, 0xFF, 0xFF, 0xFF, 0xFF, 4, 0, 5, 0, 6, 0, 0xFF, 0xFF, 0xFF, 0xFF}
	got, err := UnpackRows(b, 2, 3, 5)
	if err != nil {
		t.Fatal(err)
	}
	if want := []uint16{1, 2, 3, 4, 5, 6}; !slices.Equal(got, want) {
		t.Errorf("rows %v, want %v", got, want)
	}
	b[18] = 0 // element 4 of row 1: a gap write
	if _, err := UnpackRows(b, 2, 3, 5); err == nil || !strings.Contains(err.Error(), "element 1 of the 2-element gap after row 1") {
		t.Errorf("gap write: error %v", err)
	}
	if _, err := UnpackRows(b[:19], 2, 3, 5); err == nil || !strings.Contains(err.Error(), "expected at least 20") {
		t.Errorf("short output: error %v", err)
	}
	if got, err := UnpackRows(nil, 0, 3, 5); err != nil || len(got) != 0 {
		t.Errorf("no rows: %v, %v", got, err)
	}
}
