package fuzz

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/octant-kv/octant/arch"
	"github.com/octant-kv/octant/cases"
	"github.com/octant-kv/octant/harness"
	"github.com/octant-kv/octant/harness/harnesstest"
	"github.com/octant-kv/octant/oracle"
	"pgregory.net/rapid"
)

// storeOnly declares the store alone, with the given dtypes and excluded classes.
func storeOnly(dtypes []harness.Dtype, excludes ...harness.Class) *harness.Declaration {
	return &harness.Declaration{Ops: map[arch.Op]harness.OpDecl{arch.Store: {Dtypes: dtypes, ReportsTier: true}},
		Formats: []oracle.FormatID{oracle.K3V3, oracle.K3V4, oracle.K3V3Compact}, Excludes: excludes}
}

// TestOutsideCountedNotFailed: under rapid.Check a GPU property's cases outside the library's
// declared domain (here: a store declared for fp16 only, custom signs excluded, on the CPU
// emulator) are neither failures nor judged: the property passes, the tally counts them by reason,
// and the cases inside were judged (the count of cases outside is below the checks).
func TestOutsideCountedNotFailed(t *testing.T) {
	p, _ := filepath.Abs("../build/liboctave_emu.so")
	if _, err := os.Stat(p); err != nil {
		t.Skip("build/liboctave_emu.so missing: make emu")
	}
	l, err := harness.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	r := &Runner{Lib: harnesstest.Restricted(l, storeOnly([]harness.Dtype{harness.F16}, harness.CustomSigns))}
	const checks = 30
	if err := withRapidFlags(map[string]string{"checks": strconv.Itoa(checks), "seed": "7"}, func() {
		t.Run("store", func(t *testing.T) { rapid.Check(t, r.storeProp(false)) })
	}); err != nil {
		t.Fatal(err)
	}
	line := r.OutsideLine(cases.PropNameGPUStore)
	m := regexp.MustCompile(`^gpu-store: (\d+) cases? outside the declared domain, not run \((.*)\)$`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("tally %q: expected gpu-store: N cases outside the declared domain, not run (reasons)", line)
	}
	n, _ := strconv.Atoi(m[1])
	if n == 0 || n >= checks || !strings.Contains(m[2], "dtype bf16 (store declares [fp16])") && !strings.Contains(m[2], "custom signs") {
		t.Errorf("tally %q: expected some but not all of %d cases outside, for bf16 or custom signs", line, checks)
	}
	t.Log(line)
	if r.resetOutside(cases.PropNameGPUStore); r.OutsideLine(cases.PropNameGPUStore) != "" {
		t.Errorf("the tally after a reset: %q", r.OutsideLine(cases.PropNameGPUStore))
	}
}

// TestOutsideSkippedInFuzz: as a fuzz target (rapid.MakeFuzz, what the seed corpora and go test
// -fuzz run) a case outside the declared domain is skipped with its reason, and counted. The store
// is declared with no dtype, so every case is outside, and nothing runs: the Lib has no device.
func TestOutsideSkippedInFuzz(t *testing.T) {
	r := &Runner{Lib: &harness.Lib{Path: "fixture", Decl: storeOnly(nil)}}
	input := make([]byte, 1<<16) // enough bytes for rapid to draw a whole case from
	for i := range input {
		input[i] = byte(i * 37)
	}
	var sub *testing.T
	t.Run("seed", func(t *testing.T) {
		sub = t
		rapid.MakeFuzz(r.storeProp(true))(t, input)
	})
	if !sub.Skipped() || sub.Failed() {
		t.Errorf("the seed: skipped %v, failed %v; expected skipped", sub.Skipped(), sub.Failed())
	}
	if line := r.OutsideLine(cases.PropNameGPUStore); !strings.HasPrefix(line, "gpu-store: 1 case outside the declared domain, not run (dtype ") {
		t.Errorf("tally %q", line)
	}
}
