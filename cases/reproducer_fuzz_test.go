package cases

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// reproducerSeeds are the seeds of the reader's fuzz targets: every committed reproducer
// (corpus/regressions/**.json), hostileReproducers, and a reproducer of every property around a
// generated case (the isolation property's included), so that the fuzzer mutates valid cases of
// each type.
func reproducerSeeds(f *testing.F) [][]byte {
	var out [][]byte
	err := filepath.WalkDir(filepath.Join("..", "corpus", "regressions"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".json") {
			return err
		}
		b, err := os.ReadFile(p)
		out = append(out, b)
		return err
	})
	if err != nil {
		f.Fatal(err)
	}
	for _, h := range hostileReproducers(f) {
		out = append(out, h.doc)
	}
	// A reproducer of every property with a generated case, so that the fuzzer mutates valid
	// cases of each type.
	for i := 0; i < 2; i++ {
		m := MergeCases().Example(i)
		if in, err := m.Decode.Build(); err == nil {
			m.Digest = Digest(in)
		}
		for _, g := range []struct {
			prop string
			c    any
		}{
			{PropNameGPUDecode, GPUDecodeCases(GPUDecodeOptions()).Example(i)}, {PropNameGPUStore, GPUStoreCases().Example(i)},
			{PropNameGPURotate, GPURotateCases().Example(i)}, {PropNameGPUReduce, GPUReduceCases().Example(i)},
			{PropNameGPUPrefill, GPUPrefillCases().Example(i)}, {PropNameQueryMaps, QueryMapCases().Example(i)},
			{PropNameSlotAcceptance, SlotCases(SlotCaseOptions{NonFinite: 2, Flips: 2}).Example(i)}, {PropNameMerge, m},
			{PropNameMNMDecode, &MustNotMatterCase{Decode: GPUDecodeCases(GPUDecodeOptions()).Example(i), Seed: 3, Regions: DecodeRegions}},
			{PropNameMNMPrefill, &MustNotMatterCase{Prefill: GPUPrefillCases().Example(i), Seed: 3, Regions: PrefillRegions}},
			{PropNameMNMStore, &MustNotMatterCase{Store: GPUStoreCases().Example(i), Seed: 3, Regions: StoreRegions}},
			{PropNameMNMReduce, &MustNotMatterCase{Reduce: GPUReduceCases().Example(i), Seed: 3, Regions: ReduceRegions}},
			{PropNameIsoDecode, IsolationCases().Example(i)},
		} {
			out = append(out, generated(f, g.prop, g.c))
		}
	}
	return out
}

// readLimit bounds the time FuzzReadReproducer's worker may take to read one input.
const readLimit = 20 * time.Second

// FuzzReadReproducer reads arbitrary bytes as a reproducer file: ParseReproducer either refuses
// them with a *ReproducerError or returns a replay whose case is checked and whose call
// is built; it never panics (a panic it recovers while building is a failure too). The seeds are
// every committed reproducer (corpus/regressions/**.json) and hostileReproducers; crashers found
// go to testdata/fuzz/FuzzReadReproducer.
func FuzzReadReproducer(f *testing.F) {
	for _, b := range reproducerSeeds(f) {
		f.Add(b)
	}
	f.Fuzz(checkRead)
}

// checkRead reads b as a reproducer: a *ReproducerError or a replay with its call built,
// never a panic.
func checkRead(t *testing.T, b []byte) {
	// In a fuzz worker, an input that takes longer than readLimit crashes the worker, so that
	// the fuzzer records it (Go's fuzzer has no time limit of its own per input).
	if inFuzzWorker() {
		w := time.AfterFunc(readLimit, func() { panic(fmt.Sprintf("reading a reproducer took over %v:\n%s", readLimit, b)) })
		defer w.Stop()
	}
	x, err := ParseReproducer("fuzz.json", b)
	if err != nil {
		var re *ReproducerError
		if !errors.As(err, &re) {
			t.Fatalf("error of type %T, expected a *ReproducerError: %v", err, err)
		}
		if strings.Contains(err.Error(), "panicked") {
			t.Fatal(err)
		}
		return
	}
	if x.run == nil || x.Repro == nil {
		t.Fatalf("a reproducer accepted with nothing to run: %+v", x)
	}
}

// FuzzReproducerFields sets up to two fields of a seed reproducer (reproducerSeeds; a field is a
// number, string or boolean anywhere in the document, in a fixed order) to fuzzed values and
// reads the result (checkRead): every field at every value, which byte mutations of JSON text
// rarely reach.
func FuzzReproducerFields(f *testing.F) {
	seeds := reproducerSeeds(f)
	for i := range seeds {
		f.Add(uint(i), uint(0), int64(0), uint(0), "")
	}
	f.Add(uint(0), uint(5), int64(-1), uint(9), "x")
	f.Fuzz(func(t *testing.T, seed, field1 uint, v1 int64, field2 uint, v2 string) {
		var doc any
		if json.Unmarshal(seeds[seed%uint(len(seeds))], &doc) != nil {
			return // a hostile seed that is not JSON
		}
		leaves := jsonLeaves(doc, nil)
		if len(leaves) == 0 {
			return
		}
		leaves[field1%uint(len(leaves))].set(v1, "")
		leaves[field2%uint(len(leaves))].set(0, v2)
		b, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		checkRead(t, b)
	})
}

// jsonLeaf is a number, string or boolean inside a decoded JSON document, with a setter.
type jsonLeaf struct {
	v   any
	put func(any)
}

// set replaces a number by n, a string by s (or by n's digits when s is empty), a boolean by
// n's parity.
func (l jsonLeaf) set(n int64, s string) {
	switch l.v.(type) {
	case float64:
		l.put(float64(n))
	case string:
		if s == "" {
			s = fmt.Sprint(n)
		}
		l.put(s)
	case bool:
		l.put(n%2 != 0)
	}
}

// jsonLeaves lists the leaves of v in a fixed order (object keys sorted).
func jsonLeaves(v any, put func(any)) []jsonLeaf {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var out []jsonLeaf
		for _, k := range keys {
			out = append(out, jsonLeaves(x[k], func(n any) { x[k] = n })...)
		}
		return out
	case []any:
		var out []jsonLeaf
		for i := range x {
			out = append(out, jsonLeaves(x[i], func(n any) { x[i] = n })...)
		}
		return out
	case nil:
		return nil
	}
	if put == nil {
		return nil
	}
	return []jsonLeaf{{v: v, put: put}}
}
