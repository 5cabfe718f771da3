package fuzz

import (
	"runtime"
	"sync"
)

// parallelChunks splits [0, n) into contiguous chunks of at least 16 items and runs fn on them
// on up to GOMAXPROCS goroutines (an item here is a slot or a vector to build: microseconds, so
// 16 outweigh a goroutine's start). fn must write disjoint outputs.
func parallelChunks(n int, fn func(lo, hi int)) {
	w := min(runtime.GOMAXPROCS(0), (n+15)/16)
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
