package fuzz

import (
	"fmt"
	"sync"
	"time"

	"pgregory.net/rapid"
)

type progressState struct {
	mu          sync.Mutex
	start, last time.Time
	n           int
}

// Counted wraps a property so that each case is counted under name and the count is written to
// ProgressOut every Progress interval: a rapid test with a large -rapid.checks prints nothing of
// its own until it ends, so a run cut short by a timeout would leave no count behind. The line
// reads "progress: gpu-decode: 4200 cases in 30s (140/s)".
func (r *Runner) Counted(name string, prop func(*rapid.T)) func(*rapid.T) {
	r.init()
	return func(t *rapid.T) {
		if r.Progress > 0 && r.ProgressOut != nil {
			r.countCase(name)
		}
		prop(t)
	}
}

func (r *Runner) countCase(name string) {
	r.mu.Lock()
	s := r.progress[name]
	if s == nil {
		now := time.Now()
		s = &progressState{start: now, last: now}
		r.progress[name] = s
	}
	r.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	if now := time.Since(s.last); now >= r.Progress {
		el := time.Since(s.start)
		fmt.Fprintf(r.ProgressOut, "progress: %s: %d cases in %v (%.0f/s)\n", name, s.n, el.Round(time.Second), float64(s.n)/el.Seconds())
		s.last = time.Now()
	}
}
