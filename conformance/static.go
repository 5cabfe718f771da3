package conformance

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/octant-kv/octant/arch"
	"github.com/octant-kv/octant/harness"
)

// StaticCases certifies the compiled code objects of an AMD architecture statically: the
// disassemblies under dir/<arch>/*.s (make isa) against the registry (every kernel symbol present,
// the contract's instructions where the contract puts them), one case per (kernel, piece); and
// every runtime op the architecture requires as NotSupported, with the reason.
func StaticCases(a arch.Arch, dir string) ([]CaseResult, error) {
	files, _ := filepath.Glob(filepath.Join(dir, a.Name, "*.s"))
	sort.Strings(files)
	if len(files) == 0 {
		return nil, fmt.Errorf("no disassemblies (*.s) in %s: run make isa first", filepath.Join(dir, a.Name))
	}
	var all bytes.Buffer
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		all.Write(b)
		all.WriteByte('\n')
	}
	d, err := arch.ParseObjdump(&all)
	if err != nil {
		return nil, err
	}
	rows, _ := a.Check(d) // the rows carry every failure
	var out []CaseResult
	for _, r := range rows {
		c := CaseResult{Path: fmt.Sprintf("isa/%s/%s", r.Kernel, sanitize(r.Piece)), Status: harness.Pass,
			Message: fmt.Sprintf("%s × %d", r.Instruction, r.Count)}
		if !r.OK {
			c.Status, c.Message = harness.Fail, r.Problem
		}
		out = append(out, c)
	}
	for _, req := range a.Requires {
		for _, t := range req.RequiredTiers() {
			out = append(out, CaseResult{Path: fmt.Sprintf("%s/%s/runtime", req.Op, t), Status: harness.NotSupported,
				Message: fmt.Sprintf("no %s device here: the %s %s kernels are not run (static certification only)", a.Name, t, req.Op)})
		}
	}
	return out, nil
}

func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c == ' ' || c == '/' {
			b[i] = '-'
		}
	}
	return string(b)
}
