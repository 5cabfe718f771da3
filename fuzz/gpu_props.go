package fuzz

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

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

// GPUProperties lists the GPU properties: each draws a call, runs it on every implementation of
// its op in $OCTANT_LIB and judges it against the oracle (checks in gpu_*.go). They are the
// FuzzStore, FuzzRotate, FuzzDecode, FuzzReduce and FuzzPrefill targets (and TestGPUX rapid
// tests); without a library they skip.
func GPUProperties() []Property {
	return []Property{
		{Name: PropNameGPUStore, Op: "store", Doc: "cache_store: every written slot accepted by FORMAT.md §10, pad bytes and all other bytes untouched, canaries and inputs intact, same bytes twice",
			Check: PropGPUStore, replayLib: gpuReplay(CheckGPUStore)},
		{Name: PropNameGPURotate, Op: "rotate", Doc: "rotate bit-exact to the oracle's float32 rotation rounded to the dtype; gaps untouched; same bits twice",
			Check: PropGPURotate, replayLib: gpuReplay(CheckGPURotate)},
		{Name: PropNameGPUReduce, Op: "reduce", Doc: "reduce of hand-made partials within oracle.ReduceBound of the exact merge; empty splits never read; same bits twice",
			Check: PropGPUReduce, replayLib: gpuReplay(CheckGPUReduce)},
		{Name: PropNameGPUPrefill, Op: "prefill", Doc: "prefill on every tier within its declared profile's bound; rows of no sequence untouched; same bits twice",
			Check: PropGPUPrefill, replayLib: gpuReplay(CheckGPUPrefill)},
		{Name: PropNameGPUDecode, Op: "decode", Doc: "decode on every tier within its declared profile's bound of the oracle's model; padding rows exactly zero; canaries, inputs, row gaps intact; same bits when run twice",
			Check: PropGPUDecode, replayLib: replayGPUDecode},
	}
}

// propGPU returns the library of $OCTANT_LIB or skips.
func propGPU(t *rapid.T) *GPU {
	g, err := EnvGPU()
	if errors.Is(err, ErrNoLib) {
		t.Skip(err.Error())
	}
	if err != nil {
		t.Fatalf("opening %s: %v", LibEnv, err)
	}
	return g
}

// PropGPUDecode: a decode call (GPUDecodeCases(GPUDecodeOptions)) on every decode tier of the
// library passes CheckGPUDecode.
func PropGPUDecode(t *rapid.T) {
	g := propGPU(t)
	c := GPUDecodeCases(GPUDecodeOptions).Draw(t, "case")
	t0 := time.Now()
	in, err := c.Spec.Build()
	decodeTiming.add("build", t0)
	if err != nil {
		t.Fatalf("building the generated decode call: %v", err)
	}
	if err := checkGPUDecode(g, c, in); err != nil {
		c.Digest = Digest(in) // for the reproducer only: hashing every case's cache costs time
		failLib(t, PropNameGPUDecode, g, c, err)
	}
}

// gpuReplay decodes a case of type C and runs check on it.
func gpuReplay[C any](check func(*GPU, *C) error) func(json.RawMessage, *GPU) error {
	return func(raw json.RawMessage, g *GPU) error {
		var c C
		if err := decodeCase(raw, &c); err != nil {
			return err
		}
		return check(g, &c)
	}
}

// gpuProp is a GPU property: draw a case, check it on $OCTANT_LIB, record a failure.
func gpuProp[C any](name string, gen *rapid.Generator[*C], check func(*GPU, *C) error) func(*rapid.T) {
	return func(t *rapid.T) {
		g := propGPU(t)
		c := gen.Draw(t, "case")
		if err := check(g, c); err != nil {
			failLib(t, name, g, c, err)
		}
	}
}

// PropGPUStore: a store call (GPUStoreCases) passes CheckGPUStore on the library.
func PropGPUStore(t *rapid.T) { gpuProp(PropNameGPUStore, GPUStoreCases(), CheckGPUStore)(t) }

// PropGPURotate: a rotate call (GPURotateCases) passes CheckGPURotate on the library.
func PropGPURotate(t *rapid.T) { gpuProp(PropNameGPURotate, GPURotateCases(), CheckGPURotate)(t) }

// PropGPUReduce: a reduce call (GPUReduceCases) passes CheckGPUReduce on the library.
func PropGPUReduce(t *rapid.T) { gpuProp(PropNameGPUReduce, GPUReduceCases(), CheckGPUReduce)(t) }

// PropGPUPrefill: a prefill call (GPUPrefillCases) passes CheckGPUPrefill on every prefill tier.
func PropGPUPrefill(t *rapid.T) { gpuProp(PropNameGPUPrefill, GPUPrefillCases(), CheckGPUPrefill)(t) }

func replayGPUDecode(raw json.RawMessage, g *GPU) error {
	var c GPUDecodeCase
	if err := decodeCase(raw, &c); err != nil {
		return err
	}
	if c.Spec == nil {
		return fmt.Errorf("case without spec")
	}
	return CheckGPUDecode(g, &c)
}
