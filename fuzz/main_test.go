package fuzz

import (
	"flag"
	"fmt"
	"os"
	"runtime/debug"
	"testing"

	"github.com/octant-kv/octant/harness"
	"github.com/octant-kv/octant/harness/harnesstest"
	"github.com/octant-kv/octant/internal/settings"
)

// run is the properties' runner of this test binary (TestMain).
var run *Runner

// TestMain raises the garbage collector's target to 400% unless GOGC is set: every case allocates
// its cache, query and model afresh (megabytes, freed a few milliseconds later), and on the H200
// host the default target spent about a tenth of the decode target's time collecting
// (docs/performance.md, "Fuzz throughput").
//
// It also turns rapid's own fail files off (-rapid.nofailfile): a failing property writes its
// reproducer to corpus/regressions, the one regression corpus, and prints its replay command; a
// second format under fuzz/testdata/rapid would split the corpus (-rapid.nofailfile=false on the
// command line turns them back on).
//
// It builds the properties' runner from the test binary's settings (package settings): the
// library of OCTANT_LIB (OCTANT_TIERS), reproducers under OCTANT_REGRESSIONS, the replay command
// of OCTANT_REPLAY_CMD, OCTANT_PROGRESS and OCTANT_DECODE_WORKERS.
func TestMain(m *testing.M) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "rapid.nofailfile" })
	if !set {
		flag.Set("rapid.nofailfile", "true")
	}
	l, _ := harnesstest.EnvLib()
	if l != nil {
		l.Dev.EnablePool(harness.PoolBytes)
	}
	s, err := settings.FromEnv()
	if err == nil {
		run, err = NewRunner(l, s, os.Stderr)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	code := m.Run()
	harnesstest.CloseEnvLib()
	os.Exit(code)
}
