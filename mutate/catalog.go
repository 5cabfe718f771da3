package mutate

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// Mutant is one entry of csrc/include/octave_mutant.h: `#define OCT_MUT_<OP>_<WHAT> <id>  // defect`.
// ID 0 is the unmutated build.
type Mutant struct {
	ID     int    `json:"id"`
	Name   string `json:"name"`
	Op     string `json:"op"`
	Defect string `json:"defect"`
}

var mutantDefine = regexp.MustCompile(`^#define\s+OCT_MUT_([A-Z0-9]+)_([A-Z0-9_]+)\s+(\d+)\s*(?://\s*(.*))?$`)

// ReadMutants parses the mutant ids of the header (the catalogue corpus/mutants.md describes them):
// ids positive and distinct, at least one.
func ReadMutants(header string) ([]Mutant, error) {
	f, err := os.Open(header)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Mutant
	seen := map[int]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m := mutantDefine.FindStringSubmatch(strings.TrimSpace(sc.Text()))
		if m == nil {
			continue
		}
		id, _ := strconv.Atoi(m[3])
		if id <= 0 {
			return nil, fmt.Errorf("%s: OCT_MUT_%s_%s = %d: expected a positive id", header, m[1], m[2], id)
		}
		if prev, dup := seen[id]; dup {
			return nil, fmt.Errorf("%s: id %d used by %s and OCT_MUT_%s_%s", header, id, prev, m[1], m[2])
		}
		name := "OCT_MUT_" + m[1] + "_" + m[2]
		seen[id] = name
		out = append(out, Mutant{ID: id, Name: name, Op: strings.ToLower(m[1]), Defect: strings.TrimSpace(m[4])})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no mutant defines (#define OCT_MUT_<OP>_<WHAT> <id>)", header)
	}
	return out, nil
}

// ParseIDs parses --only: comma-separated ids, each 0 (the unmutated build) or present in ms.
func ParseIDs(s string, ms []Mutant) (map[int]bool, error) {
	if s == "" {
		return nil, nil
	}
	known := map[int]bool{0: true}
	for _, m := range ms {
		known[m.ID] = true
	}
	out := map[int]bool{}
	for _, f := range strings.Split(s, ",") {
		id, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || !known[id] {
			return nil, fmt.Errorf("--only %q: %q is not a mutant id (0 = unmutated, or one of the header's ids)", s, f)
		}
		out[id] = true
	}
	return out, nil
}

// Unmutated is the normal build, run beside the mutants: it must pass.
var Unmutated = Mutant{ID: 0, Name: "unmutated", Op: "-", Defect: "the normal build"}

// Select returns the mutants of ms whose ids are in sel (nil: all), then the unmutated build when
// sel is nil or holds 0. The unmutated build comes last: a run stopped early (the matrix is written
// after every row) still has the mutants.
func Select(ms []Mutant, sel map[int]bool) []Mutant {
	var todo []Mutant
	for _, m := range append(append([]Mutant(nil), ms...), Unmutated) {
		if sel == nil || sel[m.ID] {
			todo = append(todo, m)
		}
	}
	return todo
}
