package kernels

import "testing"

// genBackend is the in-memory backend with a generation a test advances, as a worker's restart
// does.
type genBackend struct {
	*memBackend
	gen uint64
}

func (g *genBackend) Generation() uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.gen
}

func (g *genBackend) next() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.gen++
}

// TestPoolGeneration: a new generation of a Generational backend empties the pool (its
// allocations are dropped, not handed out again), and a buffer of an ended generation freed
// afterwards goes to the backend, never into the pool.
func TestPoolGeneration(t *testing.T) {
	be := &genBackend{memBackend: newMemBackend(8 << 20), gen: 1}
	d, err := NewDevice(be)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	d.EnablePool(1 << 20)
	alloc := func(what string, n int, fill byte) *Buffer {
		t.Helper()
		b, err := d.Alloc(n, fill)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return b
	}
	a := alloc("a", 5000, 0x11)
	stale := alloc("a buffer freed only after its generation ends", 5000, 0x11)
	pooled := a.base
	a.Free()
	be.next()
	frees := be.Calls("octave_free")
	if err := stale.Free(); err != nil {
		t.Fatal(err)
	}
	if be.Calls("octave_free") != frees+1 {
		t.Errorf("Free of a buffer of an ended generation: the backend saw %d frees, expected 1 (not pooled)", be.Calls("octave_free")-frees)
	}
	b := alloc("the first Alloc of the new generation", 6000, 0x22) // the same 64 KiB class
	if b.base == pooled {
		t.Errorf("Alloc after a new generation took the pooled allocation %#x of the ended one", pooled)
	}
	if b.tag.gen != 2 {
		t.Errorf("the allocation's tag %+v, expected generation 2", b.tag)
	}
	base := b.base
	b.Free()
	if c := alloc("the second Alloc of the new generation", 6000, 0x33); c.base != base {
		t.Errorf("Alloc in the same generation: %#x, expected the pooled %#x", c.base, base)
	}
}
