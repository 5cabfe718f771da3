package fuzz

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/octant-kv/octant/cases"
)

type slowCase struct {
	wall time.Duration
	desc string
}

// slowest is the keep slowest of the cases added, by wall time (build and judge): a throughput run
// shows which cases set its pace (TestGPUDecode logs them, Runner.Slowest).
type slowest struct {
	mu    sync.Mutex
	keep  int
	cases []slowCase
}

func (s *slowest) add(wall, build time.Duration, c *cases.GPUDecodeCase) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.cases) == s.keep && wall <= s.cases[len(s.cases)-1].wall {
		return
	}
	sp := c.Spec
	d := slowCase{wall, fmt.Sprintf("%s, %d requests, longest %d tokens (build %v)", c.Path(), len(sp.Batch.Requests), sp.Batch.MaxSeq(), build.Round(time.Millisecond))}
	i, _ := slices.BinarySearchFunc(s.cases, wall, func(x slowCase, w time.Duration) int { return int(w - x.wall) })
	s.cases = slices.Insert(s.cases, i, d)
	if len(s.cases) > s.keep {
		s.cases = s.cases[:s.keep]
	}
}

// String lists the cases, slowest first, one per line.
func (s *slowest) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	for _, c := range s.cases {
		fmt.Fprintf(&b, "\n  %v  %s", c.wall.Round(time.Millisecond), c.desc)
	}
	return b.String()
}

// Slowest lists the runner's slowest decode cases, one per line.
func (r *Runner) Slowest() string {
	r.init()
	return r.slow.String()
}
