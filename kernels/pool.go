package kernels

import "math/bits"

// Generational is a backend whose allocations can all end at once: a worker process started
// again after a death or a hang (kernels/worker) has new memory, and every allocation of the one
// before is void. Generation changes when that happens. The Device's pool keeps no allocation of
// an ended generation: it would hand out memory that no longer exists.
type Generational interface {
	Generation() uint64
}

// poolTag is what the pool knows of an allocation of rawAlloc: its size class (0: an exact
// allocation, never pooled) and the backend's generation when it was made.
type poolTag struct{ class, gen uint64 }

// EnablePool makes Free keep allocations, up to maxBytes in all, for later Allocs of the same
// size class (a power of two of at least 64 KiB) instead of returning them to the runtime. A
// fuzz target allocates and frees a handful of buffers per case, and the runtime's allocator
// (cudaMalloc, and cudaFree's implicit synchronisation) then costs more than the case. Off by
// default: with it on, a kernel's access past a buffer's rear canary can land in the
// allocation's slack, where compute-sanitizer memcheck would otherwise report it, so the kernel
// tests and sanitizer runs keep exact allocations. The canaries are checked either way. An
// allocation the backend refuses while the pool holds memory is tried again after the pool is
// released; a Generational backend's new generation empties the pool.
func (d *Device) EnablePool(maxBytes uint64) {
	d.poolMu.Lock()
	defer d.poolMu.Unlock()
	if d.pool == nil {
		d.pool = map[uint64][]uintptr{}
	}
	d.poolMax = maxBytes
}

// sizeClass is the pooled allocation size for total bytes.
func sizeClass(total uint64) uint64 {
	return max(1<<16, uint64(1)<<bits.Len64(total-1))
}

// generation is the backend's generation (0 for a backend that is not Generational).
func (d *Device) generation() uint64 {
	if g, ok := d.be.(Generational); ok {
		return g.Generation()
	}
	return 0
}

// forgetEnded empties the pool when the backend's generation is no longer the pooled one: those
// allocations ended with their generation, so they are dropped, not freed. poolMu is held.
func (d *Device) forgetEnded(gen uint64) {
	if gen == d.poolGen {
		return
	}
	clear(d.pool)
	d.pooled, d.poolGen = 0, gen
}

// take returns, when pooling is on, the size class for total bytes and a pooled allocation of
// that class of generation gen (0 when the pool has none); when it is off, class 0 and no
// allocation.
func (d *Device) take(total, gen uint64) (class uint64, p uintptr) {
	d.poolMu.Lock()
	defer d.poolMu.Unlock()
	if d.pool == nil {
		return 0, 0
	}
	d.forgetEnded(gen)
	class = sizeClass(total)
	l := d.pool[class]
	if len(l) == 0 {
		return class, 0
	}
	p = l[len(l)-1]
	d.pool[class] = l[:len(l)-1]
	d.pooled -= class
	return class, p
}

// keep puts an allocation into the pool; false when pooling is off or full, the allocation is
// exact, or its generation has ended.
func (d *Device) keep(p uintptr, t poolTag) bool {
	d.poolMu.Lock()
	defer d.poolMu.Unlock()
	if d.pool == nil || t.class == 0 || d.pooled+t.class > d.poolMax {
		return false
	}
	d.forgetEnded(d.generation())
	if t.gen != d.poolGen {
		return false
	}
	d.pool[t.class] = append(d.pool[t.class], p)
	d.pooled += t.class
	return true
}

// drainPool frees every pooled allocation; held reports whether the pool held any.
func (d *Device) drainPool() (held bool, err error) {
	d.poolMu.Lock()
	defer d.poolMu.Unlock()
	held = d.pooled > 0
	for class, l := range d.pool {
		for _, p := range l {
			if e := d.be.Free(p); e != nil && err == nil {
				err = e
			}
		}
		delete(d.pool, class)
	}
	d.pooled = 0
	return held, err
}

// rawAlloc allocates total bytes, from the pool when it has an allocation of their size class;
// the tag says which class (0: an exact allocation, not pooled) and generation it is. The
// generation is read before the backend allocates, so that an allocation is never taken for
// one of a generation newer than its own.
func (d *Device) rawAlloc(total uint64) (p uintptr, t poolTag, err error) {
	t.gen = d.generation()
	t.class, p = d.take(total, t.gen)
	if t.class > 0 {
		total = t.class
	}
	if p == 0 {
		p, err = d.be.Alloc(total)
		if err != nil {
			if held, derr := d.drainPool(); held && derr == nil {
				p, err = d.be.Alloc(total)
			}
		}
	}
	return p, t, err
}

// rawFree returns an allocation of rawAlloc to the pool, or frees it.
func (d *Device) rawFree(p uintptr, t poolTag) error {
	if d.keep(p, t) {
		return nil
	}
	return d.be.Free(p)
}
