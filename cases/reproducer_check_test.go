package cases

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/octant-kv/octant/arch"
)

// setField sets the value at a dotted path ("case.spec.cache.block_size"; a number indexes a
// list) in a JSON document.
func setField(t testing.TB, doc []byte, path string, v any) []byte {
	t.Helper()
	var root any
	if err := json.Unmarshal(doc, &root); err != nil {
		t.Fatal(err)
	}
	keys := strings.Split(path, ".")
	cur := root
	for i, k := range keys {
		last := i == len(keys)-1
		switch c := cur.(type) {
		case map[string]any:
			if last {
				if v == nil {
					delete(c, k)
				} else {
					c[k] = v
				}
			} else {
				if c[k] == nil {
					c[k] = map[string]any{}
				}
				cur = c[k]
			}
		case []any:
			j, err := strconv.Atoi(k)
			if err != nil || j >= len(c) {
				t.Fatalf("%s: %q indexes a list of %d", path, k, len(c))
			}
			if last {
				c[j] = v
			} else {
				cur = c[j]
			}
		default:
			t.Fatalf("%s: %q is not inside an object or a list", path, k)
		}
	}
	b, err := json.Marshal(root)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// corpusFile reads a file of corpus/regressions.
func corpusFile(t testing.TB, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "corpus", "regressions", rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// generated is a reproducer of property prop around case c, encoded.
func generated(t testing.TB, prop string, c any) []byte {
	t.Helper()
	r, err := NewReproducer(prop, c, "fail", "x")
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// replaySafely replays the reproducer file path, turning a panic into an error that says so.
func replaySafely(path string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return Replay(path)
}

// hostileReproducers are reproducers with one field out of its range, each with what its error
// must say (the field, the value, what was expected).
func hostileReproducers(t testing.TB) []struct {
	name, want string
	doc        []byte
} {
	decode := corpusFile(t, "decode/gpu-decode-b1a7861dc8df.json")
	store := corpusFile(t, "store/gpu-store-0ee9818235bc.json")
	prefill := corpusFile(t, "prefill/gpu-prefill-b80ce35ee798.json")
	slot := corpusFile(t, "slot/slot-acceptance-00193753003d.json")
	reduce := generated(t, PropNameGPUReduce, GPUReduceCases().Example(1))
	rotate := generated(t, PropNameGPURotate, GPURotateCases().Example(1))
	query := generated(t, PropNameQueryMaps, QueryMapCases().Example(1))
	mnm := generated(t, PropNameMNMReduce, &MustNotMatterCase{Reduce: GPUReduceCases().Example(2), Seed: 5, Regions: ReduceRegions})
	isoCase := IsolationCases().Example(1)
	isoReqs := len(isoCase.Decode.Spec.Batch.Requests)
	if isoReqs == 0 {
		t.Fatal("isolation example 1 has no request: pick another for the hostile isolation reproducers")
	}
	iso := generated(t, PropNameIsoDecode, isoCase)
	isoSpan := isoCase.Decode.Spec.Table.MaxBlocks * isoCase.Decode.Spec.Cache.BlockSize
	return []struct {
		name, want string
		doc        []byte
	}{
		{"decode-block-size-0", "case.spec.cache.block_size = 0, expected 1..", setField(t, decode, "case.spec.cache.block_size", 0)},
		{"decode-unknown-format", `case.spec.cache.format = "octave_k9v9", expected one of octave_k3v3`, setField(t, decode, "case.spec.cache.format", "octave_k9v9")},
		{"decode-splits-0", "case.spec.num_splits = 0, expected 1..1024", setField(t, decode, "case.spec.num_splits", 0)},
		{"decode-group-3", "case.spec.group = 3, expected one of 1, 2, 4, 6, 8", setField(t, decode, "case.spec.group", 3)},
		{"decode-sign-words", "case.spec.signs.k.words has 3 entries, expected 8", setField(t, decode, "case.spec.signs.k", map[string]any{"words": []int{1, 2, 3}})},
		{"decode-value-kind", `case.spec.query.kinds[0] = "bogus", expected one of gaussian`, setField(t, decode, "case.spec.query.kinds", []string{"bogus"})},
		{"decode-query-group", "case.query_group = 9, expected 1..4", setField(t, decode, "case.query_group", 9)},
		{"decode-table-size", "case.spec.block_table.table has 3 entries, expected num_reqs 2 × max_blocks 1 = 2", setField(t, decode, "case.spec.block_table.table", []int{0, 1, 0})},
		{"decode-maps-length", "case.spec.maps.q_to_klen has 1 entries, expected 5", setField(t, decode, "case.spec.maps.q_to_klen", []int{1})},
		{"decode-sm-scale", "case.spec.sm_scale = -1, expected a finite value > 0", setField(t, decode, "case.spec.sm_scale", -1)},
		{"decode-garbage", `case.spec.content.garbage = "lava", expected one of random`, setField(t, decode, "case.spec.content.garbage", "lava")},
		{"decode-no-spec", "case.spec is missing", setField(t, decode, "case.spec", nil)},
		{"store-block-size-0", "case.cache.block_size = 0, expected 1..", setField(t, store, "case.cache.block_size", 0)},
		{"store-slot-past-cache", "case.slot_mapping[0] = 100000, expected -1 or a slot in 0..", setField(t, store, "case.slot_mapping.0", 100000)},
		{"store-rows", "case.rows = 1, expected at least len(slot_mapping)", setField(t, store, "case.rows", 1)},
		{"prefill-block-size-0", "case.cache.block_size = 0, expected 1..", setField(t, prefill, "case.cache.block_size", 0)},
		{"prefill-group-0", "case.group = 0, expected 1..", setField(t, prefill, "case.group", 0)},
		{"prefill-splits", "case.num_splits = 65, expected 0..64", setField(t, prefill, "case.num_splits", 65)},
		{"reduce-splits-0", "case.splits = 0, expected 1..1024", setField(t, reduce, "case.splits", 0)},
		{"reduce-stride", "case.partial_stride = 257, expected 0 or a multiple of 4 in 260..", setField(t, reduce, "case.partial_stride", 257)},
		{"reduce-pattern", `case.patterns[0] = "odd", expected one of all`, setField(t, reduce, "case.patterns", []string{"odd"})},
		{"rotate-rows", "case.rows = -1, expected 0..", setField(t, rotate, "case.rows", -1)},
		{"rotate-heads", "case.heads = 0, expected 1..", setField(t, rotate, "case.heads", 0)},
		{"slot-flip-byte", "case.flips[0].byte = 100000, expected 0..", setField(t, slot, "case.flips.0.byte", 100000)},
		{"slot-format", `case.format = "fp8", expected one of octave_k3v3`, setField(t, slot, "case.format", "fp8")},
		{"querymap-tokens", "case.num_tokens = 1099511627776, expected -", setField(t, query, "case.num_tokens", 1<<40)},
		{"mnm-two-recipes", "case: 2 recipes (reduce, store), expected exactly one", setField(t, mnm, "case.store", mustObject(t, store, "case"))},
		{"mnm-regions", "case.regions = 1 (unread-slots), expected a subset of empty-splits+stride-pad", setField(t, mnm, "case.regions", 1)},
		{"mnm-op", "case: a reduce recipe, expected a decode recipe (property mnm-decode)", setField(t, setField(t, mnm, "property", PropNameMNMDecode), "op", "decode")},
		{"iso-no-decode", "case.decode is missing, expected a decode recipe", setField(t, iso, "case.decode", nil)},
		{"iso-query-group", "case.decode.query_group = 9, expected 1..4", setField(t, iso, "case.decode.query_group", 9)},
		{"iso-block-size-0", "case.decode.spec.cache.block_size = 0, expected 1..", setField(t, iso, "case.decode.spec.cache.block_size", 0)},
		{"iso-cuts-length", fmt.Sprintf("case.cuts has %d entries, expected %d (one per request of decode.spec.batch.requests)", isoReqs+1, isoReqs),
			setField(t, iso, "case.cuts", append(append([]int(nil), isoCase.Cuts...), 0))},
		{"iso-cut-negative", fmt.Sprintf("case.cuts[0] = -1, expected a position in 0..%d", isoSpan), setField(t, iso, "case.cuts.0", -1)},
		{"iso-cut-past", fmt.Sprintf("case.cuts[0] = %d, expected a position in 0..%d", isoSpan+1, isoSpan), setField(t, iso, "case.cuts.0", isoSpan+1)},
		{"iso-seed", "case: decoding the case: json: cannot unmarshal string into Go struct field IsolationCase.seed of type uint64", setField(t, iso, "case.seed", "many")},
		{"iso-op", `op = "store", expected "decode" (the op of property iso-decode)`, setField(t, iso, "op", "store")},
		{"unknown-property", `property = "gpu-fly", expected one of`, setField(t, decode, "property", "gpu-fly")},
		{"op-mismatch", `op = "store", expected "decode" (the op of property gpu-decode)`, setField(t, decode, "op", "store")},
		{"status", `verdict.status = "maybe", expected "fail" or "pass"`, setField(t, decode, "verdict.status", "maybe")},
		{"top-level-typo", `unknown field "propety"`, setField(t, decode, "propety", "x")},
		{"not-json", "not a reproducer", []byte("{\"op\": ")},
	}
}

// TestReproducerFieldErrors: a reproducer with a field out of its range is refused, before
// anything runs, with an error that names the field, its value and what was expected; none
// panics (a block_size of 0 used to divide by zero while the cache was built).
func TestReproducerFieldErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range hostileReproducers(t) {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, c.name+".json")
			if err := os.WriteFile(path, c.doc, 0o644); err != nil {
				t.Fatal(err)
			}
			err := replaySafely(path)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), path+": ") {
				t.Fatalf("replay gave %v\nexpected an error starting with the path and saying %q", err, c.want)
			}
		})
	}
}

var _ = TargetLib

// mustObject is the value at key of a JSON object document.
func mustObject(t testing.TB, doc []byte, key string) any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(doc, &m); err != nil {
		t.Fatal(err)
	}
	return m[key]
}

// TestGeneratedCasesValid: every case the generators draw (rapid's and the seeded ones that
// `octant conform` certifies) passes its Validate, so that the checks refuse only what no
// generator writes; a few of each also parse as reproducers with their call built.
func TestGeneratedCasesValid(t *testing.T) {
	n := 300
	if testing.Short() {
		n = 60
	}
	check := func(t *testing.T, prop string, i int, c interface{ Validate() error }) {
		t.Helper()
		if err := c.Validate(); err != nil {
			b, _ := json.Marshal(c)
			t.Fatalf("%s case %d: %v\n%s", prop, i, err, b)
		}
		if i%20 != 0 {
			return
		}
		if _, err := ParseReproducer(prop+".json", generated(t, prop, c)); err != nil {
			t.Fatalf("%s case %d as a reproducer: %v", prop, i, err)
		}
	}
	for i := 0; i < n; i++ {
		check(t, PropNameGPUDecode, i, GPUDecodeCases(GPUDecodeOptions()).Example(i))
		check(t, PropNameGPUStore, i, GPUStoreCases().Example(i))
		check(t, PropNameGPURotate, i, GPURotateCases().Example(i))
		check(t, PropNameGPUReduce, i, GPUReduceCases().Example(i))
		check(t, PropNameGPUPrefill, i, GPUPrefillCases().Example(i))
		check(t, PropNameSlotAcceptance, i, SlotCases(SlotCaseOptions{NonFinite: 2, Flips: 8}).Example(i))
		check(t, PropNameQueryMaps, i, QueryMapCases().Example(i))
		m := MergeCases().Example(i)
		check(t, PropNameMerge, i, m)
		check(t, PropNameMNMReduce, i, &MustNotMatterCase{Reduce: GPUReduceCases().Example(i), Seed: uint64(i), Regions: ReduceRegions})
		check(t, PropNameMNMStore, i, &MustNotMatterCase{Store: GPUStoreCases().Example(i), Seed: uint64(i), Regions: StoreRegions})
		check(t, PropNameIsoDecode, i, IsolationCases().Example(i))
		for _, op := range arch.Ops() {
			r, err := SeededRecipe(op, uint64(i))
			if err != nil {
				continue
			}
			if err := r.(interface{ Validate() error }).Validate(); err != nil {
				t.Fatalf("seeded %s recipe %d: %v", op, i, err)
			}
		}
	}
}

// TestShellWord: a path of plain characters stays as it is; a worker spec with ? and &, and a
// quote, become one single-quoted shell word.
func TestShellWord(t *testing.T) {
	for in, want := range map[string]string{
		"/abs/build/liboctave_emu.so":        "/abs/build/liboctave_emu.so",
		"host:/a/capi.py?lib=/b.so&device=1": "'host:/a/capi.py?lib=/b.so&device=1'",
		"host:/it's/a.py":                    `'host:/it'\''s/a.py'`,
		"":                                   "''",
	} {
		if got := ShellWord(in); got != want {
			t.Errorf("ShellWord(%q) = %s, expected %s", in, got, want)
		}
	}
}
