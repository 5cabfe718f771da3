package worker

import "sort"

// align is the alignment of every allocation (the C ABI's octave_alloc: 256 bytes).
const align = 256

// span is a range [off, off+size) of arena offsets.
type span struct{ off, size uint64 }

// allocator hands out the usable bytes of one arena, [base, base+size) in arena offsets, first
// fit in multiples of align. It is Go's alone: the worker never sees an Alloc or a Free, only
// the addresses inside allocations that copies name.
type allocator struct {
	base, size uint64
	free       []span // sorted by off, no two adjacent
	used       []span // outstanding allocations, sorted by off
}

func newAllocator(base, size uint64) *allocator {
	a := &allocator{base: base, size: size}
	if size > 0 {
		a.free = []span{{base, size}}
	}
	return a
}

// alloc takes n bytes (rounded up to align) from the first free span that holds them; false when
// none does.
func (a *allocator) alloc(n uint64) (uint64, bool) {
	need := (n + align - 1) &^ (align - 1)
	if need < n { // n near 2^64
		return 0, false
	}
	for i, f := range a.free {
		if f.size < need {
			continue
		}
		if f.size == need {
			a.free = append(a.free[:i], a.free[i+1:]...)
		} else {
			a.free[i] = span{f.off + need, f.size - need}
		}
		j := findSpan(a.used, f.off)
		a.used = append(a.used, span{})
		copy(a.used[j+1:], a.used[j:])
		a.used[j] = span{f.off, need}
		return f.off, true
	}
	return 0, false
}

// release frees the allocation that starts at off; false when no outstanding allocation does.
func (a *allocator) release(off uint64) bool {
	j := findSpan(a.used, off)
	if j == len(a.used) || a.used[j].off != off {
		return false
	}
	s := a.used[j]
	a.used = append(a.used[:j], a.used[j+1:]...)
	i := findSpan(a.free, s.off)
	if i < len(a.free) && s.off+s.size == a.free[i].off { // joins the span after it
		a.free[i] = span{s.off, s.size + a.free[i].size}
	} else {
		a.free = append(a.free, span{})
		copy(a.free[i+1:], a.free[i:])
		a.free[i] = s
	}
	if i > 0 && a.free[i-1].off+a.free[i-1].size == a.free[i].off { // and the one before it
		a.free[i-1].size += a.free[i].size
		a.free = append(a.free[:i], a.free[i+1:]...)
	}
	return true
}

// contains reports whether [off, off+n) lies inside one outstanding allocation.
func (a *allocator) contains(off, n uint64) bool {
	j := sort.Search(len(a.used), func(k int) bool { return a.used[k].off > off }) - 1
	if j < 0 {
		return false
	}
	s := a.used[j]
	return off+n >= off && off+n <= s.off+s.size
}

// largest is the size of the largest free span.
func (a *allocator) largest() uint64 {
	var m uint64
	for _, f := range a.free {
		m = max(m, f.size)
	}
	return m
}

// findSpan is the index of the first span of l at or after off.
func findSpan(l []span, off uint64) int {
	return sort.Search(len(l), func(k int) bool { return l[k].off >= off })
}
