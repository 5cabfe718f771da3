package fuzz

import (
	"errors"
	"fmt"
	"testing"

	"pgregory.net/rapid"
)

// The GPU targets: each property of GPUProperties as a rapid test (TestGPUX) and a fuzz target
// (FuzzX). Both skip without $OCTANT_LIB. On the GPU machine run one target at a time with
// -parallel=1 (make fuzz-gpu). TestOracleX run the same checks with the oracle alone (its
// float32 models held to the bounds every tier is held to), so CI exercises the harness too.

func skipWithoutLib(tb testing.TB) {
	tb.Helper()
	if _, err := EnvGPU(); errors.Is(err, ErrNoLib) {
		tb.Skip(err)
	} else if err != nil {
		tb.Fatal(err)
	}
}

func TestGPUStore(t *testing.T)  { skipWithoutLib(t); rapid.Check(t, PropGPUStore) }
func TestGPURotate(t *testing.T) { skipWithoutLib(t); rapid.Check(t, PropGPURotate) }
func TestGPUDecode(t *testing.T) {
	skipWithoutLib(t)
	rapid.Check(t, PropGPUDecode)
	t.Logf("time: %v", decodeTiming)
}
func TestGPUReduce(t *testing.T)  { skipWithoutLib(t); rapid.Check(t, PropGPUReduce) }
func TestGPUPrefill(t *testing.T) { skipWithoutLib(t); rapid.Check(t, PropGPUPrefill) }

func gpuFuzz(f *testing.F, prop func(*rapid.T)) {
	skipWithoutLib(f)
	fuzzSeeds(f)
	f.Fuzz(rapid.MakeFuzz(prop))
}

func FuzzStore(f *testing.F)   { gpuFuzz(f, PropGPUStore) }
func FuzzRotate(f *testing.F)  { gpuFuzz(f, PropGPURotate) }
func FuzzDecode(f *testing.F)  { gpuFuzz(f, PropGPUDecode) }
func FuzzReduce(f *testing.F)  { gpuFuzz(f, PropGPUReduce) }
func FuzzPrefill(f *testing.F) { gpuFuzz(f, PropGPUPrefill) }

// oracleOnly runs check on cases of gen with no library: the oracle's side of every GPU target
// (its float32 models against the bounds, its rotation against FORMAT.md §3 read independently,
// the store's oracle bytes against slot acceptance). Few cases by default: CI time.
func oracleOnly[C any](t *testing.T, gen *rapid.Generator[*C], check func(*GPU, *C) error) {
	rapid.Check(t, func(rt *rapid.T) {
		c := gen.Draw(rt, "case")
		if err := check(nil, c); err != nil {
			rt.Fatal(err)
		}
	})
}

func TestOracleStore(t *testing.T)  { oracleOnly(t, GPUStoreCases(), CheckGPUStore) }
func TestOracleRotate(t *testing.T) { oracleOnly(t, GPURotateCases(), CheckGPURotate) }
func TestOracleReduce(t *testing.T) { oracleOnly(t, GPUReduceCases(), CheckGPUReduce) }
func TestOracleDecode(t *testing.T) {
	oracleOnly(t, GPUDecodeCases(GPUDecodeOptions), CheckGPUDecode)
}
func TestOraclePrefill(t *testing.T) {
	oracleOnly(t, GPUPrefillCases(), CheckGPUPrefill)
}

// TestSameBits: identical runs pass; the first differing element is reported with both values,
// as two hex digits for bytes (store) and four for fp16/bf16 bits.
func TestSameBits(t *testing.T) {
	im := Impl{Name: "portable"}
	if err := sameBits(im, "reduce", []uint16{1, 2}, []uint16{1, 2}, elemIndex); err != nil {
		t.Errorf("identical runs: %v", err)
	}
	for _, c := range []struct {
		err  error
		want string
	}{
		{sameBits(im, "reduce", []uint16{1, 0x3c00, 5}, []uint16{1, 0x3c01, 6}, elemIndex),
			"portable: nondeterministic reduce (a race?): element 1 is 0x3c00 after one run, 0x3c01 after another"},
		{sameBits(im, "store", []byte{7, 8}, []byte{7, 9}, func(i int) string { return fmt.Sprintf("cache byte %d", i) }),
			"portable: nondeterministic store (a race?): cache byte 1 is 0x08 after one run, 0x09 after another"},
	} {
		if c.err == nil || c.err.Error() != c.want {
			t.Errorf("sameBits: %v\nexpected %s", c.err, c.want)
		}
	}
}
