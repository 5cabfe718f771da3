package bench

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/octant-kv/octant/internal/settings/settingstest"
	"github.com/octant-kv/octant/kernels"
	"github.com/octant-kv/octant/oracle"
)

// openDevice opens OCTANT_LIB's device 0, or skips.
func openDevice(t *testing.T) *kernels.Device {
	t.Helper()
	return openDeviceOf(t, settingstest.LibOrSkip(t))
}

// openDeviceOf opens device 0 of the library at path p, closing both when the test ends.
func openDeviceOf(t *testing.T, p string) *kernels.Device {
	t.Helper()
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

// TestSetupMatchesOracle checks that what the bench times is a correct decode: the output of
// each test spec's calls, read back, agrees with the oracle's exact attention on the same cache,
// block table, maps and queries (the contract bound), in every format.
func TestSetupMatchesOracle(t *testing.T) {
	d := openDevice(t)
	for _, id := range oracle.AllFormats {
		f, err := oracle.KernelFormat(id)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"tiny", "tinymulti", "tinychunk"} {
			if name == "tinychunk" && id != oracle.K3V4 {
				continue // slow on the emulator; one format is enough for the call split
			}
			s := specNamed(t, name)
			o := Options{Fmt: f, BlockSize: 16, MaxRows: 128, Distinct: 300, Seed: 3}
			c, err := Setup(d, s, 0, o, func(string, ...any) {})
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

// TestSetupOutOfMemory: a spec far larger than any device's memory fails with an environment error
// naming the spec, the buffer and its bytes, and the device still works afterwards.
func TestSetupOutOfMemory(t *testing.T) {
	if b, err := os.ReadFile("/proc/sys/vm/overcommit_memory"); err == nil && strings.TrimSpace(string(b)) == "1" {
		t.Skip("vm.overcommit_memory = 1: the emulator's host allocation of 266 GB would succeed")
	}
	d := openDevice(t)
	huge := Spec{Name: "huge", Reqs: 1, Tokens: 1 << 30, QPerReq: 1, KVHeads: 1, G: 6}
	o := Options{Fmt: oracle.MustFormat(oracle.K3V4, 256, 64), BlockSize: 16, MaxRows: 128, Distinct: 16, Seed: 1}
	_, err := Setup(d, huge, 4, o, func(string, ...any) {})
	var ee EnvError
	if !errors.As(err, &ee) || !strings.Contains(err.Error(), "spec huge") || !strings.Contains(err.Error(), "266287972352 bytes") {
		t.Fatalf("got %v", err)
	}
	t.Log(err)
	c, err := Setup(d, specNamed(t, "tiny"), 0, o, func(string, ...any) {})
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
