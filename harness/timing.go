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
// build). The decode fuzz target logs it (DecodeCall.Timing), so a throughput run shows what to
// speed up.
type Timing struct {
	mu     sync.Mutex
	cases  int
	phases map[string]time.Duration
}

// NewTiming returns an empty Timing.
func NewTiming() *Timing { return &Timing{phases: map[string]time.Duration{}} }

// Add adds the time since since to phase. A nil Timing records nothing.
func (t *Timing) Add(phase string, since time.Time) { t.AddDuration(phase, time.Since(since)) }

// AddDuration adds d to phase. A nil Timing records nothing.
func (t *Timing) AddDuration(phase string, d time.Duration) {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.phases[phase] += d
	t.mu.Unlock()
}

// Count counts one case. A nil Timing counts nothing.
func (t *Timing) Count() {
	if t == nil {
		return
	}
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
