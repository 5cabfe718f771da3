package fuzz

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/octant-kv/octant/cases"
	"pgregory.net/rapid"
)

// The seed corpora of the fuzz targets: testdata/fuzz/FuzzX/<name>, one file per named boundary
// case. Each file is the rapid choice sequence (little-endian uint64s, what rapid.MakeFuzz reads)
// of the smallest case rapid found with the seed's property — the smallest decode call with 1024
// splits, the smallest store with a block size of 1, … — so every fuzzing run starts from every
// boundary the targets promise, and `go test` (without -fuzz) replays them all as part of the
// target. TestFuzzSeedsMean checks that every file still decodes to a case with its property (a
// change to the generators or to rapid can change what bytes mean); regenerate them with
//
//	go test ./fuzz -run TestGenerateFuzzSeeds -octant.genseeds

var (
	genSeeds = flag.Bool("octant.genseeds", false, "rewrite testdata/fuzz/FuzzX/<seed> from the seed properties (TestGenerateFuzzSeeds)")
	addFound = flag.String("octant.found", "", "a fuzz cache directory (-test.fuzzcachedir of a fuzzing run): copy the inputs it found that decode to a case into testdata/fuzz/FuzzX/found-<name> (TestAddFoundInputs)")
)

// foundPrefix names the inputs a fuzzing run found interesting (new coverage), kept in the seed
// corpus beside the named seeds: they have no property to check, only that they decode to a case.
const foundPrefix = "found-"

// fuzzSeed is one named boundary case of a target: the property its case has.
type fuzzSeed struct {
	name  string
	holds func(c any) bool
}

// fuzzTarget is a fuzz target, the generator it draws its case with first, and its seeds.
type fuzzTarget struct {
	name  string
	draw  func(t *rapid.T) any
	seeds []fuzzSeed
}

// seed is a named seed whose property holds for cases of type C.
func seed[C any](name string, holds func(c C) bool) fuzzSeed {
	return fuzzSeed{name, func(c any) bool { return holds(c.(C)) }}
}

// padded reports whether some row attends to nothing and some row to something.
func padded(s *cases.DecodeSpec) (some, all bool) {
	n := 0
	for i := range s.Maps.QToReq {
		if s.Klen(i) == 0 {
			n++
		}
	}
	return n > 0 && n < len(s.Maps.QToReq), n == len(s.Maps.QToReq) && n > 0
}

func anyKind(kinds []cases.ValueKind, of []cases.ValueKind) bool {
	for _, k := range kinds {
		if slices.Contains(of, k) {
			return true
		}
	}
	return false
}

func fuzzTargets() []fuzzTarget {
	return []fuzzTarget{
		{"FuzzDecode", func(t *rapid.T) any { return cases.GPUDecodeCases(cases.GPUDecodeOptions()).Draw(t, "case") }, []fuzzSeed{
			seed("large-call", func(c *cases.GPUDecodeCase) bool { return c.Spec.KVMax() > 1024 }),
			seed("long-context", func(c *cases.GPUDecodeCase) bool { return c.Spec.KVMax() == cases.MaxSeqLen }),
			seed("splits-1024", func(c *cases.GPUDecodeCase) bool { return c.Spec.NumSplits == 1024 }),
			seed("more-splits-than-tokens", func(c *cases.GPUDecodeCase) bool { return c.Spec.NumSplits > c.Spec.KVMax() && c.Spec.KVMax() > 0 }),
			seed("padding-rows", func(c *cases.GPUDecodeCase) bool { some, _ := padded(c.Spec); return some }),
			seed("all-padding", func(c *cases.GPUDecodeCase) bool { _, all := padded(c.Spec); return all }),
			seed("klen-past-table", func(c *cases.GPUDecodeCase) bool {
				for _, k := range c.Spec.Maps.QToKlen {
					if int(k) > c.Spec.Table.MaxBlocks*c.Spec.Cache.BlockSize {
						return true
					}
				}
				return false
			}),
			seed("invalid-block-ids", func(c *cases.GPUDecodeCase) bool { return c.Spec.Table.Invalid > 0 }),
			seed("mtp-query-group-4", func(c *cases.GPUDecodeCase) bool {
				if c.QueryGroup != 4 {
					return false
				}
				for _, r := range c.Spec.Batch.Requests {
					if r.QueryLen >= 5 {
						return true
					}
				}
				return false
			}),
			seed("fused-view-out-gap", func(c *cases.GPUDecodeCase) bool { return c.QueryPadHeads > 0 && c.OutPad > 0 }),
			// The seeds of must-not-matter inputs hold them where they matter: a stale or hostile
			// workspace under a padding row, which a kernel that skips the row leaves wrong (over a
			// clean workspace it happens to be right, and a seed is the smallest case with its
			// property: nothing it does not ask for).
			seed("stale-workspace", func(c *cases.GPUDecodeCase) bool { some, _ := padded(c.Spec); return c.StaleWorkspace && some }),
			seed("g8", func(c *cases.GPUDecodeCase) bool { return c.Spec.Group == 8 }),
			seed("compact-bf16-lbnhc", func(c *cases.GPUDecodeCase) bool {
				return c.Spec.Cache.Format == "octave_k3v3_compact" && c.Spec.Dtype == "bf16" && c.Spec.Cache.Layout == cases.LBNHC
			}),
			seed("bs128-padded-strides", func(c *cases.GPUDecodeCase) bool { return c.Spec.Cache.BlockSize == 128 && c.Spec.Cache.Padded() }),
			seed("hostile-fill", func(c *cases.GPUDecodeCase) bool { some, _ := padded(c.Spec); return c.HostileSeed != 0 && some }),
			seed("mtp-tail-scaled", func(c *cases.GPUDecodeCase) bool {
				return c.TailLog2Scale != 0 && slices.ContainsFunc(c.Spec.Batch.Requests, func(r cases.Request) bool { return r.QueryLen >= 2 && r.SeqLen > r.QueryLen })
			}),
			seed("random-signs", func(c *cases.GPUDecodeCase) bool {
				return !slices.Equal(c.Spec.Signs.K.Words, cases.DefaultSignSpec.Words) && !slices.Equal(c.Spec.Signs.K.Words, c.Spec.Signs.V.Words)
			}),
		}},
		{"FuzzStore", func(t *rapid.T) any { return cases.GPUStoreCases().Draw(t, "case") }, []fuzzSeed{
			seed("block-size-1", func(c *cases.GPUStoreCase) bool { return c.Cache.BlockSize == 1 }),
			seed("block-size-7", func(c *cases.GPUStoreCase) bool { return c.Cache.BlockSize == 7 }),
			seed("skipped-tokens", func(c *cases.GPUStoreCase) bool {
				return slices.ContainsFunc(c.Mapping, func(s int64) bool { return s < 0 })
			}),
			seed("non-finite-values", func(c *cases.GPUStoreCase) bool { return anyKind(c.Kinds, cases.NonFiniteKinds) }),
			seed("host-map", func(c *cases.GPUStoreCase) bool { return c.HostMap }),
			seed("fused-qkv", func(c *cases.GPUStoreCase) bool { return c.FusedQHeads > 0 }),
			seed("lbnhc-padded", func(c *cases.GPUStoreCase) bool { return c.Cache.Layout == cases.LBNHC && c.Cache.Padded() }),
			seed("many-tokens", func(c *cases.GPUStoreCase) bool { return len(c.Mapping) > 200 }),
			seed("hostile-fill", func(c *cases.GPUStoreCase) bool { return c.HostileSeed != 0 && c.Rows > len(c.Mapping) }),
		}},
		{"FuzzRotate", func(t *rapid.T) any { return cases.GPURotateCases().Draw(t, "case") }, []fuzzSeed{
			seed("no-rows", func(c *cases.GPURotateCase) bool { return c.Rows == 0 }),
			seed("inverse-block64", func(c *cases.GPURotateCase) bool { return c.Inverse && c.Block64 && c.Rows > 0 }),
			seed("gaps", func(c *cases.GPURotateCase) bool { return c.HeadGap > 0 && c.RowGap > 0 && c.Rows > 1 }),
			seed("non-finite-values", func(c *cases.GPURotateCase) bool { return anyKind(c.Kinds, cases.NonFiniteKinds) && c.Rows > 0 }),
		}},
		{"FuzzReduce", func(t *rapid.T) any { return cases.GPUReduceCases().Draw(t, "case") }, []fuzzSeed{
			seed("splits-1024", func(c *cases.GPUReduceCase) bool { return c.Splits == 1024 }),
			seed("all-splits-empty", func(c *cases.GPUReduceCase) bool { return slices.Equal(c.Patterns, []string{"empty"}) }),
			seed("l-zero", func(c *cases.GPUReduceCase) bool { return slices.Contains(c.Patterns, "lzero") }),
			seed("maxima-far-apart", func(c *cases.GPUReduceCase) bool { return slices.Contains(c.Patterns, "far") }),
			seed("stride-512-out-gap", func(c *cases.GPUReduceCase) bool { return c.PartialStride == 512 && c.OutPad > 0 }),
			seed("hostile-fill", func(c *cases.GPUReduceCase) bool { return c.HostileSeed != 0 && slices.Contains(c.Patterns, "mixed") }),
		}},
		{"FuzzPrefill", func(t *rapid.T) any { return cases.GPUPrefillCases().Draw(t, "case") }, []fuzzSeed{
			// clamped before another sequence: a prefix loop that runs past its row of the block
			// table reads the next sequence's blocks, which a kernel must not attend.
			seed("clamped-prefix", func(c *cases.GPUPrefillCase) bool { return c.ClampedBeforeLast() }),
			seed("several-sequences", func(c *cases.GPUPrefillCase) bool { return len(c.Batch.Requests) >= 3 }),
			seed("rows-of-no-sequence", func(c *cases.GPUPrefillCase) bool { return c.Batch.NumTokens > c.Batch.QueryTokens() }),
			seed("long-prefix", func(c *cases.GPUPrefillCase) bool { return c.Batch.MaxSeq() > 512 }),
			seed("long-context", func(c *cases.GPUPrefillCase) bool { return c.Batch.MaxSeq() == cases.MaxSeqLen }),
			seed("out-gap", func(c *cases.GPUPrefillCase) bool { return c.OutPad > 0 }),
			seed("g8", func(c *cases.GPUPrefillCase) bool { return c.Group == 8 }),
			seed("seq-shorter-than-query", func(c *cases.GPUPrefillCase) bool {
				return slices.ContainsFunc(c.Batch.Requests, func(r cases.Request) bool { return r.SeqLen < r.QueryLen })
			}),
			seed("seq-equal-to-query", func(c *cases.GPUPrefillCase) bool {
				return slices.ContainsFunc(c.Batch.Requests, func(r cases.Request) bool { return r.SeqLen == r.QueryLen && r.QueryLen > 0 })
			}),
			seed("hostile-fill", func(c *cases.GPUPrefillCase) bool {
				return c.HostileSeed != 0 && slices.ContainsFunc(c.Batch.Requests, func(r cases.Request) bool { return r.SeqLen > r.QueryLen })
			}),
			// the mma tier's prefix splits: the most, and more splits than the prefix has tiles
			seed("splits-64", func(c *cases.GPUPrefillCase) bool { return c.Splits == 64 && c.Batch.MaxSeq() > 64 }),
			seed("splits-over-several-sequences", func(c *cases.GPUPrefillCase) bool { return c.Splits > 1 && len(c.Batch.Requests) >= 2 }),
		}},
		{"FuzzSlotRoundTrip", func(t *rapid.T) any { return cases.SlotCases(cases.SlotCaseOptions{NonFinite: 2}).Draw(t, "case") }, []fuzzSeed{
			seed("compact-bf16", func(c *cases.SlotCase) bool { return c.Format == "octave_k3v3_compact" && c.Dtype == "bf16" }),
			seed("k3v4-fp16", func(c *cases.SlotCase) bool { return c.Format == "octave_k3v4" && c.Dtype == "fp16" }),
			seed("non-finite", func(c *cases.SlotCase) bool {
				return c.KSpec != nil && !c.KSpec.Kind.Finite() || c.VSpec != nil && !c.VSpec.Kind.Finite()
			}),
		}},
		{"FuzzSlotAcceptance", func(t *rapid.T) any {
			return cases.SlotCases(cases.SlotCaseOptions{NonFinite: 2, Flips: 8}).Draw(t, "case")
		}, []fuzzSeed{
			seed("eight-flips", func(c *cases.SlotCase) bool { return len(c.Flips) == 8 }),
			seed("scale-byte-flip", func(c *cases.SlotCase) bool {
				f, err := cases.KernelFormat(c.Format)
				return err == nil && slices.ContainsFunc(c.Flips, func(b cases.BitFlip) bool { return b.Byte >= f.OffScales() })
			}),
		}},
		{"FuzzQueryMaps", func(t *rapid.T) any { return cases.QueryMapCases().Draw(t, "case") }, []fuzzSeed{
			seed("padding-rows", func(c *cases.QueryMapCase) bool { return c.Broken == "" && c.NumTokens > int(c.QSL[len(c.QSL)-1]) }),
			seed("broken-seq-shorter-than-query", func(c *cases.QueryMapCase) bool { return c.Broken == "seq-shorter-than-query" }),
			seed("broken-qsl-decreasing", func(c *cases.QueryMapCase) bool { return c.Broken == "qsl-decreasing" }),
		}},
		{"FuzzMergePartials", func(t *rapid.T) any { return cases.MergeCases().Draw(t, "case") }, []fuzzSeed{
			seed("wmma-geometry", func(c *cases.MergeCase) bool { return c.Geometry.Kind == cases.GeometryWMMA }),
			seed("random-geometry", func(c *cases.MergeCase) bool { return c.Geometry.Kind == cases.GeometryRandom }),
			seed("stride-258", func(c *cases.MergeCase) bool { return c.Stride == 258 }),
		}},
	}
}

// decodeSeedFile reads a Go fuzz corpus file holding one []byte.
func decodeSeedFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	if !sc.Scan() || sc.Text() != "go test fuzz v1" {
		return nil, fmt.Errorf("%s: not a Go fuzz corpus file (expected the header \"go test fuzz v1\")", path)
	}
	if !sc.Scan() {
		return nil, fmt.Errorf("%s: no value", path)
	}
	line := sc.Text()
	if !strings.HasPrefix(line, "[]byte(") || !strings.HasSuffix(line, ")") {
		return nil, fmt.Errorf("%s: expected one []byte value, found %q", path, line)
	}
	s, err := strconv.Unquote(line[len("[]byte(") : len(line)-1])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return []byte(s), nil
}

// decodeBytes draws target's case from fuzz input b, as the fuzz target does.
func (ft fuzzTarget) decodeBytes(t *testing.T, name string, b []byte) (c any) {
	t.Helper()
	t.Run(ft.name+"/"+name, func(t *testing.T) {
		rapid.MakeFuzz(func(rt *rapid.T) { c = ft.draw(rt) })(t, b)
	})
	return c
}

// TestFuzzSeedsMean: every named seed of every target exists under testdata/fuzz/<target>/, and
// decodes (as the target reads it) to a case with the seed's property; no file is left that no
// seed names.
func TestFuzzSeedsMean(t *testing.T) {
	for _, ft := range fuzzTargets() {
		dir := filepath.Join("testdata", "fuzz", ft.name)
		known := map[string]bool{}
		for _, s := range ft.seeds {
			known[s.name] = true
			b, err := decodeSeedFile(filepath.Join(dir, s.name))
			if err != nil {
				t.Errorf("%s seed %s: %v (regenerate: go test ./fuzz -run TestGenerateFuzzSeeds -octant.genseeds)", ft.name, s.name, err)
				continue
			}
			c := ft.decodeBytes(t, s.name, b)
			if c == nil || !s.holds(c) {
				t.Errorf("%s seed %s decodes to %+v, which does not have the seed's property: the generators or rapid changed what the bytes mean; regenerate: go test ./fuzz -run TestGenerateFuzzSeeds -octant.genseeds", ft.name, s.name, c)
			}
			// Go's fuzzer starts its workers from these bytes: there they must mean the same case
			// (but for long-context, whose length a worker never draws: inFuzzWorker).
			if s.name != "long-context" && c != nil {
				w := asFuzzWorker(t, func() any { return ft.decodeBytes(t, s.name+"/in-worker", b) })
				jc, errc := json.Marshal(c)
				jw, errw := json.Marshal(w)
				if errc != nil || errw != nil || !bytes.Equal(jc, jw) {
					t.Errorf("%s seed %s means another case in a fuzz worker (the generator draws differently there):\n outside: %s (%v)\n worker:  %s (%v)", ft.name, s.name, jc, errc, jw, errw)
				}
			}
		}
		files, _ := filepath.Glob(filepath.Join(dir, "*"))
		for _, f := range files {
			if name := filepath.Base(f); strings.HasPrefix(name, foundPrefix) {
				b, err := decodeSeedFile(f)
				if err != nil {
					t.Error(err)
				} else if ft.decodeBytes(t, name, b) == nil {
					t.Errorf("%s: %s no longer decodes to a case (the generators changed): delete it", ft.name, f)
				}
				continue
			}
			if !known[filepath.Base(f)] {
				t.Errorf("%s: %s is no named seed: a fuzzer's failing input belongs in corpus/regressions (the JSON reproducer the failing property wrote), a new boundary in fuzzTargets", ft.name, f)
			}
		}
	}
}

// TestAddFoundInputs (with -octant.found=DIR) copies the inputs a fuzzing run found interesting
// (DIR/FuzzX/<hash>, Go's fuzz cache) into testdata/fuzz/FuzzX/found-<hash> when they decode to a
// case (an input that runs out of choices is rejected by rapid and adds nothing).
func TestAddFoundInputs(t *testing.T) {
	if *addFound == "" {
		t.Skip("copies a fuzzing run's interesting inputs: run with -octant.found=DIR")
	}
	for _, ft := range fuzzTargets() {
		files, _ := filepath.Glob(filepath.Join(*addFound, ft.name, "*"))
		n := 0
		for _, f := range files {
			b, err := decodeSeedFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if ft.decodeBytes(t, filepath.Base(f), b) == nil {
				continue
			}
			raw, _ := os.ReadFile(f)
			if err := os.WriteFile(filepath.Join("testdata", "fuzz", ft.name, foundPrefix+filepath.Base(f)), raw, 0o644); err != nil {
				t.Fatal(err)
			}
			n++
		}
		if len(files) > 0 {
			t.Logf("%s: %d of %d inputs decode to a case: copied", ft.name, n, len(files))
		}
	}
}

// seedTB is a rapid.TB that records a failure instead of failing: the seed search "fails" on the
// first case with the property, and rapid shrinks it and writes its choices to a fail file.
type seedTB struct {
	name   string
	failed bool
	log    strings.Builder
}

func (s *seedTB) Helper()                           {}
func (s *seedTB) Name() string                      { return s.name }
func (s *seedTB) Logf(format string, args ...any)   { fmt.Fprintf(&s.log, format+"\n", args...) }
func (s *seedTB) Log(args ...any)                   { fmt.Fprintln(&s.log, args...) }
func (s *seedTB) Skipf(format string, args ...any)  {}
func (s *seedTB) Skip(args ...any)                  {}
func (s *seedTB) SkipNow()                          {}
func (s *seedTB) Errorf(format string, args ...any) { s.failed = true; s.Logf(format, args...) }
func (s *seedTB) Error(args ...any)                 { s.failed = true; s.Log(args...) }
func (s *seedTB) Fatalf(format string, args ...any) { s.failed = true; s.Logf(format, args...) }
func (s *seedTB) Fatal(args ...any)                 { s.failed = true; s.Log(args...) }
func (s *seedTB) FailNow()                          { s.failed = true }
func (s *seedTB) Fail()                             { s.failed = true }
func (s *seedTB) Failed() bool                      { return s.failed }

// readFailFile returns the choices of a rapid fail file.
func readFailFile(path string) ([]uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []uint64
	first := true
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if first { // "<rapid version>#<seed>"
			first = false
			continue
		}
		u, err := strconv.ParseUint(strings.TrimPrefix(line, "0x"), 16, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %q: %w", path, line, err)
		}
		out = append(out, u)
	}
	return out, nil
}

// TestGenerateFuzzSeeds (with -octant.genseeds) finds, for every seed, the smallest case with its
// property (rapid's search and shrinking) and writes its choices as testdata/fuzz/<target>/<seed>.
func TestGenerateFuzzSeeds(t *testing.T) {
	if !*genSeeds {
		t.Skip("rewrites the seed corpora: run with -octant.genseeds")
	}
	for _, name := range []string{"rapid.nofailfile", "rapid.checks"} {
		old := flag.Lookup(name).Value.String()
		defer flag.Set(name, old)
	}
	flag.Set("rapid.nofailfile", "false")
	flag.Set("rapid.checks", "20000") // long-context: about 1 draw in 3000
	tmp := t.TempDir()
	wd, _ := os.Getwd()
	for _, ft := range fuzzTargets() {
		dir := filepath.Join(wd, "testdata", "fuzz", ft.name)
		old, _ := filepath.Glob(filepath.Join(dir, "*"))
		for _, f := range old {
			if !strings.HasPrefix(filepath.Base(f), foundPrefix) {
				os.Remove(f)
			}
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, s := range ft.seeds {
			// rapid writes fail files under testdata/rapid of the working directory: a scratch one.
			if err := os.Chdir(tmp); err != nil {
				t.Fatal(err)
			}
			tb := &seedTB{name: "seed-" + ft.name + "-" + s.name}
			rapid.Check(tb, func(rt *rapid.T) {
				if s.holds(ft.draw(rt)) {
					rt.Fatalf("has the property")
				}
			})
			os.Chdir(wd)
			files, _ := filepath.Glob(filepath.Join(tmp, "testdata", "rapid", "*", tb.name+"-*.fail"))
			if !tb.failed || len(files) == 0 {
				t.Errorf("%s seed %s: no case with the property in 3000 draws", ft.name, s.name)
				continue
			}
			bits, err := readFailFile(files[len(files)-1])
			if err != nil {
				t.Fatal(err)
			}
			b := make([]byte, 8*len(bits))
			for i, u := range bits {
				binary.LittleEndian.PutUint64(b[8*i:], u)
			}
			body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b)
			if err := os.WriteFile(filepath.Join(dir, s.name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s/%s: %d choices", ft.name, s.name, len(bits))
		}
	}
}

// asFuzzWorker runs f as if in a worker of Go's fuzzer (-test.fuzzworker, inFuzzWorker), where the
// binary has that flag; otherwise it runs f as it is.
func asFuzzWorker(t *testing.T, f func() any) any {
	t.Helper()
	fl := flag.Lookup("test.fuzzworker")
	if fl == nil {
		return f()
	}
	old := fl.Value.String()
	defer flag.Set("test.fuzzworker", old)
	flag.Set("test.fuzzworker", "true")
	return f()
}
