package fuzz

import (
	"fmt"
	"sync"
	"time"
)

// Timing accumulates where a GPU target's time goes, per phase (build: expanding the recipe;
// oracle: the profile model, computed while the device runs; device: uploads, launches, read-back
// and the buffer checks, twice per tier). TestGPUX log it, so a throughput run shows what to speed up.
type Timing struct {
	mu     sync.Mutex
	Cases  int
	Phases map[string]time.Duration
}

var decodeTiming = &Timing{Phases: map[string]time.Duration{}}

func (t *Timing) add(phase string, since time.Time) {
	t.mu.Lock()
	t.Phases[phase] += time.Since(since)
	t.mu.Unlock()
}

func (t *Timing) count() {
	t.mu.Lock()
	t.Cases++
	t.mu.Unlock()
}

// String is one line: cases and the mean time per case of each phase.
func (t *Timing) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.Cases == 0 {
		return "no cases"
	}
	s := fmt.Sprintf("%d cases; mean per case:", t.Cases)
	for _, p := range []string{"build", "oracle", "device"} {
		s += fmt.Sprintf(" %s %v", p, (t.Phases[p] / time.Duration(t.Cases)).Round(time.Microsecond))
	}
	return s
}
