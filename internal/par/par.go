// Package par runs independent pieces of work on up to GOMAXPROCS goroutines: the oracle's
// per-query and per-slot loops (Jobs) and the fuzz harness's input builders (Chunks).
//
// # Contract
//
//   - Every job (every item of [0, n)) runs exactly once, and the call returns when all have
//     finished.
//   - The caller's jobs must write disjoint outputs and read only what no job writes; the result
//     is then the same as a sequential run, whatever the schedule and GOMAXPROCS.
//   - With one worker (GOMAXPROCS 1, or too little work), everything runs on the calling
//     goroutine, in order.
package par

import (
	"runtime"
	"sync"
)

// Jobs runs job(state, k) for k in [0, n) on up to GOMAXPROCS goroutines. Each goroutine first
// makes its own state with newState (scratch buffers, a decoder) and passes it to every job it
// runs, so a state is never used by two jobs at once; which jobs share a state depends on the
// schedule, so a job must not leave anything in it that changes the next job's result. Jobs are
// handed out one at a time, so jobs of uneven cost balance. newState is called at least once,
// even for n = 0.
func Jobs[S any](n int, newState func() S, job func(s S, k int)) {
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

// ChunkItems is the work Chunks gives a goroutine: items of microseconds (a slot to quantize, a
// vector to build), so that 16 of them outweigh a goroutine's start.
const ChunkItems = 16

// Chunks splits [0, n) into w = min(GOMAXPROCS, ⌈n/ChunkItems⌉) contiguous chunks of equal size
// ±1 and runs fn(lo, hi) on each, on its own goroutine when w > 1. A chunk then holds at least
// ChunkItems/2 items (n > ChunkItems·(w−1)), and n ≤ ChunkItems runs fn(0, n) on the calling
// goroutine (fn(0, 0) once for n = 0).
func Chunks(n int, fn func(lo, hi int)) {
	w := min(runtime.GOMAXPROCS(0), (n+ChunkItems-1)/ChunkItems)
	if w <= 1 {
		fn(0, n)
		return
	}
	var wg sync.WaitGroup
	for k := range w {
		lo, hi := k*n/w, (k+1)*n/w
		wg.Add(1)
		go func() { defer wg.Done(); fn(lo, hi) }()
	}
	wg.Wait()
}
