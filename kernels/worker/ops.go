package worker

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"unsafe"

	"github.com/octant-kv/octant/kernels"
)

// The op codes of the op request (py/octant_worker/abi.py, OPS; TestProtocolConstants compares).
const (
	opStore     uint32 = 1
	opRotate    uint32 = 2
	opDecode    uint32 = 3
	opReduce    uint32 = 4
	opPrefill   uint32 = 5
	opQueryMaps uint32 = 6
)

// structBytes are the bytes of an ABI argument struct, as the C ABI lays them out (kernels/abi.go
// mirrors octave_capi.h field for field; TestStructLayouts checks abi.py against it).
func structBytes[T any](a *T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(a)), unsafe.Sizeof(*a))
}

// op sends an op request, u32 code | u32 0 | the struct's bytes verbatim, and waits for the
// adapter's callable to return: nil, or the status and message the worker replies with (the
// bridge's checks, the adapter's refusal, its exception, a tier it reports other than the one
// asked). what names the request in a death or hang ("octave_decode (tier 1)").
func (b *Backend) op(name, what string, code uint32, args []byte) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return closedError(name)
	}
	if b.opts.Adapter == "" {
		return kernels.Unsupported(name, "the worker backend ("+b.spec+"), which has no adapter,")
	}
	payload := make([]byte, 8+len(args))
	binary.LittleEndian.PutUint32(payload, code)
	copy(payload[8:], args)
	_, err := b.call(name, what, msgOp, payload)
	return err
}

// Store runs the adapter's store. SlotMappingHost is a pointer into Go's memory, which the
// worker cannot read: it is sent as 0 (NULL), so the adapter reads slot_mapping from the arena,
// and the host-map variant of a store tests nothing more through a worker than without it.
func (b *Backend) Store(a *kernels.StoreArgs) error {
	c := *a
	c.SlotMappingHost = nil
	return b.op("octave_cache_store", "octave_cache_store", opStore, structBytes(&c))
}

// Rotate runs the adapter's rotate.
func (b *Backend) Rotate(a *kernels.RotateArgs) error {
	return b.op("octave_rotate", "octave_rotate", opRotate, structBytes(a))
}

// Decode runs the adapter's decode on the asked tier.
func (b *Backend) Decode(a *kernels.DecodeArgs) error {
	return b.op("octave_decode", fmt.Sprintf("octave_decode (tier %d)", a.Tier), opDecode, structBytes(a))
}

// Reduce runs the adapter's reduce.
func (b *Backend) Reduce(a *kernels.ReduceArgs) error {
	return b.op("octave_reduce", "octave_reduce", opReduce, structBytes(a))
}

// Prefill runs the adapter's prefill on the asked tier.
func (b *Backend) Prefill(a *kernels.PrefillArgs) error {
	return b.op("octave_prefill", fmt.Sprintf("octave_prefill (tier %d)", a.Tier), opPrefill, structBytes(a))
}

// QueryMaps runs the adapter's query_maps.
func (b *Backend) QueryMaps(a *kernels.QueryMapsArgs) error {
	return b.op("octave_query_maps", "octave_query_maps", opQueryMaps, structBytes(a))
}

// WorkspaceSize is octave_decode_workspace_size as the worker computes it: the ABI's formula and
// checks, never an adapter's own size, since the judges size the partials by the ABI.
func (b *Backend) WorkspaceSize(numQ, numQHeads, numSplits, partialStride int32) (uint64, error) {
	const op = "octave_decode_workspace_size"
	b.mu.Lock()
	defer b.mu.Unlock()
	payload := make([]byte, 16)
	for i, v := range []int32{numQ, numQHeads, numSplits, partialStride} {
		binary.LittleEndian.PutUint32(payload[4*i:], uint32(v))
	}
	reply, err := b.call(op, "workspace", msgWS, payload)
	if err != nil {
		return 0, err
	}
	if len(reply) != 8 {
		return 0, runtimeError(op, fmt.Sprintf("the worker's reply has %d bytes, expected 8 (a u64)", len(reply)))
	}
	return binary.LittleEndian.Uint64(reply), nil
}

// Tiers are the tiers the adapter declares (none without an adapter), as the running worker
// lists them.
func (b *Backend) Tiers() ([]kernels.TierDesc, error) {
	const op = "octave_tiers"
	b.mu.Lock()
	defer b.mu.Unlock()
	reply, err := b.call(op, "tiers", msgTiers, nil)
	if err != nil {
		return nil, err
	}
	var ts []helloTier
	if err := json.Unmarshal(reply, &ts); err != nil {
		return nil, runtimeError(op, fmt.Sprintf("the worker's tiers %.200q: expected a JSON list of tiers (%v)", reply, err))
	}
	return tierDescs(ts), nil
}

// ArgsBytes is the op name (as py/octant_worker/abi.py names it: "store", "decode", …) and the
// struct bytes an op request carries for args, one of *kernels.StoreArgs, RotateArgs, DecodeArgs,
// ReduceArgs, PrefillArgs and QueryMapsArgs: what a standalone replay of the call hands the same
// bridge (harness.Record). struct_size is the struct's size, as the Device fills it in; a store's
// SlotMappingHost is 0, as Store sends it.
func ArgsBytes(args any) (op string, body []byte, err error) {
	switch a := args.(type) {
	case *kernels.StoreArgs:
		c := *a
		c.SlotMappingHost = nil
		return "store", bytesCopy(structBytes(&c)), nil
	case *kernels.RotateArgs:
		return "rotate", bytesCopy(structBytes(a)), nil
	case *kernels.DecodeArgs:
		return "decode", bytesCopy(structBytes(a)), nil
	case *kernels.ReduceArgs:
		return "reduce", bytesCopy(structBytes(a)), nil
	case *kernels.PrefillArgs:
		return "prefill", bytesCopy(structBytes(a)), nil
	case *kernels.QueryMapsArgs:
		return "query_maps", bytesCopy(structBytes(a)), nil
	}
	return "", nil, fmt.Errorf("ArgsBytes(%T): expected a pointer to one of the kernels package's op argument structs", args)
}

// bytesCopy is a copy of an argument struct's bytes with its first field, struct_size, set to the
// struct's size.
func bytesCopy(b []byte) []byte {
	c := append([]byte(nil), b...)
	binary.LittleEndian.PutUint64(c, uint64(len(c)))
	return c
}
