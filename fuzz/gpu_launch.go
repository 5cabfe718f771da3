package fuzz

import (
	"encoding/binary"
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
// elements apart, filled with 0xFF bytes before the call: unpackRows of its bytes.
func outputRows(out *kernels.SetBuffer, op string, rows, rowElems, stride int) ([]uint16, error) {
	rb, err := out.ReadAll()
	if err != nil {
		return nil, err
	}
	return unpackRows(rb, op, rows, rowElems, stride)
}

// unpackRows returns the rows of rb packed (rows × rowElems 16-bit values, little-endian, rows
// stride elements apart) and fails when op wrote any of the stride − rowElems gap elements after a
// row (they must keep the 0xFFFF fill).
func unpackRows(rb []byte, op string, rows, rowElems, stride int) ([]uint16, error) {
	if len(rb) < 2*rows*stride {
		return nil, fmt.Errorf("%s: output has %d bytes, expected at least %d (%d rows × stride %d × 2)", op, len(rb), 2*rows*stride, rows, stride)
	}
	got := make([]uint16, rows*rowElems)
	for i := 0; i < rows; i++ {
		for j := 0; j < stride; j++ {
			v := binary.LittleEndian.Uint16(rb[2*(i*stride+j):])
			if j >= rowElems {
				if v != 0xFFFF {
					return nil, fmt.Errorf("%s wrote element %d of the %d-element gap after row %d (row stride %d > %d): %#04x",
						op, j-rowElems, stride-rowElems, i, stride, rowElems, v)
				}
				continue
			}
			got[i*rowElems+j] = v
		}
	}
	return got, nil
}
