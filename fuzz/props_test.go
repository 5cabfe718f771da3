package fuzz

import (
	"testing"

	"pgregory.net/rapid"
)

// Each property runs twice: as a rapid test (TestX, 100 random cases by default, -rapid.checks=N
// for more) and as a `go test -fuzz` target (FuzzX: the fuzzer's bytes are rapid's choices). A
// target's seed corpus is testdata/fuzz/FuzzX/: named boundary cases (seeds_test.go), which plain
// `go test` replays too.

func TestSlotRoundTrip(t *testing.T) { rapid.Check(t, PropSlotRoundTrip) }

func FuzzSlotRoundTrip(f *testing.F) { f.Fuzz(rapid.MakeFuzz(PropSlotRoundTrip)) }

func TestSlotAcceptance(t *testing.T) { rapid.Check(t, PropSlotAcceptance) }

func FuzzSlotAcceptance(f *testing.F) { f.Fuzz(rapid.MakeFuzz(PropSlotAcceptance)) }

func TestQueryMaps(t *testing.T) { rapid.Check(t, PropQueryMaps) }

func FuzzQueryMaps(f *testing.F) { f.Fuzz(rapid.MakeFuzz(PropQueryMaps)) }

func TestMergePartials(t *testing.T) { rapid.Check(t, PropMergePartials) }

func FuzzMergePartials(f *testing.F) { f.Fuzz(rapid.MakeFuzz(PropMergePartials)) }
