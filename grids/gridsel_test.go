package grids_test

// Selecting grid cases for long runs (compute-sanitizer's racecheck runs the full grids 100 to
// 1000 times slower than the GPU does): -grid.shard=i/n runs every n-th case starting at case i,
// -grid.done=FILE skips the cases whose full test names FILE lists (one per line, as `--- PASS:`
// lines name them, so a run cut short can be resumed), and -grid.deadline=D skips the cases that
// would start more than D after the binary started, so that a sharded run ends in time and the
// sanitizer still writes its summary; -grid.serial runs the selected cases one after another
// (not t.Parallel), so that each prints its --- PASS line when it ends, not when the grid does.
// Skipped cases say why. A run cut short by -grid.deadline counts the cases it did not run and
// fails when an op's grid judged no case on a tier the library offers for it (deadlineVerdict):
// a deadline never turns a run of nothing into a pass.

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/octant-kv/octant/arch"
	"github.com/octant-kv/octant/harness"
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
		judged.skip(gridOp(t.Name()))
		t.Skipf("past -grid.deadline=%v", *gridDeadline)
	}
	if !*gridSerial {
		t.Parallel()
	}
}

// gridOp is the op of a grid test by its name (TestDecodeGrid/..., TestPrefillGrid/...).
func gridOp(name string) arch.Op {
	if strings.HasPrefix(name, "TestPrefill") {
		return arch.Prefill
	}
	return arch.Decode
}

// judgedCounts counts the verdicts the tests reached per op and implementation, and the grid
// cases per op that -grid.deadline left unrun.
type judgedCounts struct {
	mu      sync.Mutex
	verdict map[string]int // "op/impl"
	skipped map[arch.Op]int
}

var judged judgedCounts

func (j *judgedCounts) add(v harness.Verdict) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.verdict == nil {
		j.verdict = map[string]int{}
	}
	j.verdict[string(v.Op)+"/"+v.Impl]++
}

func (j *judgedCounts) skip(op arch.Op) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.skipped == nil {
		j.skipped = map[arch.Op]int{}
	}
	j.skipped[op]++
}

// deadlineVerdict is what a run cut short by -grid.deadline says at its end: the cases it left
// unrun per op, and an error when an op with unrun cases judged none on a tier that l offers for
// it.
func (j *judgedCounts) deadlineVerdict(l *harness.Lib) (string, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	var lines, bad []string
	for _, op := range []arch.Op{arch.Decode, arch.Prefill} {
		n := j.skipped[op]
		if n == 0 {
			continue
		}
		lines = append(lines, fmt.Sprintf("grid: %d %s cases not run (past -grid.deadline=%v)", n, op, *gridDeadline))
		if l == nil {
			continue
		}
		for _, tier := range l.TierNames() {
			if l.Offers(op, tier) && j.verdict[string(op)+"/"+string(tier)] == 0 {
				bad = append(bad, fmt.Sprintf("%s on %s", op, tier))
			}
		}
	}
	if len(bad) > 0 {
		return strings.Join(lines, "\n"), fmt.Errorf("grid: -grid.deadline=%v ended the run before any case judged %s: nothing was tested there", *gridDeadline, strings.Join(bad, ", "))
	}
	return strings.Join(lines, "\n"), nil
}

// TestDeadlineVerdict: a run cut short that judged nothing on a tier fails; one that judged every
// tier reports its unrun cases and passes.
func TestDeadlineVerdict(t *testing.T) {
	l := lib(t)
	var j judgedCounts
	j.skip(arch.Decode)
	j.add(harness.Verdict{Op: arch.Decode, Impl: string(l.TierNames()[0])})
	msg, err := j.deadlineVerdict(l)
	if !strings.Contains(msg, "1 decode cases not run") {
		t.Errorf("deadline message %q", msg)
	}
	if len(l.TierNames()) > 1 && (err == nil || !strings.Contains(err.Error(), "before any case judged decode on "+string(l.TierNames()[1]))) {
		t.Errorf("a tier with no case judged: %v", err)
	}
	for _, tier := range l.TierNames() {
		j.add(harness.Verdict{Op: arch.Decode, Impl: string(tier)})
	}
	if _, err := j.deadlineVerdict(l); err != nil {
		t.Errorf("every tier judged: %v", err)
	}
}

func TestParseShard(t *testing.T) {
	for s, ok := range map[string]bool{"0/1": true, "3/4": true, "4/4": false, "-1/2": false, "1/0": false, "x": false, "": false} {
		if _, _, err := parseShard(s); (err == nil) != ok {
			t.Errorf("parseShard(%q): error %v, want ok %v", s, err, ok)
		}
	}
}
