package fuzz

import (
	"fmt"

	"github.com/octant-kv/octant/kernels"
)

// finish completes one library call of op: the call's own error (launchErr), then a device sync,
// then the buffer set's canaries and inputs (kernels.BufferSet.Verify). Every GPU op of the
// harness ends this way before it reads its outputs back.
func (g *GPU) finish(bufs *kernels.BufferSet, op string, launchErr error) error {
	if launchErr != nil {
		return fmt.Errorf("%s: %w", op, launchErr)
	}
	if err := g.Dev.Sync(); err != nil {
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
