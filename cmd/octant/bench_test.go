package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/octant-kv/octant/kernels"
	"github.com/octant-kv/octant/oracle"
)

func TestParseBenchSpecs(t *testing.T) {
	specs, err := parseBenchSpecs(defaultBenchSpecs)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range specs {
		names = append(names, s.Name)
		if s.Hidden {
			t.Errorf("default spec %s is hidden", s.Name)
		}
	}
	if !slices.Equal(names, []string{"q1s100k", "q4s100k", "q2ks100k", "big"}) {
		t.Errorf("default specs %v", names)
	}
	if s, err := parseBenchSpecs(" tiny ,big,"); err != nil || len(s) != 2 || s[0].Name != "tiny" || s[1].Name != "big" {
		t.Errorf("tiny,big: %v %v", s, err)
	}
	if _, err := parseBenchSpecs("q1s100k,q8s1m"); err == nil || !strings.Contains(err.Error(), `unknown spec "q8s1m"`) || !strings.Contains(err.Error(), "q2ks100k") {
		t.Errorf("unknown spec: %v", err)
	}
	if _, err := parseBenchSpecs(" , "); err == nil {
		t.Error("empty list accepted")
	}
}

func TestParseSplitsAndSizes(t *testing.T) {
	for in, want := range map[string][]int{"auto": {0}, "64": {64}, "auto, 1,1024": {0, 1, 1024}} {
		if got, err := parseSplits(in); err != nil || !slices.Equal(got, want) {
			t.Errorf("parseSplits(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"0", "1025", "x", "", "-3", "auto,7.5"} {
		if _, err := parseSplits(bad); err == nil {
			t.Errorf("parseSplits(%q) accepted", bad)
		}
	}
	for in, want := range map[string]int64{"4GiB": 4 << 30, "256MiB": 256 << 20, "64 KiB": 64 << 10, "1GB": 1e9, "1000": 1000, "0": 0, "12B": 12} {
		if got, err := parseByteSize(in); err != nil || got != want {
			t.Errorf("parseByteSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "x", "-1", "1.5GiB", "99999999999GiB", "4TiB"} {
		if _, err := parseByteSize(bad); err == nil {
			t.Errorf("parseByteSize(%q) accepted", bad)
		}
	}
}

func benchSpecNamed(t *testing.T, name string) benchSpec {
	t.Helper()
	s, err := parseBenchSpecs(name)
	if err != nil {
		t.Fatal(err)
	}
	return s[0]
}

// TestBenchBytes pins the shapes, the byte counts and the call split of every spec.
func TestBenchBytes(t *testing.T) {
	k3v4 := oracle.MustFormat(oracle.K3V4, 256, 64).SlotBytes()
	if k3v4 != 248 {
		t.Fatalf("k3v4 slot %d", k3v4)
	}
	cases := []struct {
		name                  string
		numQ, hq              int
		read, fp16, cache, qk int64
		calls                 int
		firstKlen, lastKlen   int
	}{
		{"q1s100k", 1, 6, 100000 * 248, 2 * 100000 * 256 * 2, 6250 * 16 * 248, 6 * 100000, 1, 100000, 100000},
		{"q4s100k", 4, 6, 100000 * 248, 2 * 100000 * 256 * 2, 6250 * 16 * 248, 6 * (99997 + 99998 + 99999 + 100000), 1, 99997, 100000},
		{"q2ks100k", 2048, 6, 100000 * 248, 2 * 100000 * 256 * 2, 6250 * 16 * 248, 6 * (2048*97953 + 2047*2048/2), 16, 97953, 100000},
		{"big", 8, 24, 8 * 4 * 131072 * 248, 4 << 30, 8 * 8192 * 4 * 16 * 248, 8 * 24 * 131072, 1, 131072, 131072},
		{"tiny", 1, 6, 2048 * 248, 2048 * 1024, 128 * 16 * 248, 6 * 2048, 1, 2048, 2048},
		{"tinychunk", 136, 6, 520 * 248, 520 * 1024, 33 * 16 * 248, 6 * (136*385 + 135*136/2), 2, 385, 520},
		{"tinymulti", 6, 8, 3 * 2 * 1000 * 248, 3 * 2 * 2 * 1000 * 512, 3 * 63 * 2 * 16 * 248, 3 * 8 * (999 + 1000), 1, 999, 1000},
	}
	for _, c := range cases {
		s := benchSpecNamed(t, c.name)
		if s.NumQ() != c.numQ || s.Hq() != c.hq || s.G*s.KVHeads != s.Hq() {
			t.Errorf("%s: num_q %d, Hq %d", c.name, s.NumQ(), s.Hq())
		}
		if got := s.ReadBytes(k3v4); got != c.read {
			t.Errorf("%s: read bytes %d, want %d", c.name, got, c.read)
		}
		if got := s.FP16Bytes(); got != c.fp16 {
			t.Errorf("%s: fp16 bytes %d, want %d", c.name, got, c.fp16)
		}
		if got := s.CacheBytes(k3v4, 16); got != c.cache {
			t.Errorf("%s: cache bytes %d, want %d", c.name, got, c.cache)
		}
		if got := s.QKPairs(); got != c.qk {
			t.Errorf("%s: qk pairs %d, want %d", c.name, got, c.qk)
		}
		calls := s.Calls(128)
		if len(calls) != c.calls {
			t.Errorf("%s: %d calls, want %d", c.name, len(calls), c.calls)
		}
		next := 0
		for _, r := range calls {
			if r.Lo != next || r.Hi <= r.Lo || r.Hi-r.Lo > 128 && c.calls > 1 {
				t.Errorf("%s: call rows %v", c.name, calls)
				break
			}
			if c.calls > 1 && (r.Lo/s.QPerReq) != ((r.Hi-1)/s.QPerReq) {
				t.Errorf("%s: call %v spans two requests", c.name, r)
			}
			next = r.Hi
		}
		if next != s.NumQ() {
			t.Errorf("%s: calls cover %d rows of %d", c.name, next, s.NumQ())
		}
		if s.Klen(0) != c.firstKlen || s.Klen(s.NumQ()-1) != c.lastKlen {
			t.Errorf("%s: klens %d..%d, want %d..%d", c.name, s.Klen(0), s.Klen(s.NumQ()-1), c.firstKlen, c.lastKlen)
		}
		if len(s.Calls(0)) != 1 {
			t.Errorf("%s: --max-rows 0 gives %d calls", c.name, len(s.Calls(0)))
		}
	}
	// The compact format's slot is 196 bytes.
	if got := benchSpecNamed(t, "big").ReadBytes(oracle.MustFormat(oracle.K3V3Compact, 256, 64).SlotBytes()); got != 8*4*131072*196 {
		t.Errorf("big compact: %d", got)
	}
}

func TestAutoSplits(t *testing.T) {
	for _, c := range []struct{ rows, qg, g, hkv, kvMax, cus, want int }{
		{1, 1, 6, 1, 100000, 132, 130},     // q1s100k: 2112 wanted, capped at 768 tokens per split
		{4, 4, 6, 1, 100000, 132, 260},     // q4s100k: one row chunk of 24 queries, 384 tokens per split
		{128, 4, 6, 1, 100000, 132, 66},    // q2ks100k: 32 row chunks per call
		{8, 1, 6, 4, 131072, 132, 66},      // big: 32 workgroups per split, 2112 in all (4 x 528)
		{1, 1, 6, 1, 2048, 1, 2},           // tiny on the emulator (1 "CU")
		{1, 1, 6, 1, 100, 132, 1},          // shorter than one split's minimum
		{1, 1, 1, 1, 10 << 20, 1000, 1024}, // capped at 1024
		{1, 1, 6, 1, 100000, 0, 130},       // unknown CU count: an H200's 132
		{2, 2, 4, 1, 100000, 132, 130},     // 8 queries per workgroup: still 768 tokens
		{2, 2, 6, 1, 100000, 132, 260},     // 12: 384
	} {
		if got := autoSplits(c.rows, c.qg, c.g, c.hkv, c.kvMax, c.cus); got != c.want {
			t.Errorf("autoSplits%v = %d, want %d", c, got, c.want)
		}
	}
	if autoQueryGroup(benchSpecNamed(t, "q1s100k")) != 1 || autoQueryGroup(benchSpecNamed(t, "q4s100k")) != 4 ||
		autoQueryGroup(benchSpecNamed(t, "q2ks100k")) != 4 || autoQueryGroup(benchSpecNamed(t, "tinymulti")) != 2 {
		t.Error("autoQueryGroup")
	}
}

// TestBenchUsageErrors checks the errors that need no library: exit status 2 and a clear message.
func TestBenchUsageErrors(t *testing.T) {
	t.Setenv("OCTANT_LIB", "")
	notLib := filepath.Join(t.TempDir(), "liboctave_fake.so")
	os.WriteFile(notLib, []byte("not an ELF file"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bench"}, "--lib is required"},
		{[]string{"bench", "--lib", "/nonexistent/liboctave_cuda.so"}, "/nonexistent/liboctave_cuda.so"},
		{[]string{"bench", "--lib", notLib}, "loading"},
		{[]string{"bench", "--lib", notLib, "--specs", "q1s1m"}, `unknown spec "q1s1m"`},
		{[]string{"bench", "--lib", notLib, "--splits", "2000"}, "--splits"},
		{[]string{"bench", "--lib", notLib, "--fmt", "octave_k2v2"}, "--fmt"},
		{[]string{"bench", "--lib", notLib, "--reps", "0"}, "--reps"},
		{[]string{"bench", "--lib", notLib, "--query-group", "5"}, "--query-group"},
		{[]string{"bench", "--lib", notLib, "--copy-bytes", "lots"}, "--copy-bytes"},
		{[]string{"bench", "--lib", notLib, "extra"}, "unexpected argument"},
		{[]string{"bench", "--no-such-flag"}, "flag provided but not defined"},
	} {
		code, out, errs := runCLI(c.args...)
		if code != 2 || !strings.Contains(errs, c.want) || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q", c.args, code, out, errs, c.want)
		}
	}
	code, _, errs := runCLI("bench", "-h")
	if code != 0 || !strings.Contains(errs, "16 decode calls of 128") || !strings.Contains(errs, "num_splits auto") {
		t.Errorf("-h: exit %d\n%s", code, errs)
	}
	if _, _, errs := runCLI("help"); !strings.Contains(errs, "bench") {
		t.Errorf("bench missing from the command list:\n%s", errs)
	}
}

// TestBenchNoDevice runs against the HIP library of this tree when it was built and loads (it
// needs libamdhip64) on a machine without an AMD GPU: exit 2 and "no device".
func TestBenchNoDevice(t *testing.T) {
	p := "../../build/liboctave_hip.so"
	l, err := kernels.Open(p)
	if err != nil {
		t.Skipf("no loadable %s: %v", p, err)
	}
	d, err := l.OpenDevice(0)
	if err == nil {
		d.Close()
		l.Close()
		t.Skip("this machine has a HIP device")
	}
	l.Close()
	code, _, errs := runCLI("bench", "--lib", p, "--specs", "tiny")
	if code != 2 || !strings.Contains(errs, "no device") {
		t.Errorf("exit %d\n%s", code, errs)
	}
}

// openBenchDevice opens OCTANT_LIB's device 0, or skips.
func openBenchDevice(t *testing.T) *kernels.Device {
	t.Helper()
	p := os.Getenv("OCTANT_LIB")
	if p == "" {
		t.Skip("OCTANT_LIB not set: set it to a kernel library (make emu, make cuda, make hip) to run this test")
	}
	l, err := kernels.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	d, err := l.OpenDevice(0)
	if err != nil {
		l.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close(); l.Close() })
	return d
}

// TestBenchCLI runs the command on the library of OCTANT_LIB with the small test specs.
func TestBenchCLI(t *testing.T) {
	lib := os.Getenv("OCTANT_LIB")
	if lib == "" {
		t.Skip("OCTANT_LIB not set: set it to a kernel library (make emu, make cuda, make hip) to run this test")
	}
	jsonPath := filepath.Join(t.TempDir(), "bench.json")
	code, out, errs := runCLI("bench", "--lib", lib, "--specs", "tiny,tinymulti", "--splits", "auto,3", "--reps", "3", "--warmup", "1",
		"--copy-bytes", "16MiB", "--copy-reps", "2", "--flush-bytes", "4MiB", "--json", jsonPath)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	t.Log("\n" + out)
	for _, want := range []string{"median ms", "GB/s", "% HBM", "HBM (octave_copy_d2d of 16.0 MiB"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errs, "bench: tiny: num_splits") {
		t.Errorf("no progress on stderr:\n%s", errs)
	}
	raw, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var rep benchReport
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	lb, _ := os.ReadFile(lib)
	sum := sha256.Sum256(lb)
	if rep.Library["sha256"] != hex.EncodeToString(sum[:]) || rep.Library["path"] != lib || rep.Date == "" || rep.Device["name"] == "" {
		t.Errorf("report header: %+v %+v %q", rep.Library, rep.Device, rep.Date)
	}
	if rep.HBM == nil || rep.HBMGBps <= 0 || rep.HBM.MovedBytes != 2*(16<<20) {
		t.Errorf("HBM: %+v", rep.HBM)
	}
	if len(rep.Results) != 4 {
		t.Fatalf("%d results, want 4 (2 specs x 2 split settings)", len(rep.Results))
	}
	for _, r := range rep.Results {
		if r.Error != "" || r.MedianMS <= 0 || r.MinMS <= 0 || r.MinMS > r.MedianMS || r.StreamMS <= 0 || r.GBps <= 0 || r.Fraction <= 0 ||
			len(r.Timing.SamplesM) != 3 || r.Splits < 1 || r.Bytes != int64(r.Reqs*r.KVHeads*r.Tokens*248) {
			t.Errorf("result %+v", r)
		}
	}
	if rep.Results[1].Splits != 3 || rep.Results[1].SplitsAuto || !rep.Results[0].SplitsAuto {
		t.Errorf("split settings: %+v", rep.Results[:2])
	}
}

// TestBenchSetupMatchesOracle checks that what the bench times is a correct decode: the output of
// each test spec's calls, read back, agrees with the oracle's exact attention on the same cache,
// block table, maps and queries (the contract bound), in every format.
func TestBenchSetupMatchesOracle(t *testing.T) {
	d := openBenchDevice(t)
	for _, id := range oracle.AllFormats {
		f, err := oracle.KernelFormat(id)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"tiny", "tinymulti", "tinychunk"} {
			if name == "tinychunk" && id != oracle.K3V4 {
				continue // slow on the emulator; one format is enough for the call split
			}
			s := benchSpecNamed(t, name)
			o := benchOptions{Fmt: f, BlockSize: 16, MaxRows: 128, Distinct: 300, Seed: 3}
			c, err := setupBench(d, s, 0, o, func(string, ...any) {})
			if err != nil {
				t.Fatalf("%s %s: %v", f.Name(), name, err)
			}
			if err := c.Enqueue(d); err != nil {
				t.Fatal(err)
			}
			if err := d.Sync(); err != nil {
				t.Fatal(err)
			}
			if err := c.CheckOutput(); err != nil {
				t.Error(err)
			}
			out, err := c.ReadOut()
			if err != nil {
				t.Fatal(err)
			}
			cacheBytes, err := c.Cache.Bytes()
			if err != nil {
				t.Fatal(err)
			}
			c.Free()
			// The cache holds the 300 distinct slots tiled: slot i equals slot i mod 300.
			slot := f.SlotBytes()
			for i := 300; i < len(cacheBytes)/slot; i += 97 {
				if string(cacheBytes[i*slot:(i+1)*slot]) != string(cacheBytes[(i%300)*slot:(i%300+1)*slot]) {
					t.Fatalf("%s: slot %d is not a copy of slot %d", name, i, i%300)
				}
			}
			cache, err := oracle.NewCacheLBHNC(f, cacheBytes, c.NumBlocks, s.KVHeads, 16)
			if err != nil {
				t.Fatal(err)
			}
			q := make([]float32, len(c.HostQuery))
			for i, h := range c.HostQuery {
				q[i] = oracle.F16ToF32(h)
			}
			ref := make([]float32, len(out))
			for i, h := range out {
				ref[i] = oracle.F16ToF32(h)
			}
			in := &oracle.DecodeInput{Cache: cache, Query: q, NumQHeads: s.Hq(), BlockTable: c.HostBlockTable, NumReqs: s.Reqs,
				MaxBlocks: c.MaxBlocks, QToReq: c.HostQToReq, QToKlen: c.HostQToKlen, SMScale: 1.0 / 16,
				KSigns: oracle.DefaultSigns(256), VSigns: oracle.DefaultSigns(256)}
			chk, _, err := oracle.CheckDecode(in, ref)
			if err != nil {
				t.Fatal(err)
			}
			if !(chk.RelL2 < oracle.ContractRelL2) {
				t.Errorf("%s %s: relative L2 %.3g against exact attention, want < %g", f.Name(), name, chk.RelL2, oracle.ContractRelL2)
			}
			// And against the portable tier's own numeric profile, within its derived bound.
			pr, err := oracle.DecodeProfile(oracle.ProfileDot4Int8Q, in, oracle.ProfileOptions{Out: oracle.DtypeF16})
			if err != nil {
				t.Fatal(err)
			}
			got := make([]float64, len(ref))
			for i, x := range ref {
				got[i] = float64(x)
			}
			worst, ratio := pr.Check(got)
			if !(ratio <= 1) {
				t.Errorf("%s %s: element %d is %.3g times its dot4-int8q bound from the profile model", f.Name(), name, worst, ratio)
			}
			t.Logf("%s %s: splits %d, query_group %d, %d call(s): rel L2 %.2e against exact, %.2f of the profile bound",
				f.Name(), name, c.Splits, c.QueryGroup, len(c.Args), chk.RelL2, ratio)
		}
	}
}

// TestBenchOutOfMemory: a spec far larger than any device's memory fails with an environment error
// naming the spec, the buffer and its bytes, and the device still works afterwards.
func TestBenchOutOfMemory(t *testing.T) {
	if b, err := os.ReadFile("/proc/sys/vm/overcommit_memory"); err == nil && strings.TrimSpace(string(b)) == "1" {
		t.Skip("vm.overcommit_memory = 1: the emulator's host allocation of 266 GB would succeed")
	}
	d := openBenchDevice(t)
	huge := benchSpec{Name: "huge", Reqs: 1, Tokens: 1 << 30, QPerReq: 1, KVHeads: 1, G: 6}
	o := benchOptions{Fmt: oracle.MustFormat(oracle.K3V4, 256, 64), BlockSize: 16, MaxRows: 128, Distinct: 16, Seed: 1}
	_, err := setupBench(d, huge, 4, o, func(string, ...any) {})
	var ee envError
	if !errors.As(err, &ee) || !strings.Contains(err.Error(), "spec huge") || !strings.Contains(err.Error(), "266287972352 bytes") {
		t.Fatalf("got %v", err)
	}
	t.Log(err)
	c, err := setupBench(d, benchSpecNamed(t, "tiny"), 0, o, func(string, ...any) {})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Free()
	if err := c.Enqueue(d); err != nil {
		t.Fatal(err)
	}
	if err := d.Sync(); err != nil {
		t.Fatalf("after an out-of-memory allocation: %v", err)
	}
}
