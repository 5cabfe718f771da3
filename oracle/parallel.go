package oracle

import (
	"runtime"
	"sync"
)

// parallelJobs runs job(state, k) for k in [0, n) on up to GOMAXPROCS goroutines, each with its
// own state from newState (scratch buffers, a slot decoder). Jobs must write disjoint outputs; the
// result is then the same as a sequential run, whatever the schedule.
func parallelJobs[S any](n int, newState func() S, job func(s S, k int)) {
	w := min(runtime.GOMAXPROCS(0), n)
	if w <= 1 {
		s := newState()
		for k := 0; k < n; k++ {
			job(s, k)
		}
		return
	}
	var next int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := newState()
			for {
				mu.Lock()
				k := next
				next++
				mu.Unlock()
				if k >= n {
					return
				}
				job(s, k)
			}
		}()
	}
	wg.Wait()
}
