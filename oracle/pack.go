package oracle

import (
	"encoding/binary"
	"fmt"
)

// Pack4 packs 4-bit codes (len a multiple of 8) into len/2 bytes (docs/format.md §5): byte 4w+j holds
// dim 8w+j in its low nibble and dim 8w+j+4 in its high nibble.
func Pack4(dst []byte, codes []uint8) {
	n := len(codes)
	checkPack(n, 8, len(dst), n/2)
	// As a little-endian uint64: codes 8w..8w+3 are the low nibbles, 8w+4..8w+7 (shifted down by
	// 28 into the empty high nibbles) the high ones.
	for w := 0; w < n/8; w++ {
		c := binary.LittleEndian.Uint64(codes[8*w:]) & 0x0F0F0F0F0F0F0F0F
		binary.LittleEndian.PutUint32(dst[4*w:], uint32(c|c>>28))
	}
}

// Unpack4 is the inverse of Pack4.
func Unpack4(codes []uint8, src []byte) {
	n := len(codes)
	checkPack(n, 8, len(src), n/2)
	for w := 0; w < n/8; w++ {
		s := src[4*w : 4*w+4]
		for j := 0; j < 4; j++ {
			codes[8*w+j] = s[j] & 15
			codes[8*w+j+4] = s[j] >> 4
		}
	}
}

// Pack3 packs 3-bit codes (len n a multiple of 32) into 3n/8 bytes: a 2-bit plane of n/4 bytes
// (dim d in byte 4(d/16)+d%4 at bit 2((d%16)/4)) followed by a 1-bit plane of n/8 bytes (dim d in
// byte n/4+4(d/32)+d%4 at bit (d%32)/4).
func Pack3(dst []byte, codes []uint8) {
	n := len(codes)
	checkPack(n, 32, len(dst), 3*n/8)
	lo, hi := dst[:n/4], dst[n/4:3*n/8]
	// docs/format.md §5's word form: in the lo word of dims 16g..16g+15, bits 2i..2i+1 of each byte hold
	// dims 16g+4i..+3; in the hi word of dims 32g..32g+31, bit i of each byte holds the top bits of
	// dims 32g+4i..+3. Eight codes are one little-endian uint64 (two such four-dim fields).
	for g := 0; g < n/32; g++ {
		c := codes[32*g : 32*g+32 : 32*g+32]
		w0 := binary.LittleEndian.Uint64(c[0:])
		w1 := binary.LittleEndian.Uint64(c[8:])
		w2 := binary.LittleEndian.Uint64(c[16:])
		w3 := binary.LittleEndian.Uint64(c[24:])
		binary.LittleEndian.PutUint32(lo[8*g:], low2(w0)|low2(w1)<<4)
		binary.LittleEndian.PutUint32(lo[8*g+4:], low2(w2)|low2(w3)<<4)
		binary.LittleEndian.PutUint32(hi[4*g:], bit2(w0)|bit2(w1)<<2|bit2(w2)<<4|bit2(w3)<<6)
	}
}

// low2 gathers bits 0-1 of eight code bytes: those of bytes j and j+4 land in bits 0-1 and 2-3 of
// byte j (the high half shifted down by 30 meets the low half's empty bits).
func low2(w uint64) uint32 {
	l := w & 0x0303030303030303
	return uint32(l | l>>30)
}

// bit2 gathers bit 2 of eight code bytes: those of bytes j and j+4 land in bits 0 and 1 of byte j.
func bit2(w uint64) uint32 {
	h := w >> 2 & 0x0101010101010101
	return uint32(h | h>>31)
}

// Unpack3 is the inverse of Pack3.
func Unpack3(codes []uint8, src []byte) {
	n := len(codes)
	checkPack(n, 32, len(src), 3*n/8)
	q := n / 4
	// Value d = 32b + j: its low 2 bits are bits 8·(4·(j/16) + j%4) + 2·((j%16)/4) of the 8 plane
	// bytes src[8b:8b+8] (little-endian), its high bit is bit 8·(j%4) + j/4 of src[q+4b:q+4b+4].
	for b := 0; b < n/32; b++ {
		lo := binary.LittleEndian.Uint64(src[8*b:])
		hi := binary.LittleEndian.Uint32(src[q+4*b:])
		c := codes[32*b : 32*b+32]
		for j := range c {
			c[j] = uint8(lo>>unpack3Lo[j])&3 | uint8(hi>>unpack3Hi[j])&1<<2
		}
	}
}

var unpack3Lo, unpack3Hi = func() (lo, hi [32]uint8) {
	for j := 0; j < 32; j++ {
		lo[j] = uint8(8*(4*(j/16)+j%4) + 2*((j%16)/4))
		hi[j] = uint8(8*(j%4) + j/4)
	}
	return
}()

// PackCodes packs with the given width.
func PackCodes(dst []byte, codes []uint8, bits int) {
	if bits == 4 {
		Pack4(dst, codes)
	} else {
		Pack3(dst, codes)
	}
}

// UnpackCodes unpacks with the given width.
func UnpackCodes(codes []uint8, src []byte, bits int) {
	if bits == 4 {
		Unpack4(codes, src)
	} else {
		Unpack3(codes, src)
	}
}

func checkPack(n, mult, have, need int) {
	if n%mult != 0 {
		panic(fmt.Sprintf("oracle: packing %d codes: expected a multiple of %d", n, mult))
	}
	if have < need {
		panic(fmt.Sprintf("oracle: packing %d codes needs %d bytes, buffer has %d", n, need, have))
	}
}
