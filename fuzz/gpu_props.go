package fuzz

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/octant-kv/octant/arch"
	"github.com/octant-kv/octant/harness"
	"pgregory.net/rapid"
)

// Names of the GPU properties (the reproducers' property field; their op is the directory under
// corpus/regressions).
const (
	PropNameGPUStore   = "gpu-store"
	PropNameGPURotate  = "gpu-rotate"
	PropNameGPUDecode  = "gpu-decode"
	PropNameGPUReduce  = "gpu-reduce"
	PropNameGPUPrefill = "gpu-prefill"
)

// Recipe is a generated case that builds the call the judges run: GPUStoreCase, GPURotateCase,
// GPUDecodeCase, GPUReduceCase, GPUPrefillCase. A recipe is JSON (a reproducer's case) and
// rebuilds the same call anywhere.
type Recipe interface {
	Call() (harness.Call, error)
	// Path names the case by its shape, as a path ("k3v4/bf16/g6/bs16/lbnhc/splits7/q5").
	Path() string
}

// GPUProperties lists the GPU properties: each draws a recipe, builds its call, runs it on every
// implementation of its op in $OCTANT_LIB and judges it (harness.CheckAll). They are the
// FuzzStore, FuzzRotate, FuzzDecode, FuzzReduce and FuzzPrefill targets (and TestGPUX rapid
// tests); without a library they skip, and TestOracleX run the same check on the oracle alone.
// The must-not-matter properties (mustnotmatter.go) and the isolation property (isolation.go)
// follow: each compares a call with a changed twin, on the oracle alone without a library.
func GPUProperties() []Property {
	return []Property{
		{Name: PropNameGPUStore, Op: "store", Doc: "cache_store: every written slot accepted by docs/format.md §10, pad bytes and all other bytes untouched, canaries and inputs intact, same bytes twice",
			Check: PropGPUStore, call: replayCall[GPUStoreCase]},
		{Name: PropNameGPURotate, Op: "rotate", Doc: "rotate bit-exact to the oracle's float32 rotation rounded to the dtype; gaps untouched; same bits twice",
			Check: PropGPURotate, call: replayCall[GPURotateCase]},
		{Name: PropNameGPUReduce, Op: "reduce", Doc: "reduce of hand-made partials within oracle.ReduceBound of the exact merge; empty splits never read; same bits twice",
			Check: PropGPUReduce, call: replayCall[GPUReduceCase]},
		{Name: PropNameGPUPrefill, Op: "prefill", Doc: "prefill on every tier within its declared profile's bound; rows of no sequence untouched; same bits twice",
			Check: PropGPUPrefill, call: replayCall[GPUPrefillCase]},
		{Name: PropNameGPUDecode, Op: "decode", Doc: "decode on every tier within its declared profile's bound of the oracle's model; padding rows exactly zero; canaries, inputs, row gaps intact; same bits when run twice",
			Check: PropGPUDecode, call: replayCall[GPUDecodeCase]},
		{Name: PropNameMNMDecode, Op: "decode", Doc: "decode: hostile content in every input the result must not depend on changes no output bit",
			Check: PropMustNotMatterDecode, load: loadMustNotMatter},
		{Name: PropNameMNMPrefill, Op: "prefill", Doc: "prefill: hostile content in every input the result must not depend on changes no output bit",
			Check: PropMustNotMatterPrefill, load: loadMustNotMatter},
		{Name: PropNameMNMStore, Op: "store", Doc: "cache_store: hostile skipped rows and old slot bytes change no byte of the cache after the store",
			Check: PropMustNotMatterStore, load: loadMustNotMatter},
		{Name: PropNameMNMReduce, Op: "reduce", Doc: "reduce: hostile o of empty splits and stride padding change no output bit",
			Check: PropMustNotMatterReduce, load: loadMustNotMatter},
		{Name: PropNameIsoDecode, Op: "decode", Doc: "decode: the slots between sibling rows' klens poisoned (non-finite scales, random codes) change no output bit of a row that does not attend them, on every tier that does not declare coupled rows; both calls pass their judgement",
			Check: PropIsolationDecode, load: loadIsolation},
	}
}

// loadMustNotMatter decodes and checks a must-not-matter case, builds its calls, and returns its
// op and its check (CheckMustNotMatter).
func loadMustNotMatter(raw json.RawMessage) (arch.Op, func(*harness.Lib) error, error) {
	var m MustNotMatterCase
	if err := harness.DecodeCase(raw, &m); err != nil {
		return "", nil, err
	}
	if err := m.Validate(); err != nil {
		return "", nil, err
	}
	a, _, _, err := m.calls(m.Regions)
	if err != nil {
		return "", nil, fmt.Errorf("building the call: %w", err)
	}
	return a.Op(), func(l *harness.Lib) error { return CheckMustNotMatter(l, &m) }, nil
}

// replayCall decodes a reproducer's case as a recipe of type C and builds its call.
func replayCall[C any, P interface {
	*C
	Recipe
}](raw json.RawMessage) (harness.Call, error) {
	var c C
	if err := harness.DecodeCase(raw, &c); err != nil {
		return nil, err
	}
	return P(&c).Call()
}

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
func checkRecipe(t *rapid.T, name string, l *harness.Lib, c Recipe) {
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
func judgeRecipe(l *harness.Lib, c Recipe) judged {
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
func (j judged) report(t *rapid.T, name string, l *harness.Lib, c Recipe) {
	if j.err != nil {
		t.Fatalf("building the generated %s call: %v", name, j.err)
	}
	if err := harness.FirstFailure(j.vs); err != nil {
		if d, ok := c.(*GPUDecodeCase); ok {
			d.record(j.call) // for the reproducer only: hashing every case's cache costs time
		}
		failLib(t, name, l, c, err)
	}
}

// gpuProp is a GPU property: draw a recipe, check it on $OCTANT_LIB, record a failure.
func gpuProp[C any, P interface {
	*C
	Recipe
}](name string, gen *rapid.Generator[P]) func(*rapid.T) {
	return func(t *rapid.T) {
		l := propLib(t)
		checkRecipe(t, name, l, gen.Draw(t, "case"))
	}
}

// PropGPUDecode: a decode call (GPUDecodeCases(GPUDecodeOptions)) passes on every decode tier.
func PropGPUDecode(t *rapid.T) { gpuProp(PropNameGPUDecode, GPUDecodeCases(GPUDecodeOptions))(t) }

// PropGPUStore: a store call (GPUStoreCases) passes on the library.
func PropGPUStore(t *rapid.T) { gpuProp(PropNameGPUStore, GPUStoreCases())(t) }

// PropGPURotate: a rotate call (GPURotateCases) passes on the library.
func PropGPURotate(t *rapid.T) { gpuProp(PropNameGPURotate, GPURotateCases())(t) }

// PropGPUReduce: a reduce call (GPUReduceCases) passes on the library.
func PropGPUReduce(t *rapid.T) { gpuProp(PropNameGPUReduce, GPUReduceCases())(t) }

// PropGPUPrefill: a prefill call (GPUPrefillCases) passes on every prefill tier.
func PropGPUPrefill(t *rapid.T) { gpuProp(PropNameGPUPrefill, GPUPrefillCases())(t) }
