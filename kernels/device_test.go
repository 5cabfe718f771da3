package kernels

import (
	"strings"
	"testing"
	"time"

	"github.com/octant-kv/octant/arch"
)

// TestDeviceBasics: the device opens, describes itself, lists at least the portable tier with its
// declared profiles, and buffers keep their canaries and contents.
func TestDeviceBasics(t *testing.T) {
	l := openTestLib(t)
	d, err := l.OpenDevice(0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	t.Logf("library: %s", l.BuildInfo())
	t.Logf("device: %+v", d.Info)
	if d.Info.Arch == "" || d.Info.LogicalWave != 32 || (d.Info.WaveSize != 32 && d.Info.WaveSize != 64) {
		t.Errorf("device info %+v: expected an arch name, logical wave 32 and wave size 32 or 64", d.Info)
	}
	tiers, err := d.Tiers()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, tr := range tiers {
		if tr.Tier == TierPortable {
			found = true
			if tr.DecodeProfile != "dot4-int8q" || !tr.Offers(arch.Decode) || !tr.Offers(arch.Prefill) || tr.Offers(arch.Store) {
				t.Errorf("portable tier %+v: expected decode and prefill, decode profile dot4-int8q", tr)
			}
		}
	}
	if !found {
		t.Errorf("tiers %+v: no portable tier", tiers)
	}
	b, err := d.Alloc(4099, 0x5A)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Free()
	src := make([]byte, 100)
	for i := range src {
		src[i] = byte(i * 7)
	}
	if err := b.Write(3000, src); err != nil {
		t.Fatal(err)
	}
	got, err := b.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range got {
		want := byte(0x5A)
		if i >= 3000 && i < 3100 {
			want = src[i-3000]
		}
		if v != want {
			t.Fatalf("byte %d = %#x, want %#x", i, v, want)
		}
	}
	if err := b.CheckCanaries("basics"); err != nil {
		t.Fatal(err)
	}
	// Out-of-range host accesses are refused before reaching the library.
	if err := b.Write(4090, src); err == nil || !strings.Contains(err.Error(), "4099-byte buffer") {
		t.Errorf("write past the end: %v", err)
	}
}

// TestDevicePool: with pooling on, a freed allocation is reused by the next Alloc of its size
// class, refilled and re-guarded (a stale byte from the earlier user never shows), the pool
// holds no more than its limit, and Close frees what it holds.
func TestDevicePool(t *testing.T) {
	l := openTestLib(t)
	d, err := l.OpenDevice(0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	d.EnablePool(1 << 20)
	a, err := d.Alloc(5000, 0x11)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Write(0, make([]byte, 5000)); err != nil {
		t.Fatal(err)
	}
	base := a.base
	a.Free()
	b, err := d.Alloc(6000, 0x22) // same 64 KiB class
	if err != nil {
		t.Fatal(err)
	}
	if b.base != base {
		t.Errorf("Alloc after Free in the same class: base %#x, expected the pooled %#x", b.base, base)
	}
	got, err := b.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range got {
		if v != 0x22 {
			t.Fatalf("reused buffer byte %d = %#x, expected the fill 0x22", i, v)
		}
	}
	if err := b.CheckCanaries("pooled"); err != nil {
		t.Fatal(err)
	}
	// A buffer whose class exceeds the pool's limit is freed, not kept.
	big, err := d.Alloc(2<<20, 0)
	if err != nil {
		t.Fatal(err)
	}
	big.Free()
	if d.pooled != 0 {
		t.Errorf("pool holds %d bytes after freeing a buffer larger than its 1 MiB limit", d.pooled)
	}
	b.Free()
	if d.pooled != 1<<16 {
		t.Errorf("pool holds %d bytes, expected one 64 KiB allocation", d.pooled)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if d.pooled != 0 {
		t.Errorf("pool holds %d bytes after Close", d.pooled)
	}
}

// TestCallTimes: the library's per-op call times, as the device reports them, grow by the calls
// made, under the ABI's names (the decode throughput run logs them to tell the library's share of
// its wall time).
func TestCallTimes(t *testing.T) {
	l := openTestLib(t)
	d, err := l.OpenDevice(0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	before := d.CallTimes()
	for range 3 {
		if err := d.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	after := d.CallTimes()
	if after["octave_sync"] <= before["octave_sync"] {
		t.Errorf("octave_sync: %v before 3 syncs, %v after: expected it to grow", before["octave_sync"], after["octave_sync"])
	}
	for op, x := range after {
		if x < before[op] {
			t.Errorf("%s: %v before, %v after: call times only grow", op, before[op], x)
		}
	}
}

// TestTimer: the device timer measures the time between its marks (here a host sleep the device
// sits idle through, which events count too), and a stop without a start is refused with a message
// that says so, on a fresh context and after a completed start/stop pair.
func TestTimer(t *testing.T) {
	l := openTestLib(t)
	d, err := l.OpenDevice(0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.TimerStop(); err == nil || !strings.Contains(err.Error(), "no octave_timer_start") {
		t.Errorf("stop before any start: %v, want an error saying no start", err)
	}
	const nap = 30 * time.Millisecond
	if err := d.TimerStart(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(nap)
	got, err := d.TimerStop()
	if err != nil {
		t.Fatal(err)
	}
	if got < nap-time.Millisecond || got > 10*time.Second {
		t.Errorf("timer across a %v host sleep: %v, want at least %v (events count idle time) and well under 10 s", nap, got, nap-time.Millisecond)
	}
	if _, err := d.TimerStop(); err == nil || !strings.Contains(err.Error(), "no octave_timer_start") {
		t.Errorf("a second stop: %v, want an error saying no start", err)
	}
}
