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
	if err != nil {
		s.err = fmt.Errorf("allocating %s (%d bytes): %w", name, n, err)
		return &SetBuffer{Buffer: &Buffer{}, Name: name}
	}
	sb := &SetBuffer{Buffer: b, Name: name}
	s.list = append(s.list, sb)
	return sb
}

// upload allocates a buffer of len(data) bytes and copies data into it.
func (s *BufferSet) upload(name string, data []byte) *SetBuffer {
	sb := s.alloc(name, len(data), 0)
	if s.err == nil && len(data) > 0 {
		if err := sb.Write(0, data); err != nil {
			s.err = fmt.Errorf("uploading %s: %w", name, err)
		}
	}
	return sb
}

// Input uploads data as an input of the call: Verify requires it unchanged.
func (s *BufferSet) Input(name string, data []byte) *SetBuffer {
	sb := s.upload(name, data)
	sb.host = append([]byte(nil), data...)
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

// canaryErr reports the buffer's overwritten guard bytes, if any.
func (b *SetBuffer) canaryErr(after string) error {
	if err := b.CheckCanaries(b.Name); err != nil {
		return fmt.Errorf("after %s: %w", after, err)
	}
	return nil
}

// inputErr reports an input whose contents differ from the bytes uploaded: the first differing
// byte, both values, and how many bytes differ. nil for outputs.
func (b *SetBuffer) inputErr(after string) error {
	if len(b.host) == 0 {
		return nil
	}
	got, err := b.ReadAll()
	if err != nil {
		return err
	}
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

// CheckCanaries reports, after a call named by after, every buffer whose guard bytes were written
// (one error per buffer, joined).
func (s *BufferSet) CheckCanaries(after string) error {
	var errs []error
	for _, b := range s.list {
		errs = append(errs, b.canaryErr(after))
	}
	return errors.Join(errs...)
}

// CheckInputs reports, after a call named by after, every input whose contents changed (one
// error per input, joined).
func (s *BufferSet) CheckInputs(after string) error {
	var errs []error
	for _, b := range s.list {
		errs = append(errs, b.inputErr(after))
	}
	return errors.Join(errs...)
}

// Verify is CheckCanaries and CheckInputs together, buffer by buffer: every overwritten guard
// region and every modified input of the call, joined.
func (s *BufferSet) Verify(after string) error {
	var errs []error
	for _, b := range s.list {
		errs = append(errs, b.canaryErr(after), b.inputErr(after))
	}
	return errors.Join(errs...)
}

// Free releases every buffer of the set.
func (s *BufferSet) Free() {
	for _, b := range s.list {
		b.Free()
	}
	s.list = nil
}
