package harness

import (
	"fmt"
	"sort"
	"sync"
	"time"
)

// Timing accumulates where a judge's time goes, per phase (the decode judge's: oracle, the
// profile model; exact, exact attention, both computed while the device runs; device: uploads,
// launches, read-back and the buffer checks, twice per tier; a caller may add its own, such as
// build). The fuzz targets log it, so a throughput run shows what to speed up.
type Timing struct {
	mu     sync.Mutex
	cases  int
	phases map[string]time.Duration
}

// NewTiming returns an empty Timing.
func NewTiming() *Timing { return &Timing{phases: map[string]time.Duration{}} }

// Add adds the time since since to phase.
func (t *Timing) Add(phase string, since time.Time) {
	d := time.Since(since)
	t.mu.Lock()
	t.phases[phase] += d
	t.mu.Unlock()
}

// Count counts one case.
func (t *Timing) Count() {
	t.mu.Lock()
	t.cases++
	t.mu.Unlock()
}

// String is one line: cases and the mean time per case of each phase, phases sorted by name.
func (t *Timing) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cases == 0 {
		return "no cases"
	}
	names := make([]string, 0, len(t.phases))
	for p := range t.phases {
		names = append(names, p)
	}
	sort.Strings(names)
	s := fmt.Sprintf("%d cases; mean per case:", t.cases)
	for _, p := range names {
		s += fmt.Sprintf(" %s %v", p, (t.phases[p] / time.Duration(t.cases)).Round(time.Microsecond))
	}
	return s
}
