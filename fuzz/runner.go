package fuzz

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/octant-kv/octant/cases"
	"github.com/octant-kv/octant/harness"
	"github.com/octant-kv/octant/internal/settings"
)

// Runner is one run of the properties: what its caller (a test binary's TestMain) decides — the
// library the GPU properties judge, where a failure's reproducer goes and the command that
// replays it, how often a long run reports its count — and what the run accumulates (the
// reproducers it wrote, its progress counts, the decode judge's timing, the slowest cases). The
// properties are its methods; nothing here reads the environment.
type Runner struct {
	// Lib is the kernel library the GPU properties judge. nil: the GPU properties skip, and the
	// must-not-matter and isolation properties run on the oracle alone.
	Lib *harness.Lib
	// Regressions is the directory failing properties write reproducers to; "" writes none.
	Regressions string
	// ReplayCmd is the replay command failure messages end with (cases.ReplayCommand).
	ReplayCmd string
	// Progress is how often a long property run writes its count to ProgressOut (0: never).
	Progress    time.Duration
	ProgressOut io.Writer
	// DecodeWorkers is how many decode cases TestGPUDecode judges at once.
	DecodeWorkers int
	// Timing accumulates where the decode properties' time goes (build, judge and the judge's
	// own phases).
	Timing *harness.Timing

	slow     *slowest // TestGPUDecode's slowest cases
	mu       sync.Mutex
	written  map[string]string // per property, the reproducer written last
	progress map[string]*progressState
	outsides map[string]*outsideTally // per property, the cases outside the declared domain (outside.go)
}

// NewRunner returns a runner with library l (nil: none) and the settings s: reproducers under
// s.Regressions (default: corpus/regressions at the module root; "off" none), the replay command
// of s.ReplayCmd (default cases.ReplayCommand), progress every s.Progress to out, and
// s.DecodeWorkers decode cases at once (default DefaultDecodeWorkers).
func NewRunner(l *harness.Lib, s settings.Settings, out io.Writer) (*Runner, error) {
	r := &Runner{Lib: l, ReplayCmd: s.ReplayCmd, Progress: s.Progress, ProgressOut: out, DecodeWorkers: s.DecodeWorkers}
	switch {
	case s.NoReproducers():
	case s.RegressionsSet:
		r.Regressions = s.Regressions
	default:
		d, err := cases.DefaultRegressionsDir()
		if err != nil {
			return nil, fmt.Errorf("%w (set %s to a directory, or to off)", err, settings.RegressionsEnv)
		}
		r.Regressions = d
	}
	r.init()
	return r, nil
}

// init gives the zero parts of a runner their defaults (NewRunner, and a runner built as a
// literal in a test).
func (r *Runner) init() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.Timing == nil {
		r.Timing = harness.NewTiming()
	}
	if r.slow == nil {
		r.slow = &slowest{keep: 5}
	}
	if r.written == nil {
		r.written = map[string]string{}
	}
	if r.progress == nil {
		r.progress = map[string]*progressState{}
	}
	if r.outsides == nil {
		r.outsides = map[string]*outsideTally{}
	}
	if r.ReplayCmd == "" {
		r.ReplayCmd = cases.ReplayCommand
	}
	if r.DecodeWorkers == 0 {
		r.DecodeWorkers = DefaultDecodeWorkers()
	}
}
