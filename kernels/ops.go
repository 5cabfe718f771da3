package kernels

import (
	"fmt"
	"math"
	"unsafe"
)

// Each op fills in struct_size and calls the backend. Arguments are checked by the backend (the C
// library: its status and message come back as an *Error). Ops are asynchronous: call Sync (or
// read a buffer) to see asynchronous errors.

// Store runs octave_cache_store.
func (d *Device) Store(a StoreArgs) error {
	a.structSize = uint64(unsafe.Sizeof(a))
	return d.be.Store(&a)
}

// Rotate runs octave_rotate (in place).
func (d *Device) Rotate(a RotateArgs) error {
	a.structSize = uint64(unsafe.Sizeof(a))
	return d.be.Rotate(&a)
}

// Decode runs octave_decode (split-KV attention and its reduce).
func (d *Device) Decode(a DecodeArgs) error {
	a.structSize = uint64(unsafe.Sizeof(a))
	return d.be.Decode(&a)
}

// WorkspaceBytes is octave_decode_workspace_bytes: the partials a decode needs, 0 both on bad input
// and for an empty decode (WorkspaceSize tells them apart). The C library answers it without its
// lock (it writes no message); another backend answers it with WorkspaceSize, its error dropped.
func (d *Device) WorkspaceBytes(numQ, numQHeads, numSplits, partialStride int) uint64 {
	q, h, ns, ps := int32(numQ), int32(numQHeads), int32(numSplits), int32(partialStride)
	if c, ok := d.be.(*capiBackend); ok {
		return c.workspaceBytes(q, h, ns, ps)
	}
	n, err := d.be.WorkspaceSize(q, h, ns, ps)
	if err != nil {
		return 0
	}
	return n
}

// WorkspaceSize is octave_decode_workspace_size: the partials a decode needs, or the status and
// message octave_decode would give these sizes (0 bytes and no error: an empty decode). Arguments
// outside int32 are refused here, as the library would refuse them.
func (d *Device) WorkspaceSize(numQ, numQHeads, numSplits, partialStride int) (uint64, error) {
	for _, v := range []struct {
		name string
		x    int
	}{{"num_q", numQ}, {"num_q_heads", numQHeads}, {"num_splits", numSplits}, {"partial_stride", partialStride}} {
		if v.x < math.MinInt32 || v.x > math.MaxInt32 {
			return 0, fmt.Errorf("kernels: WorkspaceSize: %s = %d does not fit in int32", v.name, v.x)
		}
	}
	return d.be.WorkspaceSize(int32(numQ), int32(numQHeads), int32(numSplits), int32(partialStride))
}

// Reduce runs octave_reduce on partials.
func (d *Device) Reduce(a ReduceArgs) error {
	a.structSize = uint64(unsafe.Sizeof(a))
	return d.be.Reduce(&a)
}

// Prefill runs octave_prefill.
func (d *Device) Prefill(a PrefillArgs) error {
	a.structSize = uint64(unsafe.Sizeof(a))
	return d.be.Prefill(&a)
}

// QueryMaps runs octave_query_maps.
func (d *Device) QueryMaps(a QueryMapsArgs) error {
	a.structSize = uint64(unsafe.Sizeof(a))
	return d.be.QueryMaps(&a)
}
