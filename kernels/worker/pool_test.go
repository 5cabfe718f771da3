package worker

import (
	"syscall"
	"testing"

	"github.com/octant-kv/octant/kernels"
)

// TestPoolRestart: the Device's pool hands out no allocation of a worker that died: after the
// restart the same size class gets an address of the new generation, whose bytes are the
// buffer's, and a buffer of the dead worker freed afterwards is not pooled.
func TestPoolRestart(t *testing.T) {
	d, b := openDevice(t)
	d.EnablePool(1 << 20)
	a, err := d.Alloc(5000, 0x11)
	if err != nil {
		t.Fatal(err)
	}
	stale, err := d.Alloc(5000, 0x11)
	if err != nil {
		t.Fatal(err)
	}
	a.Free() // pooled
	if err := syscall.Kill(b.pid(t), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	wantError(t, "Sync after SIGKILL", d.Sync(), kernels.ErrRuntime, "worker died (SIGKILL)")
	must(t, d.Sync())
	if err := stale.Free(); err != nil {
		t.Errorf("Free of a buffer of the dead worker: %v, expected nil", err)
	}
	for i := range 2 { // the pool's one allocation of the class, were it kept, and the stale one
		c, err := d.Alloc(6000, 0x22)
		if err != nil {
			t.Fatal(err)
		}
		if g := uint64(c.Ptr) >> genShift; g != 2 {
			t.Fatalf("Alloc %d after the restart: %#x, an address of generation %d; expected generation 2", i, c.Ptr, g)
		}
		if body, err := c.Bytes(); err != nil || len(body) != 6000 || body[0] != 0x22 || body[5999] != 0x22 {
			t.Errorf("Alloc %d after the restart does not hold its fill (%v)", i, err)
		}
		must(t, c.CheckCanaries("after the restart"))
		defer c.Free()
	}
}

// TestPoolFull: an Alloc that the arena has no room for while the pool holds most of it
// succeeds: the pool is released and the Alloc tried again.
func TestPoolFull(t *testing.T) {
	d, _ := openDevice(t) // a 4 MiB arena
	d.EnablePool(1 << 30)
	var held []*kernels.Buffer
	for range 3 {
		x, err := d.Alloc(700<<10, 0) // class 1 MiB
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, x)
	}
	for _, x := range held {
		x.Free() // 3 MiB pooled
	}
	big, err := d.Alloc(1500<<10, 0x5A) // class 2 MiB: 1 MiB is free in the arena
	if err != nil {
		t.Fatalf("Alloc of a 2 MiB class with 3 MiB pooled in a 4 MiB arena: %v; expected the pool released and the Alloc done", err)
	}
	must(t, big.CheckCanaries("big"), big.Free())
}
