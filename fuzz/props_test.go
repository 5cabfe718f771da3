package fuzz

import (
	"testing"

	"pgregory.net/rapid"
)

// Each property runs twice: as a rapid test (TestX, 100 random cases by default, -rapid.checks=N
// for more) and as a `go test -fuzz` target (FuzzX: the fuzzer's bytes are rapid's choices).

// fuzzSeeds gives the fuzzer a few starting inputs of the sizes the properties consume (rapid
// takes 8 bytes per choice; an input that runs out of bytes is skipped).
func fuzzSeeds(f *testing.F) {
	r := newRand(0x5eed, 9)
	for _, n := range []int{64, 256, 1024, 4096, 16384} {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		f.Add(b)
	}
}

func TestSlotRoundTrip(t *testing.T) { rapid.Check(t, PropSlotRoundTrip) }

func FuzzSlotRoundTrip(f *testing.F) { fuzzSeeds(f); f.Fuzz(rapid.MakeFuzz(PropSlotRoundTrip)) }

func TestSlotAcceptance(t *testing.T) { rapid.Check(t, PropSlotAcceptance) }

func FuzzSlotAcceptance(f *testing.F) { fuzzSeeds(f); f.Fuzz(rapid.MakeFuzz(PropSlotAcceptance)) }

func TestQueryMaps(t *testing.T) { rapid.Check(t, PropQueryMaps) }

func FuzzQueryMaps(f *testing.F) { fuzzSeeds(f); f.Fuzz(rapid.MakeFuzz(PropQueryMaps)) }

func TestMergePartials(t *testing.T) { rapid.Check(t, PropMergePartials) }

func FuzzMergePartials(f *testing.F) { fuzzSeeds(f); f.Fuzz(rapid.MakeFuzz(PropMergePartials)) }
