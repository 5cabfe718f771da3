package mutate

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestReadMutants(t *testing.T) {
	ms, err := ReadMutants("../csrc/include/octave_mutant.h")
	if err != nil {
		t.Fatal(err)
	}
	if ms[0].ID != 1 || ms[0].Name != "OCT_MUT_REDUCE_PAD_UNWRITTEN" || ms[0].Op != "reduce" || ms[0].Defect == "" {
		t.Errorf("first mutant %+v, expected id 1 OCT_MUT_REDUCE_PAD_UNWRITTEN (reduce) with its comment", ms[0])
	}
	dir := t.TempDir()
	dup := filepath.Join(dir, "dup.h")
	os.WriteFile(dup, []byte("#define OCT_MUT_A_B 3  // x\n#define OCT_MUT_C_D 3\n"), 0o644)
	if _, err := ReadMutants(dup); err == nil || !strings.Contains(err.Error(), "id 3 used by") {
		t.Errorf("duplicate ids: %v", err)
	}
	if _, err := ParseIDs("1,99", ms); err == nil {
		t.Error("--only 99 accepted")
	}
	if sel, err := ParseIDs("0, 1", ms); err != nil || !sel[0] || !sel[1] {
		t.Errorf("--only 0,1: %v %v", sel, err)
	}
}

// Select keeps the order of the header, puts the unmutated build last, and keeps only what --only
// names.
func TestSelect(t *testing.T) {
	ms := []Mutant{{ID: 3, Name: "C"}, {ID: 1, Name: "A"}}
	ids := func(todo []Mutant) []int {
		var out []int
		for _, m := range todo {
			out = append(out, m.ID)
		}
		return out
	}
	if got := ids(Select(ms, nil)); !slices.Equal(got, []int{3, 1, 0}) {
		t.Errorf("all: %v, want [3 1 0]", got)
	}
	if got := ids(Select(ms, map[int]bool{0: true, 1: true})); !slices.Equal(got, []int{1, 0}) {
		t.Errorf("--only 0,1: %v, want [1 0]", got)
	}
	if got := ids(Select(ms, map[int]bool{3: true})); !slices.Equal(got, []int{3}) {
		t.Errorf("--only 3: %v, want [3]", got)
	}
}
