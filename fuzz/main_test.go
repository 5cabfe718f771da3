package fuzz

import (
	"flag"
	"os"
	"runtime/debug"
	"testing"

	"github.com/octant-kv/octant/harness"
)

// TestMain raises the garbage collector's target to 400% unless GOGC is set: every case allocates
// its cache, query and model afresh (megabytes, freed a few milliseconds later), and on the H200
// host the default target spent about a tenth of the decode target's time collecting
// (docs/performance.md, "Fuzz throughput").
//
// It also turns rapid's own fail files off (-rapid.nofailfile): a failing property writes its
// reproducer to corpus/regressions, the one regression corpus, and prints its replay command; a
// second format under fuzz/testdata/rapid would split the corpus (-rapid.nofailfile=false on the
// command line turns them back on).
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
	l, _ := harness.Env()
	if l != nil {
		l.Dev.EnablePool(harness.PoolBytes)
	}
	code := m.Run()
	harness.CloseEnv()
	os.Exit(code)
}
