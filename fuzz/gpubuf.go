package fuzz

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/octant-kv/octant/kernels"
)

// devBuf is one device buffer of a call: canary bytes around it (kernels.Device.Alloc), and for
// inputs the bytes uploaded, so that the harness can check them unchanged after the call.
type devBuf struct {
	name string
	b    *kernels.Buffer
	host []byte // inputs: the bytes uploaded; outputs: nil
}

// bufSet holds the buffers of one call. The first error sticks: later allocations are skipped
// and err reports it.
type bufSet struct {
	dev  *kernels.Device
	list []*devBuf
	err  error
}

func (s *bufSet) alloc(name string, n int, fill byte) *devBuf {
	if s.err != nil {
		return &devBuf{name: name, b: &kernels.Buffer{}}
	}
	b, err := s.dev.Alloc(max(n, 1), fill)
	if err != nil {
		s.err = fmt.Errorf("allocating %s (%d bytes): %w", name, n, err)
		return &devBuf{name: name, b: &kernels.Buffer{}}
	}
	db := &devBuf{name: name, b: b}
	s.list = append(s.list, db)
	return db
}

// input uploads data; verify later requires it unchanged.
func (s *bufSet) input(name string, data []byte) *devBuf {
	db := s.alloc(name, len(data), 0)
	if s.err == nil && len(data) > 0 {
		if err := db.b.Write(0, data); err != nil {
			s.err = fmt.Errorf("uploading %s: %w", name, err)
		}
	}
	db.host = append([]byte{}, data...)
	return db
}

// output allocates an output filled with fill (0xFF: NaN in fp16, bf16 and fp32, so an element a
// kernel forgets to write shows).
func (s *bufSet) output(name string, n int, fill byte) *devBuf { return s.alloc(name, n, fill) }

// inout uploads data as an output the call updates in place (the cache of a store).
func (s *bufSet) inout(name string, data []byte) *devBuf {
	db := s.alloc(name, len(data), 0)
	if s.err == nil && len(data) > 0 {
		if err := db.b.Write(0, data); err != nil {
			s.err = fmt.Errorf("uploading %s: %w", name, err)
		}
	}
	return db
}

func (b *devBuf) read() ([]byte, error) {
	out, err := b.b.Bytes()
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", b.name, err)
	}
	return out, nil
}

// verify checks, after a call, the canaries around every buffer and that every input is
// unchanged.
func (s *bufSet) verify(after string) error {
	var errs []error
	for _, b := range s.list {
		if err := b.b.CheckCanaries(b.name); err != nil {
			errs = append(errs, fmt.Errorf("after %s: %w", after, err))
		}
		if b.host == nil || len(b.host) == 0 {
			continue
		}
		got, err := b.read()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !bytes.Equal(got, b.host) {
			i, n := 0, 0
			for j := range got {
				if got[j] != b.host[j] {
					if n == 0 {
						i = j
					}
					n++
				}
			}
			errs = append(errs, fmt.Errorf("after %s: input %s was modified: byte %d is %#02x, uploaded %#02x (%d bytes differ)", after, b.name, i, got[i], b.host[i], n))
		}
	}
	return errors.Join(errs...)
}

// free releases every buffer.
func (s *bufSet) free() {
	for _, b := range s.list {
		b.b.Free()
	}
	s.list = nil
}
