package harness

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"runtime/debug"
	"sync"

	"github.com/octant-kv/octant/arch"
	"github.com/octant-kv/octant/kernels"
)

// Call is one call of an op with its inputs made concrete (DecodeCall, PrefillCall, StoreCall,
// ReduceCall, RotateCall): what every judge receives, whoever generated it (the kernel grids, the
// fuzz targets, the conformance battery, a reproducer).
type Call interface {
	Op() arch.Op
	// judge runs the call on im (on l's device, or the oracle's own model when im.Oracle) and
	// judges the output.
	judge(l *Lib, im Impl) Verdict
}

// newBufs is the buffer set of one library run: empty buffers get one byte (a NULL-free pointer),
// and buffers up to arenaBytes in all share one allocation, uploaded and read back in one copy
// each (kernels.BufferSet.Arena: a fuzz case's dozen small buffers cost more in runtime calls,
// which the library serialises, than in bytes).
func (l *Lib) newBufs() *kernels.BufferSet {
	s := &kernels.BufferSet{Dev: l.Dev, MinLen: 1, Arena: arenaBytes}
	if l.rec != nil {
		l.rec.mu.Lock()
		l.rec.bufs = s
		l.rec.mu.Unlock()
	}
	return s
}

const arenaBytes = 256 << 10

// prefetcher is a Call whose oracle side depends on the implementation (a decode tier's declared
// profile): CheckAll starts every implementation's model at once, so that they run on the host's
// cores beside each other and beside the device instead of one after another (the decode fuzz
// target judges the portable and wmma-model tiers, two profile models, per case), and judges the
// implementations concurrently; its judge must be safe for that.
type prefetcher interface {
	prefetch(impls []Impl)
}

// Check runs c on one implementation and judges it. A call outside l's declared domain
// (Lib.Outside) is not run: its verdict is NotSupported, its Err the *DomainError that says why.
func Check(l *Lib, im Impl, c Call) Verdict {
	if d := l.Outside(c); d != nil && !im.Oracle {
		return outsideVerdict(im, d)
	}
	return c.judge(l, im)
}

// outsideVerdict is the NotSupported verdict of a call outside the declared domain.
func outsideVerdict(im Impl, d *DomainError) Verdict {
	v := newVerdict(d.Op, im)
	v.Status, v.Err, v.Note = NotSupported, d, d.Error()
	return v
}

// CheckAll runs c on every implementation of its op in l (Impls; nil l: the oracle alone) and
// returns one verdict per implementation, in order. A library that offers no implementation of a
// tiered op gives one failing verdict saying so. A call outside l's declared domain (Lib.Outside;
// its op undeclared included) runs on none: one NotSupported verdict per implementation (one
// named "library" when the op has none), each with the *DomainError.
func CheckAll(l *Lib, c Call) []Verdict {
	if d := l.Outside(c); d != nil {
		impls, err := Impls(l, c.Op())
		if err != nil || len(impls) == 0 {
			impls = []Impl{{Name: "library"}}
		}
		out := make([]Verdict, len(impls))
		for i, im := range impls {
			out[i] = outsideVerdict(im, d)
		}
		return out
	}
	impls, err := Impls(l, c.Op())
	if err != nil {
		v := newVerdict(c.Op(), Impl{Name: "library"})
		return []Verdict{v.fail(err)}
	}
	out := make([]Verdict, len(impls))
	pf, ok := c.(prefetcher)
	if !ok {
		for i, im := range impls {
			out[i] = c.judge(l, im)
		}
		return out
	}
	// Every implementation's model starts at once, and every implementation is judged on its own
	// goroutine: the library serialises their device calls (kernels.Lib), so one tier's runs go on
	// while another's judge waits for its model. A panic in a judge is its verdict, with the stack.
	pf.prefetch(impls)
	var wg sync.WaitGroup
	for i, im := range impls {
		wg.Go(func() {
			defer func() {
				if r := recover(); r != nil {
					v := newVerdict(c.Op(), im)
					out[i] = v.fail(fmt.Errorf("panic while judging: %v\n%s", r, debug.Stack()))
				}
			}()
			out[i] = c.judge(l, im)
		})
	}
	wg.Wait()
	return out
}

// finish completes one library call of op: the call's own error (launchErr), then a device sync,
// then the buffer set's canaries and inputs (kernels.BufferSet.Verify). Every library run ends
// this way before its outputs are read back.
func (l *Lib) finish(bufs *kernels.BufferSet, op string, launchErr error) error {
	if launchErr != nil {
		return fmt.Errorf("%s: %w", op, launchErr)
	}
	if err := l.Dev.Sync(); err != nil {
		return fmt.Errorf("sync after %s: %w", op, err)
	}
	return bufs.Verify(op)
}

// outputRows reads back an fp16/bf16 output of rows rows of rowElems elements each, stride
// elements apart, filled with 0xFF bytes before the call (kernels.UnpackRows: op must not have
// written the gaps).
func outputRows(out *kernels.SetBuffer, op string, rows, rowElems, stride int) ([]uint16, error) {
	rb, err := out.ReadAll()
	if err != nil {
		return nil, err
	}
	got, err := kernels.UnpackRows(rb, rows, rowElems, stride)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return got, nil
}

// runTwice runs a library call, and a second time when repeat is set, and requires the same bits
// from both runs (sameBits); it returns the first run's output.
func runTwice[E uint8 | uint16](op string, repeat bool, run func() ([]E, error), what func(i int) string) ([]E, error) {
	first, err := run()
	if err != nil || !repeat {
		return first, err
	}
	second, err := run()
	if err != nil {
		return nil, fmt.Errorf("second run: %w", err)
	}
	return first, sameBits(op, first, second, what)
}

// sameBits compares the outputs of two runs of one call, element by element: a library must give
// the same bits for the same inputs, and a difference is reported as a nondeterministic result (a
// race?) with the first differing element (what(i)) and its value after each run.
func sameBits[E uint8 | uint16](op string, first, second []E, what func(i int) string) error {
	digits := bits.Len64(uint64(^E(0))) / 4 // hex digits of an element: 2 for bytes, 4 for fp16/bf16 bits
	for i := range first {
		if first[i] != second[i] {
			return fmt.Errorf("nondeterministic %s (a race?): %s is %#0*x after one run, %#0*x after another", op, what(i), digits, first[i], digits, second[i])
		}
	}
	return nil
}

// elemIndex describes flat element i of an output by its index alone.
func elemIndex(i int) string { return fmt.Sprintf("element %d", i) }

// elemName describes flat element e of a [rows][heads][d] output.
func elemName(e, heads, d int) string {
	return fmt.Sprintf("row %d head %d dim %d", e/(heads*d), e/d%heads, e%d)
}

// ActBytes rounds x to t and returns the little-endian bits of every element: an activation
// tensor as a kernel reads it.
func (t Dtype) ActBytes(x []float32) []byte {
	b := make([]byte, 2*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint16(b[2*i:], t.Bits(v))
	}
	return b
}
