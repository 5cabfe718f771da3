package fuzz

import (
	"os"
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
	rapid.Check(t, Counted(cases.PropNameSlotRoundTrip, PropSlotRoundTrip))
}

func FuzzSlotRoundTrip(f *testing.F) { f.Fuzz(rapid.MakeFuzz(Counted(f.Name(), PropSlotRoundTrip))) }

func TestSlotAcceptance(t *testing.T) {
	rapid.Check(t, Counted(cases.PropNameSlotAcceptance, PropSlotAcceptance))
}

func FuzzSlotAcceptance(f *testing.F) { f.Fuzz(rapid.MakeFuzz(Counted(f.Name(), PropSlotAcceptance))) }

func TestQueryMaps(t *testing.T) { rapid.Check(t, Counted(cases.PropNameQueryMaps, PropQueryMaps)) }

func FuzzQueryMaps(f *testing.F) { f.Fuzz(rapid.MakeFuzz(Counted(f.Name(), PropQueryMaps))) }

func TestMergePartials(t *testing.T) { rapid.Check(t, Counted(cases.PropNameMerge, PropMergePartials)) }

func FuzzMergePartials(f *testing.F) { f.Fuzz(rapid.MakeFuzz(Counted(f.Name(), PropMergePartials))) }

// TestProgress: a counted property reports its count once per interval, not before.
func TestProgress(t *testing.T) {
	var b strings.Builder
	progressOut = &b
	defer func() { progressOut = os.Stderr }()
	t.Setenv(ProgressEnv, "50ms")
	p := Counted("test-progress", func(*rapid.T) {})
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
