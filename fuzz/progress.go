package fuzz

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"pgregory.net/rapid"
)

// ProgressEnv names the environment variable that sets how often a long property run says how
// far it has got (a Go duration; default 30s; "off": never). A rapid test with a large
// -rapid.checks prints nothing of its own until it ends, so a run cut short by a timeout left no
// count behind: with this, each property writes a line to standard error at most once per
// interval: "progress: gpu-decode: 4200 cases in 30s (140/s)".
const ProgressEnv = "OCTANT_PROGRESS"

var progressOut io.Writer = os.Stderr

type progressState struct {
	mu          sync.Mutex
	start, last time.Time
	n           int
}

var (
	progressMu    sync.Mutex
	progressByKey = map[string]*progressState{}
)

// progressInterval is the interval ProgressEnv sets (0: off).
func progressInterval() time.Duration {
	v := os.Getenv(ProgressEnv)
	if v == "" {
		return 30 * time.Second
	}
	if v == "off" {
		return 0
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 30 * time.Second
	}
	return d
}

// Counted wraps a property so that each case is counted under name and the count is reported
// every ProgressEnv interval.
func Counted(name string, prop func(*rapid.T)) func(*rapid.T) {
	every := progressInterval()
	return func(t *rapid.T) {
		if every > 0 {
			countCase(name, every)
		}
		prop(t)
	}
}

func countCase(name string, every time.Duration) {
	progressMu.Lock()
	s := progressByKey[name]
	if s == nil {
		now := time.Now()
		s = &progressState{start: now, last: now}
		progressByKey[name] = s
	}
	progressMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	if now := time.Since(s.last); now >= every {
		el := time.Since(s.start)
		fmt.Fprintf(progressOut, "progress: %s: %d cases in %v (%.0f/s)\n", name, s.n, el.Round(time.Second), float64(s.n)/el.Seconds())
		s.last = time.Now()
	}
}
