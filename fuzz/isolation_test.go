package fuzz

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/octant-kv/octant/arch"
	"github.com/octant-kv/octant/cases"
	"github.com/octant-kv/octant/harness"
	"github.com/octant-kv/octant/harness/harnesstest"
	"github.com/octant-kv/octant/internal/settings"
	"github.com/octant-kv/octant/kernels"
	"github.com/octant-kv/octant/oracle"
	"pgregory.net/rapid"
)

// TestIsolationDecode runs the per-row isolation property (PropIsolationDecode) on every decode
// tier of $OCTANT_LIB, or on the oracle alone (whose model reads each row's own tokens only) when
// it is not set, and says which. Under -short it draws FuzzDecode's small calls alone
// (PropIsolationDecodeSmall): a large call takes tens of seconds on the CPU emulator, and the
// full mix draws one (about 3% of its cases) in about half of the 20-case -short runs.
func TestIsolationDecode(t *testing.T) {
	if l, err := harnesstest.EnvLib(); errors.Is(err, harnesstest.ErrNoLib) {
		t.Logf("%s not set: the oracle alone", settings.LibEnv)
	} else if err == nil {
		t.Logf("tiers %v of %s", l.TierNames(), l.Path)
	}
	prop := run.PropIsolationDecode
	if testing.Short() {
		prop = run.PropIsolationDecodeSmall
		t.Log("-short: FuzzDecode's small calls alone")
	}
	rapid.Check(t, run.Counted(cases.PropNameIsoDecode, prop))
}

// FuzzIsolation is the isolation property as a fuzz target (skips without $OCTANT_LIB).
func FuzzIsolation(f *testing.F) {
	gpuFuzz(f, arch.Decode, cases.PropNameIsoDecode, func(skip bool) func(*rapid.T) { return run.isolationProp(cases.IsolationCases(), skip) })
}

// TestIsolationSmallCases: the -short form's cases are FuzzDecode's small calls (at most 4
// requests of at most 1024 tokens, 2 KV heads, cost up to GpuDecodeSmallCost), query_group raised
// as in the full mix, and still ask something often enough.
func TestIsolationSmallCases(t *testing.T) {
	const n = 200
	asks := 0
	for i := 0; i < n; i++ {
		m := cases.IsolationSmallCases().Example(i)
		s := m.Decode.Spec
		if c := cases.MergeCost(s); c > cases.GpuDecodeSmallCost || len(s.Batch.Requests) > 4 || s.Cache.NumKVHeads > 2 || s.KVMax() > 1024 {
			t.Fatalf("example %d: cost %d, %d requests, %d KV heads, longest klen %d: expected a small call (cost ≤ %d, ≤ 4 requests, ≤ 2 KV heads, ≤ 1024 tokens)",
				i, c, len(s.Batch.Requests), s.Cache.NumKVHeads, s.KVMax(), cases.GpuDecodeSmallCost)
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("example %d: %v", i, err)
		}
		c, err := m.Decode.Call()
		if err != nil {
			t.Fatal(err)
		}
		if _, iso, err := cases.Poison(c.(*harness.DecodeCall), m.Cuts, m.Seed); err != nil {
			t.Fatal(err)
		} else if iso.Siblings > 0 {
			asks++
		}
	}
	t.Logf("%d of %d small cases compare a row beside one that reads the poison", asks, n)
	if asks < n/5 {
		t.Errorf("only %d of %d small isolation cases ask something: expected at least %d", asks, n, n/5)
	}
}

// TestIsolationReproducer: an isolation case that fails is written as the other GPU properties'
// cases are (recordFailure: <dir>/decode/iso-decode-<hash>.json, target lib, its decode recipe
// with its digest, its cuts and seed as drawn; the message ends with the replay command), read
// back, and replayed: on the oracle alone without a library (Ran says so), and on every decode
// tier of $OCTANT_LIB when it is set, where a correct library passes it.
func TestIsolationReproducer(t *testing.T) {
	dir := t.TempDir()
	run := &Runner{Regressions: dir}
	l, err := harnesstest.EnvLib()
	if err != nil && !errors.Is(err, harnesstest.ErrNoLib) {
		t.Fatal(err)
	}
	var m *cases.IsolationCase
	for i := 0; m == nil; i++ {
		if i == 50 {
			t.Fatal("no isolation case in 50 examples compares a row beside one that reads the poison")
		}
		c := cases.IsolationCases().Example(i)
		call, err := c.Decode.Call()
		if err != nil {
			t.Fatal(err)
		}
		if _, iso, err := cases.Poison(call.(*harness.DecodeCall), c.Cuts, c.Seed); err == nil && iso.Siblings > 0 {
			m = c
		}
	}
	m.Record()
	if m.Decode.Digest == "" {
		t.Fatal("the recorded case has no digest")
	}
	fail := errors.New("synthetic failure")
	path, err := run.recordFailure(cases.PropNameIsoDecode, m, fail, l)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(path) != filepath.Join(dir, "decode") || !strings.HasPrefix(filepath.Base(path), cases.PropNameIsoDecode+"-") {
		t.Fatalf("reproducer written to %s, expected %s/decode/%s-<hash>.json", path, dir, cases.PropNameIsoDecode)
	}
	lib := ""
	if l != nil {
		lib = " --lib " + l.Path
	}
	msg := run.failureMessage(cases.PropNameIsoDecode, fail, path, nil, l)
	if lines := strings.Split(msg, "\n"); lines[len(lines)-1] != "replay: "+cases.ReplayCommand+lib+" "+cases.DisplayPath(path) {
		t.Fatalf("failure message does not end with the replay command: %q", msg)
	}
	r, err := cases.ReadReproducer(path)
	if err != nil {
		t.Fatal(err)
	}
	if r.Op != "decode" || r.Property != cases.PropNameIsoDecode || r.Target != cases.TargetLib || r.Verdict.Status != cases.StatusFail || r.Verdict.Message != fail.Error() {
		t.Fatalf("reproducer fields: op %q, property %q, target %q, verdict %+v", r.Op, r.Property, r.Target, r.Verdict)
	}
	var back cases.IsolationCase
	if err := cases.DecodeCase(r.Case, &back); err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(m)
	if got, _ := json.Marshal(&back); string(got) != string(want) {
		t.Fatalf("the case read back differs from the one written:\n%s\n%s", got, want)
	}
	x, err := cases.LoadReproducer(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := x.Ran(nil); got != "oracle only: no --lib" {
		t.Errorf("Ran(nil) = %q, expected %q", got, "oracle only: no --lib")
	}
	if err := x.Run(nil); err != nil {
		t.Fatalf("replayed on the oracle alone: %v", err)
	}
	if l == nil {
		t.Logf("%s not set: replayed on the oracle alone", settings.LibEnv)
		return
	}
	impls, err := harness.Impls(l, arch.Decode)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, im := range impls {
		names = append(names, im.Name)
	}
	if got, want := x.Ran(l), fmt.Sprintf("oracle; tiers %s on %s", strings.Join(names, ", "), l.Path); got != want {
		t.Errorf("Ran = %q, expected %q", got, want)
	}
	if err := cases.ReplayLib(path, l); err != nil {
		t.Fatalf("replayed on tiers %v of %s: %v", names, l.Path, err)
	}
	t.Logf("replayed on the oracle alone and on tiers %v of %s", names, l.Path)
}

// TestIsolationAsks: the generated isolation cases ask something (a compared row beside a row that
// reads the poison) often enough, the poison lands only in slots the compared rows do not read,
// and every slot a row past the cut reads is poisoned.
func TestIsolationAsks(t *testing.T) {
	const n = 200
	asks, poisoned := 0, 0
	for i := 0; i < n; i++ {
		m := cases.IsolationCases().Example(i)
		c, err := m.Decode.Call()
		if err != nil {
			t.Fatalf("example %d: %v", i, err)
		}
		d := c.(*harness.DecodeCall)
		b, iso, err := cases.Poison(d, m.Cuts, m.Seed)
		if err != nil {
			t.Fatal(err)
		}
		if iso.Slots > 0 {
			poisoned++
		}
		if iso.Siblings > 0 {
			asks++
		}
		rs := d.In.ReadSet()
		in := d.In
		for row, ok := range iso.Compared {
			if !ok && !iso.Readers[row] {
				t.Fatalf("example %d: row %d neither compared nor a reader", i, row)
			}
			if !ok || in.Klen(row) == 0 {
				continue
			}
			// A compared row's own slots are unchanged: the bytes the oracle's read set marks
			// for this row alone.
			one := *in
			one.QToReq, one.QToKlen = []int32{in.QToReq[row]}, []int32{in.QToKlen[row]}
			for j, read := range one.ReadSet().Cache {
				if read && b.In.Cache.Data[j] != in.Cache.Data[j] {
					t.Fatalf("example %d: row %d (klen %d) is compared but its cache byte %d was poisoned", i, row, in.Klen(row), j)
				}
			}
		}
		for j, read := range rs.Cache {
			if !read && b.In.Cache.Data[j] != in.Cache.Data[j] {
				t.Fatalf("example %d: byte %d, which no row reads, was poisoned", i, j)
			}
		}
	}
	t.Logf("%d of %d cases poison something, %d compare a row beside one that reads the poison", poisoned, n, asks)
	if asks < n/5 {
		t.Errorf("only %d of %d isolation cases compare a row beside a sibling that reads the poison: expected at least %d", asks, n, n/5)
	}
}

// maskByZero is a fixture of a library: its tier's decode runs, then every row that a sibling
// row's longer klen makes share non-finite slots past its own klen gets NaN in its first element,
// as a kernel that masks the tokens past a row's klen by multiplying by a weight of 0 computes
// (0 · NaN = NaN) when those slots hold a NaN or infinite scale. With finite scales everywhere the
// output is the real tier's: the decode judge alone cannot see the defect. With lowBit the element
// keeps its value but for its last bit flipped instead: a coupling the bound may not see, which
// only the bit comparison catches.
type maskByZero struct {
	harness.Kernels
	dev    *kernels.Device
	tier   kernels.Tier
	lowBit bool
}

func (m *maskByZero) Decode(a kernels.DecodeArgs) error {
	if err := m.Kernels.Decode(a); err != nil || a.Tier != m.tier {
		return err
	}
	nq, nr, mb := int(a.NumQ), int(a.NumReqs), int(a.MaxBlocks)
	read := func(p uintptr, n int) ([]byte, error) {
		b, err := m.dev.Alloc(n, 0)
		if err != nil {
			return nil, err
		}
		defer b.Free()
		if n > 0 {
			if err := m.dev.CopyD2D(b.Ptr, p, uint64(n)); err != nil {
				return nil, err
			}
		}
		return b.Bytes()
	}
	i32 := func(b []byte, i int) int { return int(int32(binary.LittleEndian.Uint32(b[4*i:]))) }
	reqs, err := read(a.QToReq, 4*nq)
	if err != nil {
		return err
	}
	klens, err := read(a.QToKlen, 4*nq)
	if err != nil {
		return err
	}
	table, err := read(a.BlockTable, 4*nr*mb)
	if err != nil {
		return err
	}
	cache, err := read(a.Cache, int(a.NumBlocks)*int(a.CacheStrideBlock))
	if err != nil {
		return err
	}
	f, err := oracle.KernelFormat(oracle.FormatID(a.Fmt))
	if err != nil {
		return err
	}
	bs := int(a.BlockSize)
	klen := func(i int) int {
		r, k := i32(reqs, i), i32(klens, i)
		if r < 0 || r >= nr || k <= 0 {
			return 0
		}
		return min(k, mb*bs)
	}
	long := make([]int, nr)
	for i := 0; i < nq; i++ {
		if k := klen(i); k > 0 {
			long[i32(reqs, i)] = max(long[i32(reqs, i)], k)
		}
	}
	nan := uint16(0x7e00)
	if a.Dtype == kernels.BF16 {
		nan = 0x7fc0
	}
	src, err := m.dev.AllocWith([]byte{byte(nan), byte(nan >> 8)})
	if err != nil {
		return err
	}
	defer src.Free()
	for i := 0; i < nq; i++ {
		k := klen(i)
		if k == 0 {
			continue
		}
		r := i32(reqs, i)
		poisoned := false
		for p := k; p < long[r] && !poisoned; p++ {
			id := i32(table, r*mb+p/bs)
			if id < 0 || id >= int(a.NumBlocks) {
				continue
			}
			for h := 0; h < int(a.NumKVHeads); h++ {
				o := id*int(a.CacheStrideBlock) + h*int(a.CacheStrideHead) + p%bs*int(a.CacheStrideTk) + f.OffScales()
				for g := 0; g < f.NumScales(); g++ {
					if x := binary.LittleEndian.Uint16(cache[o+2*g:]); x&0x7c00 == 0x7c00 {
						poisoned = true
					}
				}
			}
		}
		if !poisoned {
			continue
		}
		at := a.Out + uintptr(int64(i)*a.OutStrideToken*2)
		if m.lowBit {
			x, err := read(at, 2)
			if err != nil {
				return err
			}
			if err := src.Write(0, []byte{x[0] ^ 1, x[1]}); err != nil {
				return err
			}
		}
		if err := m.dev.CopyD2D(at, src.Ptr, 2); err != nil {
			return err
		}
	}
	return m.dev.Sync()
}

// TestIsolationCatchesMaskByZero: on a library whose portable tier masks tokens past a row's klen
// by a weight of 0 (maskByZero), the decode judge passes the clean call and the isolation property
// fails it, naming the tier: with NaN in the row by the poisoned call's judgement (a non-finite
// output where the row's own tokens give a finite model), with the last bit flipped by the bit
// comparison (the first such case found). The real library passes the same case. The case's
// reproducer, replayed (ReplayLib), fails on the fixture the same way and passes on the real
// library and on the oracle alone.
func TestIsolationCatchesMaskByZero(t *testing.T) {
	for _, lowBit := range []bool{false, true} {
		t.Run(map[bool]string{false: "nan", true: "low-bit"}[lowBit], func(t *testing.T) { testMaskByZero(t, lowBit) })
	}
}

func testMaskByZero(t *testing.T, lowBit bool) {
	l := harnesstest.LibOrSkip(t)
	impls, _ := harness.Impls(l, arch.Decode)
	if len(impls) == 0 || impls[0].Name != harness.PortableImpl {
		t.Fatalf("decode tiers %v: expected the portable tier first", impls)
	}
	bad := *l
	bad.Ops = &maskByZero{Kernels: l.Dev, dev: l.Dev, tier: impls[0].Tier.Tier, lowBit: lowBit}
	// The message of a failure the bit comparison reports (CheckIsolation).
	const byBits = "with the clean cache and"
	for i := 0; i < 100; i++ {
		m := cases.IsolationCases().Example(i)
		c, err := m.Decode.Call()
		if err != nil {
			t.Fatal(err)
		}
		d := c.(*harness.DecodeCall)
		if _, iso, _ := cases.Poison(d, m.Cuts, m.Seed); iso.Siblings == 0 {
			continue
		}
		if err := harness.FirstFailure(harness.CheckAll(&bad, d)); err != nil {
			t.Fatalf("example %d: the clean call fails on the fixture: %v", i, err)
		}
		_, err = cases.CheckIsolationCase(&bad, m)
		if err == nil || lowBit && !strings.Contains(err.Error(), byBits) {
			continue // no sibling's tokens past the cut were non-finite, or the bound saw the flipped bit
		}
		if !strings.HasPrefix(err.Error(), "portable: ") && !strings.Contains(err.Error(), "fails: portable: ") {
			t.Fatalf("example %d: the isolation property fails, but not on the fixture's tier: %v", i, err)
		}
		t.Logf("example %d: %v", i, err)
		if _, err := cases.CheckIsolationCase(l, m); err != nil {
			t.Fatalf("example %d: the real library fails too: %v", i, err)
		}
		// The same failure through its reproducer, written as PropIsolationDecode writes it: read
		// back and replayed, it fails again on the fixture (on its tier, by the same judge) and
		// passes on the real library and on the oracle alone.
		m.Record()
		path, werr := (&Runner{Regressions: t.TempDir()}).recordFailure(cases.PropNameIsoDecode, m, err, &bad)
		if werr != nil {
			t.Fatal(werr)
		}
		rerr := cases.ReplayLib(path, &bad)
		if rerr == nil {
			t.Fatalf("example %d: its reproducer replays on the fixture without failing", i)
		}
		msg := strings.TrimPrefix(rerr.Error(), path+": "+cases.PropNameIsoDecode+": ")
		if msg == rerr.Error() || !strings.HasPrefix(msg, "portable: ") && !strings.Contains(msg, "fails: portable: ") || lowBit && !strings.Contains(msg, byBits) {
			t.Fatalf("example %d: its reproducer's replay on the fixture gave %v\nexpected the path, the property and the fixture's tier, as the property's own check:\n%v", i, rerr, err)
		}
		var re *cases.ReproducerError
		if errors.As(rerr, &re) {
			t.Fatalf("example %d: the replay's failure is a file error: %v", i, rerr)
		}
		if err := cases.ReplayLib(path, l); err != nil {
			t.Fatalf("example %d: its reproducer fails on the real library: %v", i, err)
		}
		if err := cases.Replay(path); err != nil {
			t.Fatalf("example %d: its reproducer fails on the oracle alone: %v", i, err)
		}
		return
	}
	t.Fatalf("the isolation property did not catch the fixture in 100 examples")
}
