package worker

import "testing"

// TestAllocator: first fit in 256-byte units from the usable range only, a freed span reused
// first and joined with its free neighbours, exhaustion refused, and contains true exactly for
// ranges inside one outstanding allocation.
func TestAllocator(t *testing.T) {
	const base, size = 1 << 16, 4096
	a := newAllocator(base, size)
	take := func(n uint64) uint64 {
		t.Helper()
		off, ok := a.alloc(n)
		if !ok {
			t.Fatalf("alloc(%d) refused with %v free", n, a.free)
		}
		return off
	}
	x, y, z := take(1), take(300), take(256)
	if x != base || y != base+256 || z != base+768 {
		t.Errorf("offsets %#x %#x %#x, expected %#x %#x %#x (first fit, 256-byte units)", x, y, z, base, base+256, base+768)
	}
	for _, c := range []struct {
		off, n uint64
		want   bool
	}{{y, 512, true}, {y + 511, 1, true}, {y + 1, 512, false}, {base - 1, 1, false}, {z + 256, 1, false}, {x, 257, false}} {
		if got := a.contains(c.off, c.n); got != c.want {
			t.Errorf("contains(%#x, %d) = %v, expected %v", c.off, c.n, got, c.want)
		}
	}
	if !a.release(y) || a.release(y) || a.release(y+256) {
		t.Errorf("release: the allocation once, then neither it again nor an address inside it")
	}
	if got := take(200); got != y {
		t.Errorf("alloc after a free: %#x, expected the freed span's start %#x", got, y)
	}
	if _, ok := a.alloc(size); ok {
		t.Errorf("alloc(%d) with part of the arena in use: expected a refusal", size)
	}
	for _, off := range []uint64{y, x, z} {
		a.release(off)
	}
	if len(a.free) != 1 || a.free[0] != (span{base, size}) || len(a.used) != 0 || a.largest() != size {
		t.Errorf("everything freed: free %v used %v, expected one span of the whole arena", a.free, a.used)
	}
	if got := take(size); got != base {
		t.Errorf("the whole arena: %#x, expected %#x", got, base)
	}
}
