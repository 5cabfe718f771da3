package fuzz

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/octant-kv/octant/cases"
	"github.com/octant-kv/octant/harness"
)

// TestGPUDecode's pipeline. rapid.Check draws one decode case per check and hands it to a pool
// of workers that build and judge it (judgeRecipe), so that rapid draws the next case at once and
// several cases are judged together: a slow case (a 2^17-token request builds its cache for half
// a second, mostly from one stream of draws) delays no other. The property itself never fails: a failing case is
// judged again afterwards under rapid.Check alone (PropGPUDecode), from the seed rapid drew it
// with, so that rapid shrinks it and reports it as usual.

// DefaultDecodeWorkers is TestGPUDecode's default number of cases judged at once: one per
// processor (GOMAXPROCS, at most 64). On the H200 host's 16, 1000 cases took 3.55-3.58 s with 16
// workers and 3.78-4.29 s with 8 (docs/fuzz.md).
func DefaultDecodeWorkers() int { return min(max(runtime.GOMAXPROCS(0), 1), 64) }

// pipeFailure is a case of the pipeline that failed: its index in rapid's order, and its verdict.
type pipeFailure struct {
	index int
	c     *cases.GPUDecodeCase
	j     judged
}

// decodePipeline judges decode cases on a pool of workers: at most workers cases are built and
// judged at once, and about as many more drawn cases wait in the queue.
type decodePipeline struct {
	jobs  chan pipeJob
	wg    sync.WaitGroup
	n     int // cases submitted
	mu    sync.Mutex
	fails []pipeFailure
}

type pipeJob struct {
	index int
	c     *cases.GPUDecodeCase
}

func (r *Runner) newDecodePipeline(l *harness.Lib) *decodePipeline {
	r.init()
	p := &decodePipeline{jobs: make(chan pipeJob, r.DecodeWorkers)}
	for range r.DecodeWorkers {
		p.wg.Go(func() {
			for job := range p.jobs {
				start := time.Now()
				j := r.judgeSafely(l, job.c)
				r.slow.add(time.Since(start), j.build, job.c)
				if d, ok := harness.OutsideDomain(j.vs); ok {
					r.countOutside(cases.PropNameGPUDecode, d)
					continue
				}
				if j.err != nil || harness.FirstFailure(j.vs) != nil {
					p.mu.Lock()
					p.fails = append(p.fails, pipeFailure{job.index, job.c, j})
					p.mu.Unlock()
				}
			}
		})
	}
	return p
}

// judgeSafely is judgeRecipe with a panic (of the harness or the oracle: the judges turn their own
// into verdicts) returned as the case's error instead of ending the test binary.
func (r *Runner) judgeSafely(l *harness.Lib, c *cases.GPUDecodeCase) (j judged) {
	defer func() {
		if r := recover(); r != nil {
			j = judged{err: fmt.Errorf("panic while building or judging the case: %v\n%s", r, debug.Stack())}
		}
	}()
	return r.judgeRecipe(l, c)
}

// failure is why the case failed.
func (f pipeFailure) failure() error {
	if f.j.err != nil {
		return f.j.err
	}
	return harness.FirstFailure(f.j.vs)
}

// submit queues c, waiting while every worker is busy and the queue is full. Not concurrent.
func (p *decodePipeline) submit(c *cases.GPUDecodeCase) {
	p.jobs <- pipeJob{p.n, c}
	p.n++
}

// wait waits for every case and returns the failures in submission order.
func (p *decodePipeline) wait() []pipeFailure {
	close(p.jobs)
	p.wg.Wait()
	slices.SortFunc(p.fails, func(a, b pipeFailure) int { return a.index - b.index })
	return p.fails
}

// rapidCheckSeed is the seed rapid v1 draws check i of a run with: it starts at the base seed
// (-rapid.seed) and adds the number of checks so far before each one (base + i(i+1)/2 when every
// check is valid, as the pipeline's always are). TestRapidCheckSeed pins it against rapid itself;
// if a rapid version changes it, the failing case is still reported with its own reproducer, only
// not shrunk (TestGPUDecode says so).
func rapidCheckSeed(base uint64, i int) uint64 { return base + uint64(i)*uint64(i+1)/2 }

// withRapidFlags runs f with rapid's flags set to the given values (name without "rapid."), and
// restores them afterwards.
func withRapidFlags(set map[string]string, f func()) error {
	old := map[string]string{}
	defer func() {
		for k, v := range old {
			_ = flag.Lookup("rapid." + k).Value.Set(v)
		}
	}()
	for k, v := range set {
		fl := flag.Lookup("rapid." + k)
		if fl == nil {
			return fmt.Errorf("rapid has no flag -rapid.%s", k)
		}
		old[k] = fl.Value.String()
		if err := fl.Value.Set(v); err != nil {
			return fmt.Errorf("-rapid.%s=%s: %w", k, v, err)
		}
	}
	f()
	return nil
}

// rapidBaseSeed is -rapid.seed, or (0: rapid would pick one at random) a random seed of this
// process, which the caller sets into the flag so that every check's seed is known.
func rapidBaseSeed() uint64 {
	if fl := flag.Lookup("rapid.seed"); fl != nil {
		if s, err := strconv.ParseUint(fl.Value.String(), 10, 64); err == nil && s != 0 {
			return s
		}
	}
	return rand.Uint64() | 1
}
