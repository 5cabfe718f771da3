package par

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// TestJobs: every job runs once, each with a state of its own goroutine, at most GOMAXPROCS
// states (one for n = 0 or 1).
func TestJobs(t *testing.T) {
	for _, procs := range []int{1, 4} {
		prev := runtime.GOMAXPROCS(procs)
		for _, n := range []int{0, 1, 3, 100} {
			runs := make([]int32, n)
			var states atomic.Int32
			type state struct{ busy atomic.Bool }
			Jobs(n, func() *state { states.Add(1); return &state{} }, func(s *state, k int) {
				if !s.busy.CompareAndSwap(false, true) {
					t.Errorf("GOMAXPROCS %d, n %d: a state used by two jobs at once", procs, n)
				}
				atomic.AddInt32(&runs[k], 1)
				s.busy.Store(false)
			})
			for k, r := range runs {
				if r != 1 {
					t.Errorf("GOMAXPROCS %d, n %d: job %d ran %d times", procs, n, k, r)
				}
			}
			if got, lim := states.Load(), int32(max(1, min(procs, n))); got < 1 || got > lim {
				t.Errorf("GOMAXPROCS %d, n %d: %d states, expected 1..%d", procs, n, got, lim)
			}
		}
		runtime.GOMAXPROCS(prev)
	}
}

// TestChunks: the chunks tile [0, n) without overlap, at most min(GOMAXPROCS, ⌈n/ChunkItems⌉)
// of them, each of at least ChunkItems/2 items when there are several.
func TestChunks(t *testing.T) {
	for _, procs := range []int{1, 4} {
		prev := runtime.GOMAXPROCS(procs)
		for _, n := range []int{0, 1, 15, 16, 17, 31, 32, 33, 64, 1000} {
			var mu sync.Mutex
			var chunks [][2]int
			seen := make([]int32, n)
			Chunks(n, func(lo, hi int) {
				mu.Lock()
				chunks = append(chunks, [2]int{lo, hi})
				mu.Unlock()
				for i := lo; i < hi; i++ {
					atomic.AddInt32(&seen[i], 1)
				}
			})
			for i, s := range seen {
				if s != 1 {
					t.Errorf("GOMAXPROCS %d, n %d: item %d in %d chunks", procs, n, i, s)
				}
			}
			if lim := max(1, min(procs, (n+ChunkItems-1)/ChunkItems)); len(chunks) < 1 || len(chunks) > lim {
				t.Errorf("GOMAXPROCS %d, n %d: %d chunks %v, expected 1..%d", procs, n, len(chunks), chunks, lim)
			}
			for _, c := range chunks {
				if len(chunks) > 1 && c[1]-c[0] < ChunkItems/2 {
					t.Errorf("GOMAXPROCS %d, n %d: chunk %v of fewer than %d items", procs, n, c, ChunkItems/2)
				}
			}
		}
		runtime.GOMAXPROCS(prev)
	}
}
