package kernels

import (
	"bytes"
	"errors"
	"fmt"
)

// BufferSet holds the device buffers of one call, each between canary bytes ([Device.Alloc]), and
// remembers the bytes uploaded to every input, so that after the call [BufferSet.Verify] can report
// any byte written outside a buffer and any input the call modified (in the style of gonum's
// internal/asm guard regions).
//
// The first error sticks: later allocations are skipped and return a buffer with a zero Ptr, and
// Err reports the error. So a caller can allocate every buffer of a call and check Err once.
//
//	bufs := &kernels.BufferSet{Dev: dev}
//	defer bufs.Free()
//	k := bufs.Input("key", keyBytes)
//	out := bufs.Output("out", n, 0xFF)
//	if err := bufs.Err(); err != nil { ... }
//	// ... run the op with k.Ptr, out.Ptr, then dev.Sync()
//	if err := bufs.Verify("cache_store"); err != nil { ... }
//	got, err := out.ReadAll()
type BufferSet struct {
	Dev *Device
	// MinLen, when positive, is the fewest usable bytes a buffer gets: a buffer asked for fewer
	// (an empty input, the output of a call with no rows) is allocated MinLen bytes. 0: exact
	// sizes, so that a write to an empty buffer hits its rear canary.
	MinLen int

	list []*SetBuffer
	err  error
}

// SetBuffer is one buffer of a BufferSet: the device buffer (its Ptr, Len, Write, Read,
// CheckCanaries), its name in error messages, and for inputs the bytes uploaded.
type SetBuffer struct {
	*Buffer
	Name string
	host []byte // inputs: the bytes uploaded; outputs and in-out buffers: nil
}

// Err returns the first allocation or upload error, or nil.
func (s *BufferSet) Err() error { return s.err }

func (s *BufferSet) alloc(name string, n int, fill byte) *SetBuffer {
	if s.err != nil {
		return &SetBuffer{Buffer: &Buffer{}, Name: name}
	}
	size := n
	if n >= 0 && n < s.MinLen {
		size = s.MinLen
	}
	b, err := s.Dev.Alloc(size, fill)
	return s.add(name, n, b, err)
}

// add records a buffer allocated for name (n bytes asked for), or the error that allocating it
// returned.
func (s *BufferSet) add(name string, n int, b *Buffer, err error) *SetBuffer {
	if err != nil {
		s.err = fmt.Errorf("allocating %s (%d bytes): %w", name, n, err)
		return &SetBuffer{Buffer: &Buffer{}, Name: name}
	}
	sb := &SetBuffer{Buffer: b, Name: name}
	s.list = append(s.list, sb)
	return sb
}

// upload allocates a buffer of len(data) bytes (at least MinLen: zeros after data) holding data,
// canaries and contents written together (Device.AllocWith).
func (s *BufferSet) upload(name string, data []byte) *SetBuffer {
	if s.err != nil {
		return &SetBuffer{Buffer: &Buffer{}, Name: name}
	}
	img := data
	if len(data) < s.MinLen {
		img = make([]byte, s.MinLen)
		copy(img, data)
	}
	b, err := s.Dev.AllocWith(img)
	return s.add(name, len(data), b, err)
}

// Input uploads data as an input of the call: Verify requires it unchanged.
func (s *BufferSet) Input(name string, data []byte) *SetBuffer {
	sb := s.upload(name, data)
	sb.host = append([]byte{}, data...)
	return sb
}

// Output allocates an output of n bytes filled with fill (0xFF: NaN in fp16, bf16 and fp32, so an
// element the kernel forgets to write shows).
func (s *BufferSet) Output(name string, n int, fill byte) *SetBuffer { return s.alloc(name, n, fill) }

// InOut uploads data as an output the call updates in place (the cache of a store, the tensor of
// a rotate): only its canaries are checked.
func (s *BufferSet) InOut(name string, data []byte) *SetBuffer { return s.upload(name, data) }

// ReadAll returns a copy of the buffer's bytes; an error names the buffer.
func (b *SetBuffer) ReadAll() ([]byte, error) {
	out, err := b.Bytes()
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", b.Name, err)
	}
	return out, nil
}

// check reports, after a call named by after, the buffer's overwritten guard bytes (canaries)
// and, for an input (inputs), contents that differ from the bytes uploaded: the first differing
// byte, both values, and how many bytes differ. It reads the buffer once where it is small (the
// canaries and the contents in one copy), and does not synchronise the device first.
func (b *SetBuffer) check(after string, canaries, inputs bool) error {
	input := inputs && b.host != nil
	if !canaries && !input {
		return nil
	}
	got, cerr := b.readChecked(b.Name, input)
	var errs []error
	if cerr != nil && (canaries || got == nil) { // got == nil with input: the read itself failed
		errs = append(errs, fmt.Errorf("after %s: %w", after, cerr))
	}
	if input && got != nil {
		errs = append(errs, b.diff(after, got))
	}
	return errors.Join(errs...)
}

// diff reports an input whose contents got differ from the bytes uploaded.
func (b *SetBuffer) diff(after string, got []byte) error {
	got = got[:len(b.host)] // a MinLen buffer may be longer than its input
	if bytes.Equal(got, b.host) {
		return nil
	}
	i, n := -1, 0
	for j := range got {
		if got[j] != b.host[j] {
			if i < 0 {
				i = j
			}
			n++
		}
	}
	return fmt.Errorf("after %s: input %s was modified: byte %d is %#02x, uploaded %#02x (%d bytes differ)", after, b.Name, i, got[i], b.host[i], n)
}

// verify synchronises the device once and then checks every buffer (check).
func (s *BufferSet) verify(after string, canaries, inputs bool) error {
	if len(s.list) == 0 {
		return nil
	}
	if err := s.Dev.Sync(); err != nil {
		return err
	}
	var errs []error
	for _, b := range s.list {
		errs = append(errs, b.check(after, canaries, inputs))
	}
	return errors.Join(errs...)
}

// CheckCanaries reports, after a call named by after, every buffer whose guard bytes were written
// (one error per buffer, joined).
func (s *BufferSet) CheckCanaries(after string) error { return s.verify(after, true, false) }

// CheckInputs reports, after a call named by after, every input whose contents changed (one
// error per input, joined).
func (s *BufferSet) CheckInputs(after string) error { return s.verify(after, false, true) }

// Verify is CheckCanaries and CheckInputs together, buffer by buffer: every overwritten guard
// region and every modified input of the call, joined. Each small buffer is read once.
func (s *BufferSet) Verify(after string) error { return s.verify(after, true, true) }

// Free releases every buffer of the set.
func (s *BufferSet) Free() {
	for _, b := range s.list {
		b.Free()
	}
	s.list = nil
}
