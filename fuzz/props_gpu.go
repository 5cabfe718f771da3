package fuzz

import (
	"errors"
	"time"

	"github.com/octant-kv/octant/cases"
	"github.com/octant-kv/octant/harness"
	"pgregory.net/rapid"
)

// propLib returns the library of $OCTANT_LIB or skips.
func propLib(t *rapid.T) *harness.Lib {
	l, err := harness.Env()
	if errors.Is(err, harness.ErrNoLib) {
		t.Skip(err.Error())
	}
	if err != nil {
		t.Fatalf("opening %s: %v", harness.LibEnv, err)
	}
	return l
}

// checkRecipe builds c's call and judges it on every implementation in l (nil: the oracle alone);
// a failing verdict records c as a reproducer and fails t with the replay command.
func checkRecipe(t *rapid.T, name string, l *harness.Lib, c cases.Recipe) {
	j := judgeRecipe(l, c)
	j.report(t, name, l, c)
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
func judgeRecipe(l *harness.Lib, c cases.Recipe) judged {
	t0 := time.Now()
	call, err := c.Call()
	build := time.Since(t0)
	if err != nil {
		return judged{err: err, build: build}
	}
	d, decode := call.(*harness.DecodeCall)
	if decode {
		d.SkipContract = true // a property fails only on Fail verdicts: exact attention only for a failure's message
	}
	t1 := time.Now()
	vs := harness.CheckAll(l, call)
	if decode {
		harness.DecodeTiming.Add("judge", t1)
	}
	return judged{call: call, vs: vs, build: build}
}

// report fails t for a call that could not be built or a failing verdict, recording c as a
// reproducer with the replay command.
func (j judged) report(t *rapid.T, name string, l *harness.Lib, c cases.Recipe) {
	if j.err != nil {
		t.Fatalf("building the generated %s call: %v", name, j.err)
	}
	if err := harness.FirstFailure(j.vs); err != nil {
		if d, ok := c.(*cases.GPUDecodeCase); ok {
			d.Record(j.call) // for the reproducer only: hashing every case's cache costs time
		}
		failLib(t, name, l, c, err)
	}
}

// gpuProp is a GPU property: draw a recipe, check it on $OCTANT_LIB, record a failure.
func gpuProp[C any, P interface {
	*C
	cases.Recipe
}](name string, gen *rapid.Generator[P]) func(*rapid.T) {
	return func(t *rapid.T) {
		l := propLib(t)
		checkRecipe(t, name, l, gen.Draw(t, "case"))
	}
}

// PropGPUDecode: a decode call (GPUDecodeCases(GPUDecodeOptions())) passes on every decode tier.
func PropGPUDecode(t *rapid.T) {
	gpuProp(cases.PropNameGPUDecode, cases.GPUDecodeCases(cases.GPUDecodeOptions()))(t)
}

// PropGPUStore: a store call (GPUStoreCases) passes on the library.
func PropGPUStore(t *rapid.T) { gpuProp(cases.PropNameGPUStore, cases.GPUStoreCases())(t) }

// PropGPURotate: a rotate call (GPURotateCases) passes on the library.
func PropGPURotate(t *rapid.T) { gpuProp(cases.PropNameGPURotate, cases.GPURotateCases())(t) }

// PropGPUReduce: a reduce call (GPUReduceCases) passes on the library.
func PropGPUReduce(t *rapid.T) { gpuProp(cases.PropNameGPUReduce, cases.GPUReduceCases())(t) }

// PropGPUPrefill: a prefill call (GPUPrefillCases) passes on every prefill tier.
func PropGPUPrefill(t *rapid.T) { gpuProp(cases.PropNameGPUPrefill, cases.GPUPrefillCases())(t) }
