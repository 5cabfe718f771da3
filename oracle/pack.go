package oracle

import "fmt"

// Pack4 packs 4-bit codes (len a multiple of 8) into len/2 bytes (FORMAT.md §5): byte 4w+j holds
// dim 8w+j in its low nibble and dim 8w+j+4 in its high nibble.
func Pack4(dst []byte, codes []uint8) {
	n := len(codes)
	checkPack(n, 8, len(dst), n/2)
	for w := 0; w < n/8; w++ {
		c := codes[8*w : 8*w+8]
		d := dst[4*w : 4*w+4]
		for j := 0; j < 4; j++ {
			d[j] = c[j]&15 | (c[j+4]&15)<<4
		}
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
	for g := 0; g < n/16; g++ { // 16 dims → 4 bytes of the 2-bit plane
		c := codes[16*g : 16*g+16 : 16*g+16]
		o := lo[4*g : 4*g+4 : 4*g+4]
		for j := 0; j < 4; j++ {
			o[j] = c[j]&3 | (c[j+4]&3)<<2 | (c[j+8]&3)<<4 | (c[j+12]&3)<<6
		}
	}
	for g := 0; g < n/32; g++ { // 32 dims → 4 bytes of the 1-bit plane
		c := codes[32*g : 32*g+32 : 32*g+32]
		o := hi[4*g : 4*g+4 : 4*g+4]
		for j := 0; j < 4; j++ {
			var b byte
			for i := 0; i < 8; i++ {
				b |= (c[4*i+j] >> 2 & 1) << i
			}
			o[j] = b
		}
	}
}

// Unpack3 is the inverse of Pack3.
func Unpack3(codes []uint8, src []byte) {
	n := len(codes)
	checkPack(n, 32, len(src), 3*n/8)
	q := n / 4
	for d := range codes {
		lo := src[4*(d/16)+d%4] >> (2 * ((d % 16) / 4)) & 3
		hi := src[q+4*(d/32)+d%4] >> ((d % 32) / 4) & 1
		codes[d] = lo | hi<<2
	}
}

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
