package bench

import (
	"slices"
	"strings"
	"testing"

	"github.com/octant-kv/octant/kernels"
	"github.com/octant-kv/octant/oracle"
)

func TestParseSpecs(t *testing.T) {
	specs, err := ParseSpecs(DefaultSpecs)
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
	if !slices.Equal(names, []string{"q1s100k", "q4s100k", "q2ks100k", "q2ks100k-pf", "big"}) {
		t.Errorf("default specs %v", names)
	}
	if s, err := ParseSpecs(" tiny ,big,"); err != nil || len(s) != 2 || s[0].Name != "tiny" || s[1].Name != "big" {
		t.Errorf("tiny,big: %v %v", s, err)
	}
	if _, err := ParseSpecs("q1s100k,q8s1m"); err == nil || !strings.Contains(err.Error(), `unknown spec "q8s1m"`) || !strings.Contains(err.Error(), "q2ks100k") {
		t.Errorf("unknown spec: %v", err)
	}
	if _, err := ParseSpecs(" , "); err == nil {
		t.Error("empty list accepted")
	}
}

// The prefill spec: one call, the packed prefix plus the chunk's own fp16 K and V read, the same
// causal scores as the chunk through decode.
func TestPrefillSpec(t *testing.T) {
	pf, dec := specNamed(t, "q2ks100k-pf"), specNamed(t, "q2ks100k")
	if !pf.Prefill || dec.Prefill {
		t.Fatalf("Prefill flags: %v %v", pf.Prefill, dec.Prefill)
	}
	if c := pf.Calls(128); len(c) != 1 || c[0] != (RowRange{0, 2048}) {
		t.Errorf("prefill calls %v, want one of rows [0, 2048)", c)
	}
	if got, want := pf.ReadBytes(248), int64(97952*248+2*2048*256*2); got != want {
		t.Errorf("prefill bytes read %d, want %d (packed prefix + fp16 chunk K/V)", got, want)
	}
	if pf.QKPairs() != dec.QKPairs() {
		t.Errorf("prefill scores %d, decode of the same chunk %d", pf.QKPairs(), dec.QKPairs())
	}
}

func TestParseSplitsAndSizes(t *testing.T) {
	for in, want := range map[string][]int{"auto": {0}, "64": {64}, "auto, 1,1024": {0, 1, 1024}} {
		if got, err := ParseSplits(in); err != nil || !slices.Equal(got, want) {
			t.Errorf("ParseSplits(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"0", "1025", "x", "", "-3", "auto,7.5"} {
		if _, err := ParseSplits(bad); err == nil {
			t.Errorf("ParseSplits(%q) accepted", bad)
		}
	}
	for in, want := range map[string]int64{"4GiB": 4 << 30, "256MiB": 256 << 20, "64 KiB": 64 << 10, "1GB": 1e9, "1000": 1000, "0": 0, "12B": 12} {
		if got, err := ParseByteSize(in); err != nil || got != want {
			t.Errorf("ParseByteSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "x", "-1", "1.5GiB", "99999999999GiB", "4TiB"} {
		if _, err := ParseByteSize(bad); err == nil {
			t.Errorf("ParseByteSize(%q) accepted", bad)
		}
	}
}

func specNamed(t *testing.T, name string) Spec {
	t.Helper()
	s, err := ParseSpecs(name)
	if err != nil {
		t.Fatal(err)
	}
	return s[0]
}

// TestSpecBytes pins the shapes, the byte counts and the call split of every spec.
func TestSpecBytes(t *testing.T) {
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
		s := specNamed(t, c.name)
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
	if got := specNamed(t, "big").ReadBytes(oracle.MustFormat(oracle.K3V3Compact, 256, 64).SlotBytes()); got != 8*4*131072*196 {
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
		if got := AutoSplits(c.rows, c.qg, c.g, c.hkv, c.kvMax, c.cus); got != c.want {
			t.Errorf("AutoSplits%v = %d, want %d", c, got, c.want)
		}
	}
	for _, c := range []struct {
		fmt                                oracle.FormatID
		rows, qg, g, hkv, kvMax, cus, want int
	}{
		{oracle.K3V4, 1, 1, 6, 1, 100000, 132, 131},     // q1s100k: ⌈100000 / 768⌉ splits of 48 tiles fit one wave
		{oracle.K3V4, 4, 4, 6, 1, 100000, 132, 131},     // q4s100k: one workgroup per split (a pass of 24), as q1s100k
		{oracle.K3V4, 1, 1, 6, 1, 100000, 130, 130},     // 131 would not fit 130 SMs: ⌊100000 / 768⌋
		{oracle.K3V4, 1, 1, 6, 1, 102000, 132, 132},     // ⌈102000 / 768⌉ = 133 > 132 SMs: ⌊⌋
		{oracle.K3V4, 8, 1, 6, 4, 131072, 132, 4},       // big: one wave of 128 workgroups (the V table kernel, one per SM)
		{oracle.K3V3, 8, 1, 6, 4, 131072, 132, 33},      // big in k3v3: ⌈8·132 / 32⌉ workgroups per split (AutoSplits: 66)
		{oracle.K3V4, 8, 4, 2, 4, 131072, 132, 33},      // 8 workgroups per split: two full waves (0.97) over one of 128 (0.9697)
		{oracle.K3V4, 8, 1, 6, 6, 131072, 132, 11},      // 48 workgroups per split: 528 in 4 full waves (1 − 0.09) over 96 in 1 (0.727)
		{oracle.K3V4, 128, 4, 6, 1, 100000, 132, 33},    // q2ks100k: 32 row chunks x 1 pass per call
		{oracle.K3V4, 2, 2, 4, 1, 100000, 132, 131},     // 8 queries: one pass
		{oracle.K3V4, 1, 4, 8, 1, 1 << 20, 132, 528},    // 32 queries, 2 passes: 1056 / 2
		{oracle.K3V4, 1, 4, 12, 1, 1 << 20, 132, 528},   // 48 queries, 2 passes of 24
		{oracle.K3V4, 1, 1, 1, 1, 10 << 20, 1000, 1000}, // one full wave, not 1024 in two
		{oracle.K3V3, 1, 1, 1, 1, 10 << 20, 1000, 1024}, // capped at 1024
		{oracle.K3V4, 1, 1, 6, 1, 2048, 1, 1},           // tiny on the emulator: one wave
		{oracle.K3V3, 1, 1, 6, 1, 2048, 1, 2},           // the same in k3v3
		{oracle.K3V4, 1, 1, 6, 1, 100000, 0, 131},       // unknown CU count: an H200's 132
	} {
		if got := AutoSplitsMMA(c.fmt, c.rows, c.qg, c.g, c.hkv, c.kvMax, c.cus); got != c.want {
			t.Errorf("AutoSplitsMMA%v = %d, want %d", c, got, c.want)
		}
	}
	o := Options{Fmt: oracle.MustFormat(oracle.K3V4, 256, 64), BlockSize: 16, MaxRows: 128}
	for _, c := range []struct {
		spec string
		tier kernels.Tier
		want int
	}{
		{"q4s100k", kernels.TierPortable, 260}, {"q4s100k", kernels.TierWMMA, 260}, {"q4s100k", kernels.TierMMA, 131},
		{"q1s100k", kernels.TierMMA, 131}, {"big", kernels.TierMMA, 4}, {"q2ks100k", kernels.TierMMA, 33},
	} {
		if got := TierAutoSplits(c.tier, specNamed(t, c.spec), o, 132); got != c.want {
			t.Errorf("TierAutoSplits(%d, %s) = %d, want %d", c.tier, c.spec, got, c.want)
		}
	}
	if AutoQueryGroup(specNamed(t, "q1s100k")) != 1 || AutoQueryGroup(specNamed(t, "q4s100k")) != 4 ||
		AutoQueryGroup(specNamed(t, "q2ks100k")) != 4 || AutoQueryGroup(specNamed(t, "tinymulti")) != 2 {
		t.Error("AutoQueryGroup")
	}
}
