package harness

import (
	"fmt"
	"slices"
	"sync"

	"github.com/octant-kv/octant/kernels"
	"github.com/octant-kv/octant/kernels/worker"
)

// Recording is one library call of a judged Call as a standalone replay needs it, without Go:
// the op's ABI struct, every buffer of the call with its bytes just before the op ran, whether
// the judge runs the call twice, and what the judge expects of the output (Expectation). Package
// cases writes it beside a reproducer as a Python script (docs/adapters.md, "A Python
// reproducer"); the judge itself writes nothing.
type Recording struct {
	// Op is the op as the worker's bridge names it: "store", "rotate", "decode", "reduce",
	// "prefill".
	Op string
	// Impl is the implementation judged: the tier's name ("portable" for an untiered op).
	Impl string
	// Struct is the op's argument struct as the C ABI lays it out (the bytes a worker's op
	// request carries), its pointer fields addresses inside Buffers (or 0).
	Struct []byte
	// Buffers are the call's buffers in the order the judge made them.
	Buffers []RecordedBuffer
	// Repeat says the judge runs the call a second time and requires the same bits.
	Repeat bool
	// Expect is what the judge requires of the output.
	Expect Expectation
	// Verdict is the judge's verdict on the run that was recorded.
	Verdict Verdict
}

// RecordedBuffer is one buffer of a recorded call: its name in the judge's messages, the
// address the library saw it at (the struct's pointers point into [Addr, Addr+len(Data))), its
// bytes just before the op ran, and whether it is an input (which the op must leave unchanged).
type RecordedBuffer struct {
	Name  string
	Addr  uint64
	Data  []byte
	Input bool
}

// Expectation kinds: how a replay judges the output buffer.
const (
	// ExpectBound: every element of Rows × RowElems fp16/bf16 values within Bound of Model
	// (decode, prefill, reduce), with the attention contract's rule on top where Exact is set.
	ExpectBound = "bound"
	// ExpectBits: the whole buffer equal to Want, bit for bit (NaN for NaN) (rotate).
	ExpectBits = "bits"
	// ExpectSlots: every written slot's data bytes equal to the oracle's, every other cache byte
	// (pad bytes included) unchanged (store).
	ExpectSlots = "slots"
)

// Expectation is what the judge requires of a recorded call's output, taken from the oracle.
type Expectation struct {
	Kind   string
	Buffer string // the output buffer's name
	Dtype  Dtype  // the output's element dtype (bound, bits)

	// Bound and bits: the output holds Rows rows of RowElems elements, Stride elements apart (the
	// gap after each row must stay as it was); Heads heads of 256 dims per row name an element.
	// Rotate: HeadStride elements between heads (the gap after each head must stay as it was).
	Rows, RowElems, Stride, Heads, HeadStride int

	// Bound: the model and bound of every element (Rows × RowElems, packed); Judged masks the
	// elements held to them (nil: every one), the others must keep their bytes (prefill's rows of
	// no sequence). ZeroRows must be exactly ±0 (decode's padding rows). Overflow is the dtype's
	// overflow threshold of oracle.ProfileResult.Check (0: none). Exact, when set, is exact
	// attention: the contract rule (relative L2 ContractRelL2, the output dtype's rounding
	// RoundU·|x| + RoundAbs) applies on top of the bounds. Profile names the declared profile and
	// BoundWhy the bound in messages.
	Model, Bound, Exact []float64
	Judged              []bool
	ZeroRows            []int
	Overflow            float64
	NaNFails            bool // a NaN error fails even where the bound is +Inf (reduce)
	ContractRelL2       float64
	RoundU, RoundAbs    float64
	Profile, BoundWhy   string

	// Bits: the expected buffer (Stride·Rows elements, gaps included).
	Want []uint16

	// Slots: the cache's expected bytes after the store (the oracle's slots in the written slots,
	// every other byte as before) and the written slots.
	WantCache []byte
	Slots     []ExpectedSlot
}

// ExpectedSlot is one slot a store writes: its byte offset in the cache, its data bytes (the
// rest of the slot, to SlotBytes, are pad bytes the store leaves untouched), and what names it in
// messages.
type ExpectedSlot struct {
	Offset, DataBytes, SlotBytes int
	Name                         string
}

// recorder captures the first op call a judge makes on a Lib view (Record).
type recorder struct {
	mu   sync.Mutex
	bufs *kernels.BufferSet // the buffer set made last
	rec  *Recording
	err  error
}

// capture records one op call, args a pointer to its struct, before it runs (once: the first).
func (r *recorder) capture(args any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.rec != nil || r.err != nil {
		return
	}
	op, body, err := worker.ArgsBytes(args)
	if err != nil {
		r.err = err
		return
	}
	rec := &Recording{Op: op, Struct: body}
	if r.bufs != nil {
		for _, b := range r.bufs.Buffers() {
			data, err := b.ReadAll()
			if err != nil {
				r.err = fmt.Errorf("recording %s: %w", op, err)
				return
			}
			rec.Buffers = append(rec.Buffers, RecordedBuffer{Name: b.Name, Addr: uint64(b.Ptr), Data: data, Input: b.IsInput()})
		}
	}
	r.rec = rec
}

// recordingOps records the first op call, then runs it on the Lib's own runner.
type recordingOps struct {
	Kernels
	r *recorder
}

func (o recordingOps) Store(a kernels.StoreArgs) error   { o.r.capture(&a); return o.Kernels.Store(a) }
func (o recordingOps) Rotate(a kernels.RotateArgs) error { o.r.capture(&a); return o.Kernels.Rotate(a) }
func (o recordingOps) Decode(a kernels.DecodeArgs) error { o.r.capture(&a); return o.Kernels.Decode(a) }
func (o recordingOps) Reduce(a kernels.ReduceArgs) error { o.r.capture(&a); return o.Kernels.Reduce(a) }
func (o recordingOps) Prefill(a kernels.PrefillArgs) error {
	o.r.capture(&a)
	return o.Kernels.Prefill(a)
}

// Record runs c once more on the implementation of l named impl (a tier's name, or "portable"
// for an untiered op), judged as Check judges it, and returns the recording of its first library
// call: its struct and buffers as the library saw them, the judge's expectation of its output
// and the verdict of this run. It is for a case that failed: a standalone replay of it needs no
// Go (package cases writes it as a Python script). The oracle implementation has no library
// call to record.
func Record(l *Lib, c Call, impl string) (*Recording, error) {
	if l == nil {
		return nil, fmt.Errorf("recording %s: no library (the oracle alone makes no library call)", c.Op())
	}
	impls, err := Impls(l, c.Op())
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(impls, func(im Impl) bool { return im.Name == impl })
	if i < 0 {
		var names []string
		for _, im := range impls {
			names = append(names, im.Name)
		}
		return nil, fmt.Errorf("recording %s: implementation %q, expected one of %v", c.Op(), impl, names)
	}
	im := impls[i]
	r := &recorder{}
	v := *l
	v.rec = r
	verdict := c.judge(&v, im)
	if r.err != nil {
		return nil, r.err
	}
	if r.rec == nil {
		return nil, fmt.Errorf("recording %s on %s: the judge made no library call (%v)", c.Op(), impl, verdict.Err)
	}
	exp, repeat, err := expect(l, im, c)
	if err != nil {
		return nil, fmt.Errorf("recording %s on %s: the expected output: %w", c.Op(), impl, err)
	}
	rec := r.rec
	rec.Impl, rec.Expect, rec.Repeat, rec.Verdict = im.Name, *exp, repeat, verdict
	return rec, nil
}

// expect is the judge's expectation of c's output on im, and whether it runs c twice.
func expect(l *Lib, im Impl, c Call) (*Expectation, bool, error) {
	switch c := c.(type) {
	case *DecodeCall:
		e, err := c.expect(im)
		return e, l.repeat(c.workgroups()), err
	case *PrefillCall:
		e, err := c.expect(im)
		return e, l.repeat(c.workgroups()), err
	case *ReduceCall:
		e, err := c.expect()
		return e, true, err
	case *RotateCall:
		return c.expect(), true, nil
	case *StoreCall:
		e, err := c.expect()
		return e, true, err
	}
	return nil, false, fmt.Errorf("no expectation for a %T (op %s)", c, c.Op())
}
