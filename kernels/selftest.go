package kernels

import (
	"fmt"

	"github.com/ebitengine/purego"
)

// The library's test entry points (csrc/include/octave_selftest.h: octave_wmma_selftest,
// octave_mma_selftest, octave_blockdiv_selftest) are not part of the C ABI: the binding does not
// wrap them. The model tests (package grids) bind them by name and call them through these.

// BindSelftest binds the library's test entry point name to fn, a pointer to a func variable of
// the entry point's C signature (as purego.RegisterFunc takes it). A library that does not export
// it is an error naming both.
func (l *Lib) BindSelftest(name string, fn any) error {
	p, err := purego.Dlsym(l.handle, name)
	if err != nil || p == 0 {
		return fmt.Errorf("kernels: %s does not export %s (csrc/include/octave_selftest.h): rebuild it from this tree", l.Path, name)
	}
	purego.RegisterFunc(fn, p)
	return nil
}

// CallSelftest runs f, a call of a bound test entry point, as the binding runs its own calls: on
// one OS thread under the library's lock, its status returned as an [*Error] with the library's
// message.
func (l *Lib) CallSelftest(name string, f func() int32) error { return l.call(name, f) }

// Context is the device's octave_ctx, the first argument of a test entry point that runs on the
// device. It is 0 for a device whose backend is not a C library's (NewDevice) and after Close: an
// entry point given 0 refuses it with a status (INVALID_ARGUMENT), as the ABI's calls do.
func (d *Device) Context() uintptr {
	if c, ok := d.be.(*capiBackend); ok {
		return c.ctx
	}
	return 0
}
