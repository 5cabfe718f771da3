package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Host data in the forms the C ABI takes: arrays as the little-endian bytes a Buffer holds
// (activations as fp16/bf16 bits, int32 block tables and query maps, int64 slot mappings, fp32
// partials), and sign patterns as the argument structs' uint32[8].

// Uint16Bytes encodes x (fp16 or bf16 bits) as little-endian bytes.
func Uint16Bytes(x []uint16) []byte {
	b := make([]byte, 2*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint16(b[2*i:], v)
	}
	return b
}

// BytesUint16 decodes little-endian bytes as uint16 (a trailing odd byte is ignored).
func BytesUint16(b []byte) []uint16 {
	x := make([]uint16, len(b)/2)
	for i := range x {
		x[i] = binary.LittleEndian.Uint16(b[2*i:])
	}
	return x
}

// UnpackRows returns the rows of an fp16/bf16 output b, rows rows of rowElems elements stored
// stride elements apart, packed (rows × rowElems), and checks the stride − rowElems gap elements
// after each row: an output buffer is filled with 0xFF bytes before a call, and a kernel must not
// write the gaps. The error names the first gap element written.
func UnpackRows(b []byte, rows, rowElems, stride int) ([]uint16, error) {
	if len(b) < 2*rows*stride {
		return nil, fmt.Errorf("output has %d bytes, expected at least %d (%d rows × stride %d × 2)", len(b), 2*rows*stride, rows, stride)
	}
	got := make([]uint16, rows*rowElems)
	for i := 0; i < rows; i++ {
		for j := 0; j < stride; j++ {
			v := binary.LittleEndian.Uint16(b[2*(i*stride+j):])
			if j >= rowElems {
				if v != 0xFFFF {
					return nil, fmt.Errorf("element %d of the %d-element gap after row %d (row stride %d > %d) was written: %#04x",
						j-rowElems, stride-rowElems, i, stride, rowElems, v)
				}
				continue
			}
			got[i*rowElems+j] = v
		}
	}
	return got, nil
}

// Int32Bytes encodes x as little-endian bytes.
func Int32Bytes(x []int32) []byte {
	b := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(v))
	}
	return b
}

// BytesInt32 decodes little-endian bytes as int32 (trailing bytes short of a word are ignored).
func BytesInt32(b []byte) []int32 {
	x := make([]int32, len(b)/4)
	for i := range x {
		x[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return x
}

// Int64Bytes encodes x as little-endian bytes.
func Int64Bytes(x []int64) []byte {
	b := make([]byte, 8*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(v))
	}
	return b
}

// Float64Bytes encodes x as little-endian IEEE binary64 bytes (NaN payloads and infinities
// kept).
func Float64Bytes(x []float64) []byte {
	b := make([]byte, 8*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(v))
	}
	return b
}

// Float32Bytes encodes x as little-endian IEEE binary32 bytes.
func Float32Bytes(x []float32) []byte {
	b := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

// SignWords returns a sign pattern's bit words (word w bit i set ⇔ dim 32w+i negated, as
// oracle.Signs.Words packs them) as the uint32[8] of the argument structs (KSigns, VSigns, Signs:
// head_size 256). Missing words are zero; words past the eighth are dropped.
func SignWords(words []uint32) [8]uint32 {
	var w [8]uint32
	copy(w[:], words)
	return w
}
