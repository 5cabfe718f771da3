package fuzz

import (
	"strings"
	"testing"
	"time"

	"github.com/octant-kv/octant/cases"
	"pgregory.net/rapid"
)

// Each property runs twice: as a rapid test (TestX, 100 random cases by default, -rapid.checks=N
// for more) and as a `go test -fuzz` target (FuzzX: the fuzzer's bytes are rapid's choices). A
// target's seed corpus is testdata/fuzz/FuzzX/: named boundary cases (seeds_test.go), which plain
// `go test` replays too.

func TestSlotRoundTrip(t *testing.T) {
	rapid.Check(t, run.Counted(cases.PropNameSlotRoundTrip, run.PropSlotRoundTrip))
}

func FuzzSlotRoundTrip(f *testing.F) {
	f.Fuzz(rapid.MakeFuzz(run.Counted(f.Name(), run.PropSlotRoundTrip)))
}

func TestSlotAcceptance(t *testing.T) {
	rapid.Check(t, run.Counted(cases.PropNameSlotAcceptance, run.PropSlotAcceptance))
}

func FuzzSlotAcceptance(f *testing.F) {
	f.Fuzz(rapid.MakeFuzz(run.Counted(f.Name(), run.PropSlotAcceptance)))
}

func TestQueryMaps(t *testing.T) {
	rapid.Check(t, run.Counted(cases.PropNameQueryMaps, run.PropQueryMaps))
}

func FuzzQueryMaps(f *testing.F) { f.Fuzz(rapid.MakeFuzz(run.Counted(f.Name(), run.PropQueryMaps))) }

func TestMergePartials(t *testing.T) {
	rapid.Check(t, run.Counted(cases.PropNameMerge, run.PropMergePartials))
}

func FuzzMergePartials(f *testing.F) {
	f.Fuzz(rapid.MakeFuzz(run.Counted(f.Name(), run.PropMergePartials)))
}

// TestProgress: a counted property reports its count once per interval, not before.
func TestProgress(t *testing.T) {
	var b strings.Builder
	r := &Runner{Progress: 50 * time.Millisecond, ProgressOut: &b}
	p := r.Counted("test-progress", func(*rapid.T) {})
	p(nil)
	if b.Len() != 0 {
		t.Fatalf("reported before the interval: %q", b.String())
	}
	time.Sleep(60 * time.Millisecond)
	p(nil)
	if !strings.HasPrefix(b.String(), "progress: test-progress: 2 cases in ") {
		t.Errorf("report %q, expected \"progress: test-progress: 2 cases in …\"", b.String())
	}
}
