package cases

import (
	"encoding/json"
	"fmt"

	"github.com/octant-kv/octant/arch"
	"github.com/octant-kv/octant/harness"
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
			call: replayCall[GPUStoreCase]},
		{Name: PropNameGPURotate, Op: "rotate", Doc: "rotate bit-exact to the oracle's float32 rotation rounded to the dtype; gaps untouched; same bits twice",
			call: replayCall[GPURotateCase]},
		{Name: PropNameGPUReduce, Op: "reduce", Doc: "reduce of hand-made partials within oracle.ReduceBound of the exact merge; empty splits never read; same bits twice",
			call: replayCall[GPUReduceCase]},
		{Name: PropNameGPUPrefill, Op: "prefill", Doc: "prefill on every tier within its declared profile's bound; rows of no sequence untouched; same bits twice",
			call: replayCall[GPUPrefillCase]},
		{Name: PropNameGPUDecode, Op: "decode", Doc: "decode on every tier within its declared profile's bound of the oracle's model; padding rows exactly zero; canaries, inputs, row gaps intact; same bits when run twice",
			call: replayCall[GPUDecodeCase]},
		{Name: PropNameMNMDecode, Op: "decode", Doc: "decode: hostile content in every input the result must not depend on changes no output bit",
			load: loadMustNotMatter},
		{Name: PropNameMNMPrefill, Op: "prefill", Doc: "prefill: hostile content in every input the result must not depend on changes no output bit",
			load: loadMustNotMatter},
		{Name: PropNameMNMStore, Op: "store", Doc: "cache_store: hostile skipped rows and old slot bytes change no byte of the cache after the store",
			load: loadMustNotMatter},
		{Name: PropNameMNMReduce, Op: "reduce", Doc: "reduce: hostile o of empty splits and stride padding change no output bit",
			load: loadMustNotMatter},
		{Name: PropNameIsoDecode, Op: "decode", Doc: "decode: the slots between sibling rows' klens poisoned (non-finite scales, random codes) change no output bit of a row that does not attend them, on every tier that does not declare coupled rows; both calls pass their judgement",
			load: loadIsolation},
	}
}

// loadMustNotMatter decodes and checks a must-not-matter case, builds its calls, and returns its
// op and its check (CheckMustNotMatter).
func loadMustNotMatter(raw json.RawMessage) (arch.Op, func(*harness.Lib) error, error) {
	var m MustNotMatterCase
	if err := DecodeCase(raw, &m); err != nil {
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
	if err := DecodeCase(raw, &c); err != nil {
		return nil, err
	}
	return P(&c).Call()
}
