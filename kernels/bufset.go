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
	// Arena, when positive, is the size of one device allocation that the set's small buffers
	// share, each still between its own canaries (256-byte aligned): their canaries and contents
	// go to the device in one copy when Err is called, and Verify reads them back in one copy —
	// instead of one copy per buffer each way (a fuzz case's dozen small buffers cost more in
	// runtime calls than in bytes). A buffer that does not fit in what is left is allocated on its
	// own. With an arena, use the buffers only after Err (it uploads them). 0: no arena.
	Arena int

	list []*SetBuffer
	err  error
	ar   *arena
	back []byte // the arena as the last verify read it back (nil before, and after an upload)
}

// arena is a BufferSet's shared allocation and its host image.
type arena struct {
	base uintptr
	tag  poolTag
	img  []byte // canaries and contents of the buffers placed so far, [0, len(img))
	sent int    // bytes of img uploaded
}

// SetBuffer is one buffer of a BufferSet: the device buffer (its Ptr, Len, Write, Read,
// CheckCanaries), its name in error messages, and for inputs the bytes uploaded.
type SetBuffer struct {
	*Buffer
	Name string
	host []byte // inputs: the bytes uploaded; outputs and in-out buffers: nil
	off  int    // arena buffers: offset of the front canary in the arena; -1 otherwise
	set  *BufferSet
}

// Err uploads what the arena holds that is not on the device yet, then returns the first
// allocation or upload error, or nil.
func (s *BufferSet) Err() error {
	if a := s.ar; s.err == nil && a != nil && a.sent < len(a.img) {
		b := Buffer{d: s.Dev, base: a.base}
		if err := b.writeRaw(a.sent, a.img[a.sent:]); err != nil {
			s.err = fmt.Errorf("uploading the buffer arena (%d bytes): %w", len(a.img)-a.sent, err)
		}
		a.sent = len(a.img)
		s.back = nil
	}
	return s.err
}

// place puts a buffer of n usable bytes (contents from data, else fill) in the arena and returns
// it, or nil when there is no arena or it has no room.
func (s *BufferSet) place(name string, n int, fill byte, data []byte) *SetBuffer {
	if s.Arena <= 0 || n < 0 {
		return nil
	}
	need := (2*CanaryBytes + n + 255) &^ 255
	if s.ar == nil {
		if need > s.Arena {
			return nil
		}
		p, tag, err := s.Dev.rawAlloc(uint64(s.Arena))
		if err != nil {
			s.err = fmt.Errorf("allocating the buffer arena (%d bytes): %w", s.Arena, err)
			return &SetBuffer{Buffer: &Buffer{}, Name: name, off: -1}
		}
		s.ar = &arena{base: p, tag: tag}
	}
	a := s.ar
	off := len(a.img)
	if off+need > s.Arena {
		return nil
	}
	a.img = append(a.img, make([]byte, need)...)
	c := canary(CanaryBytes)
	copy(a.img[off:], c)
	body := a.img[off+CanaryBytes : off+CanaryBytes+n]
	if data != nil {
		copy(body, data)
	} else if fill != 0 {
		for i := range body {
			body[i] = fill
		}
	}
	copy(a.img[off+CanaryBytes+n:], c)
	base := a.base + uintptr(off)
	sb := &SetBuffer{Buffer: &Buffer{d: s.Dev, base: base, Ptr: base + CanaryBytes, Len: n, sub: true}, Name: name, off: off, set: s}
	s.list = append(s.list, sb)
	return sb
}

func (s *BufferSet) alloc(name string, n int, fill byte) *SetBuffer {
	if s.err != nil {
		return &SetBuffer{Buffer: &Buffer{}, Name: name, off: -1}
	}
	size := n
	if n >= 0 && n < s.MinLen {
		size = s.MinLen
	}
	if sb := s.place(name, size, fill, nil); sb != nil {
		return sb
	}
	b, err := s.Dev.Alloc(size, fill)
	return s.add(name, n, b, err)
}

// add records a buffer allocated for name (n bytes asked for), or the error that allocating it
// returned.
func (s *BufferSet) add(name string, n int, b *Buffer, err error) *SetBuffer {
	if err != nil {
		s.err = fmt.Errorf("allocating %s (%d bytes): %w", name, n, err)
		return &SetBuffer{Buffer: &Buffer{}, Name: name, off: -1}
	}
	sb := &SetBuffer{Buffer: b, Name: name, off: -1}
	s.list = append(s.list, sb)
	return sb
}

// upload allocates a buffer of len(data) bytes (at least MinLen: zeros after data) holding data,
// canaries and contents written together (Device.AllocWith).
func (s *BufferSet) upload(name string, data []byte) *SetBuffer {
	if s.err != nil {
		return &SetBuffer{Buffer: &Buffer{}, Name: name, off: -1}
	}
	img := data
	if len(data) < s.MinLen {
		img = make([]byte, s.MinLen)
		copy(img, data)
	}
	if sb := s.place(name, len(img), 0, img); sb != nil {
		return sb
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

// ReadAll returns a copy of the buffer's bytes; an error names the buffer. For a buffer of the
// arena read back by Verify (CheckCanaries, CheckInputs) since the last upload, those bytes: the
// call's outputs come back with its check, in one copy.
func (b *SetBuffer) ReadAll() ([]byte, error) {
	if b.off >= 0 && b.set != nil && b.set.back != nil {
		return append([]byte(nil), b.set.back[b.off+CanaryBytes:b.off+CanaryBytes+b.Len]...), nil
	}
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
func (b *SetBuffer) check(after string, canaries, inputs bool, arenaImg []byte) error {
	input := inputs && b.host != nil
	if !canaries && !input {
		return nil
	}
	var got []byte
	var cerr error
	if b.off >= 0 { // an arena buffer: its bytes are in the arena's image, read once for all
		img := arenaImg[b.off : b.off+2*CanaryBytes+b.Len]
		got = img[CanaryBytes : CanaryBytes+b.Len]
		cerr = checkGuards(b.Name, img[:CanaryBytes], img[CanaryBytes+b.Len:], b.Len)
	} else {
		got, cerr = b.readChecked(b.Name, input)
	}
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
	var img []byte
	if a := s.ar; a != nil && len(a.img) > 0 {
		img = make([]byte, len(a.img))
		b := Buffer{d: s.Dev, base: a.base}
		if err := b.readRaw(0, img); err != nil {
			return fmt.Errorf("after %s: reading the buffer arena back: %w", after, err)
		}
	}
	s.back = img
	var errs []error
	for _, b := range s.list {
		errs = append(errs, b.check(after, canaries, inputs, img))
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

// Free releases every buffer of the set, and its arena.
func (s *BufferSet) Free() {
	for _, b := range s.list {
		b.Free()
	}
	s.list = nil
	if a := s.ar; a != nil {
		s.Dev.rawFree(a.base, a.tag)
		s.ar = nil
	}
}

// Buffers lists the set's buffers in the order they were made (a recording of a call reads each
// one's name, address, length and contents: harness.Record).
func (s *BufferSet) Buffers() []*SetBuffer { return append([]*SetBuffer(nil), s.list...) }

// IsInput reports whether the buffer is an input of the call (Input): one Verify requires
// unchanged. Outputs and in-out buffers are not.
func (b *SetBuffer) IsInput() bool { return b.host != nil }
