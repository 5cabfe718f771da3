package fuzz

import (
	"time"

	"github.com/octant-kv/octant/cases"
	"github.com/octant-kv/octant/harness"
	"pgregory.net/rapid"
)

// gpuLib returns the runner's library, or skips the property when it has none.
func (r *Runner) gpuLib(t *rapid.T) *harness.Lib {
	if r.Lib == nil {
		t.Skip("no kernel library: the GPU properties need one (OCTANT_LIB)")
	}
	return r.Lib
}

// checkRecipe builds c's call and judges it on every implementation in l (nil: the oracle alone);
// a failing verdict records c as a reproducer and fails t with the replay command. A call outside
// l's declared domain is counted and logged (outside.go), and skipped when skipOutside.
func (r *Runner) checkRecipe(t *rapid.T, name string, l *harness.Lib, c cases.Recipe, skipOutside bool) {
	j := r.judgeRecipe(l, c)
	if d, ok := harness.OutsideDomain(j.vs); ok {
		r.outside(t, name, d, skipOutside)
		return
	}
	r.report(t, j, name, l, c)
}

// judged is a recipe's call and its verdicts, or why its call could not be built.
type judged struct {
	call  harness.Call
	vs    []harness.Verdict
	err   error
	build time.Duration // the call's build (the rest of its wall is the judges')
}

// judgeRecipe builds c's call and judges it on every implementation in l. It touches no
// rapid.T, so several may run at once (decodePipeline).
func (r *Runner) judgeRecipe(l *harness.Lib, c cases.Recipe) judged {
	r.init()
	t0 := time.Now()
	call, err := c.Call()
	build := time.Since(t0)
	if err != nil {
		return judged{err: err, build: build}
	}
	d, decode := call.(*harness.DecodeCall)
	if decode {
		d.SkipContract = true // a property fails only on Fail verdicts: exact attention only for a failure's message
		d.Timing = r.Timing
		r.Timing.AddDuration("build", build)
		r.Timing.Count()
	}
	t1 := time.Now()
	vs := harness.CheckAll(l, call)
	if decode {
		r.Timing.Add("judge", t1)
	}
	return judged{call: call, vs: vs, build: build}
}

// report fails t for a call that could not be built or a failing verdict, recording c as a
// reproducer with the replay command.
func (r *Runner) report(t *rapid.T, j judged, name string, l *harness.Lib, c cases.Recipe) {
	if j.err != nil {
		t.Fatalf("building the generated %s call: %v", name, j.err)
	}
	if err := harness.FirstFailure(j.vs); err != nil {
		if d, ok := c.(*cases.GPUDecodeCase); ok {
			d.Record(j.call) // for the reproducer only: hashing every case's cache costs time
		}
		r.failCall(t, name, l, c, err, j.call, j.vs)
	}
}

// gpuProp is a GPU property: draw a recipe, check it on the runner's library, record a failure;
// a case outside the library's declared domain is counted, and skipped when skipOutside.
func gpuProp[C any, P interface {
	*C
	cases.Recipe
}](r *Runner, name string, gen *rapid.Generator[P], skipOutside bool) func(*rapid.T) {
	return func(t *rapid.T) {
		l := r.gpuLib(t)
		r.checkRecipe(t, name, l, gen.Draw(t, "case"), skipOutside)
	}
}

// PropGPUDecode: a decode call (cases.GPUDecodeCases) passes on every decode tier.
func (r *Runner) PropGPUDecode(t *rapid.T) { r.decodeProp(false)(t) }

// PropGPUStore: a store call (cases.GPUStoreCases) passes on the library.
func (r *Runner) PropGPUStore(t *rapid.T) { r.storeProp(false)(t) }

// PropGPURotate: a rotate call (cases.GPURotateCases) passes on the library.
func (r *Runner) PropGPURotate(t *rapid.T) { r.rotateProp(false)(t) }

// PropGPUReduce: a reduce call (cases.GPUReduceCases) passes on the library.
func (r *Runner) PropGPUReduce(t *rapid.T) { r.reduceProp(false)(t) }

// PropGPUPrefill: a prefill call (cases.GPUPrefillCases) passes on every prefill tier.
func (r *Runner) PropGPUPrefill(t *rapid.T) { r.prefillProp(false)(t) }

func (r *Runner) decodeProp(skipOutside bool) func(*rapid.T) {
	return gpuProp(r, cases.PropNameGPUDecode, cases.GPUDecodeCases(cases.GPUDecodeOptions()), skipOutside)
}
func (r *Runner) storeProp(skipOutside bool) func(*rapid.T) {
	return gpuProp(r, cases.PropNameGPUStore, cases.GPUStoreCases(), skipOutside)
}
func (r *Runner) rotateProp(skipOutside bool) func(*rapid.T) {
	return gpuProp(r, cases.PropNameGPURotate, cases.GPURotateCases(), skipOutside)
}
func (r *Runner) reduceProp(skipOutside bool) func(*rapid.T) {
	return gpuProp(r, cases.PropNameGPUReduce, cases.GPUReduceCases(), skipOutside)
}
func (r *Runner) prefillProp(skipOutside bool) func(*rapid.T) {
	return gpuProp(r, cases.PropNameGPUPrefill, cases.GPUPrefillCases(), skipOutside)
}
