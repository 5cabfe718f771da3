package harnesstest_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/octant-kv/octant/arch"
	"github.com/octant-kv/octant/cases"
	"github.com/octant-kv/octant/harness"
	"github.com/octant-kv/octant/harness/harnesstest"
	"github.com/octant-kv/octant/oracle"
)

// emu opens the CPU emulator library (make emu), or skips.
func emu(t *testing.T) *harness.Lib {
	t.Helper()
	p, _ := filepath.Abs("../../build/liboctave_emu.so")
	if _, err := os.Stat(p); err != nil {
		t.Skip("build/liboctave_emu.so missing: make emu")
	}
	l, err := harness.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// TestRestrictedDomain judges the conformance battery's seeded cases of every op on the emulator
// and on a Restricted view of it (every op but reduce declared, fp16 only for decode, formats 3
// and 4, excluding custom signs, out-of-range requests and invalid block ids): a case outside the
// declaration gets NotSupported with its reasons on every implementation and runs nothing; a case
// inside it gets the verdicts and output bits of the unrestricted library; and both kinds occur.
func TestRestrictedDomain(t *testing.T) {
	l := emu(t)
	d := &harness.Declaration{Ops: map[arch.Op]harness.OpDecl{}, Formats: []oracle.FormatID{oracle.K3V3, oracle.K3V4},
		Excludes: []harness.Class{harness.CustomSigns, harness.OutOfRangeRequests, harness.InvalidBlockIDs}, ReduceInDecode: true}
	for _, op := range arch.Ops() {
		if op != arch.Reduce {
			d.Ops[op] = harness.OpDecl{Dtypes: harness.Dtypes, ReportsTier: true}
		}
	}
	d.Ops[arch.Decode] = harness.OpDecl{Dtypes: []harness.Dtype{harness.F16}, ReportsTier: true}
	r := harnesstest.Restricted(l, d)
	seeds := 6
	if testing.Short() {
		seeds = 3
	}
	inside, outside := 0, 0
	for _, op := range arch.Ops() {
		for seed := range uint64(seeds) {
			rec, err := cases.SeededRecipe(op, seed)
			if err != nil {
				t.Fatal(err)
			}
			call, err := rec.Call()
			if err != nil {
				t.Fatal(err)
			}
			name := string(op) + "/" + rec.Path()
			got := harness.CheckAll(r, call)
			if why := r.Outside(call); why != nil {
				outside++
				for _, v := range got {
					if v.Status != harness.NotSupported || v.Err == nil || v.Err.Error() != why.Error() || v.Output != nil {
						t.Errorf("%s: %v; expected NotSupported, %q, nothing run", name, v, why)
					}
				}
				if op == arch.Reduce && !strings.Contains(why.Error(), "reduce inside decode") {
					t.Errorf("%s: %q, expected the reduce inside decode", name, why)
				}
				t.Logf("%s: %s", name, why)
				continue
			}
			inside++
			want := harness.CheckAll(l, call)
			if len(got) != len(want) {
				t.Fatalf("%s: %d verdicts restricted, %d on the library", name, len(got), len(want))
			}
			for i := range want {
				if got[i].Status != want[i].Status || got[i].Impl != want[i].Impl || !bytes.Equal(got[i].Output, want[i].Output) {
					t.Errorf("%s: restricted %v; on the library %v: expected the same verdict and output", name, got[i], want[i])
				}
			}
		}
	}
	t.Logf("%d cases inside the declared domain, %d outside", inside, outside)
	if inside == 0 || outside <= seeds { // the reduce cases alone are `seeds`
		t.Errorf("%d cases inside, %d outside: expected both beyond the reduce cases", inside, outside)
	}
}
