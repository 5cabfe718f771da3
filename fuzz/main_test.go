package fuzz

import (
	"os"
	"runtime/debug"
	"testing"
)

// TestMain raises the garbage collector's target to 400% unless GOGC is set: every case allocates
// its cache, query and model afresh (megabytes, freed a few milliseconds later), and on the H200
// host the default target spent about a tenth of the decode target's time collecting
// (docs/measurements.md, "Decode fuzz throughput").
func TestMain(m *testing.M) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	os.Exit(m.Run())
}
