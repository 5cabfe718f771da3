package kernels_test

// Selecting grid cases for long runs (compute-sanitizer's racecheck runs the full grids 100 to
// 1000 times slower than the GPU does): -grid.shard=i/n runs every n-th case starting at case i,
// -grid.done=FILE skips the cases whose full test names FILE lists (one per line, as `--- PASS:`
// lines name them, so a run cut short can be resumed), and -grid.deadline=D skips the cases that
// would start more than D after the binary started, so that a sharded run ends in time and the
// sanitizer still writes its summary; -grid.serial runs the selected cases one after another
// (not t.Parallel), so that each prints its --- PASS line when it ends, not when the grid does.
// Skipped cases say why.

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	gridShard    = flag.String("grid.shard", "", "i/n: run only grid cases i, i+n, i+2n, ... (0 <= i < n)")
	gridDone     = flag.String("grid.done", "", "file of full test names (one per line) of grid cases to skip: already passed")
	gridDeadline = flag.Duration("grid.deadline", 0, "skip grid cases that would start this long after the test binary started (0: none)")
	gridSerial   = flag.Bool("grid.serial", false, "run grid cases one at a time (each reports as it ends)")
	gridStart    = time.Now()
	doneOnce     sync.Once
	doneSet      map[string]bool
	doneErr      error
)

// parseShard parses "i/n".
func parseShard(s string) (i, n int, err error) {
	if _, err := fmt.Sscanf(s, "%d/%d", &i, &n); err != nil || n < 1 || i < 0 || i >= n {
		return 0, 0, fmt.Errorf("-grid.shard=%q: expected i/n with 0 <= i < n", s)
	}
	return i, n, nil
}

// readDone reads the names of the cases already done.
func readDone(path string) (map[string]bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("-grid.done: %w", err)
	}
	defer f.Close()
	set := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if s := strings.TrimSpace(sc.Text()); s != "" {
			set[s] = true
		}
	}
	return set, sc.Err()
}

// selectGridCase skips grid case idx (t is its subtest) unless the -grid flags select it, and
// marks it parallel unless -grid.serial.
func selectGridCase(t *testing.T, idx int) {
	t.Helper()
	if *gridShard != "" {
		i, n, err := parseShard(*gridShard)
		if err != nil {
			t.Fatal(err)
		}
		if idx%n != i {
			t.Skipf("grid case %d is not in shard %s", idx, *gridShard)
		}
	}
	if *gridDone != "" {
		doneOnce.Do(func() { doneSet, doneErr = readDone(*gridDone) })
		if doneErr != nil {
			t.Fatal(doneErr)
		}
		if doneSet[t.Name()] {
			t.Skipf("listed as done in %s", *gridDone)
		}
	}
	if *gridDeadline > 0 && time.Since(gridStart) > *gridDeadline {
		t.Skipf("past -grid.deadline=%v", *gridDeadline)
	}
	if !*gridSerial {
		t.Parallel()
	}
}

func TestParseShard(t *testing.T) {
	for s, ok := range map[string]bool{"0/1": true, "3/4": true, "4/4": false, "-1/2": false, "1/0": false, "x": false, "": false} {
		if _, _, err := parseShard(s); (err == nil) != ok {
			t.Errorf("parseShard(%q): error %v, want ok %v", s, err, ok)
		}
	}
}
