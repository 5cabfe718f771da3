package oracle

import "fmt"

// Signs is a sign pattern over head dims: Signs[i] is true when dim i is negated before the
// Hadamard transform (the kernels' sign_bits bit i set).
type Signs []bool

// mt19937 is the standard 32-bit Mersenne Twister (std::mt19937), the generator behind torch's CPU
// generator.
type mt19937 struct {
	mt  [624]uint32
	idx int
}

func newMT19937(seed uint32) *mt19937 {
	m := &mt19937{idx: 624}
	m.mt[0] = seed
	for j := 1; j < 624; j++ {
		p := m.mt[j-1]
		m.mt[j] = 1812433253*(p^(p>>30)) + uint32(j)
	}
	return m
}

func (m *mt19937) next() uint32 {
	if m.idx >= 624 {
		for i := 0; i < 624; i++ {
			y := m.mt[i]&0x80000000 | m.mt[(i+1)%624]&0x7fffffff
			v := m.mt[(i+397)%624] ^ (y >> 1)
			if y&1 != 0 {
				v ^= 0x9908b0df
			}
			m.mt[i] = v
		}
		m.idx = 0
	}
	y := m.mt[m.idx]
	m.idx++
	y ^= y >> 11
	y ^= (y << 7) & 0x9d2c5680
	y ^= (y << 15) & 0xefc60000
	y ^= y >> 18
	return y
}

// DefaultSigns reproduces the format's sign vector of length n (docs/format.md §2): sign i is −1 iff
// the i-th 32-bit output of MT19937 seeded with 0x5E17 is odd. Shorter vectors are prefixes.
func DefaultSigns(n int) Signs {
	m := newMT19937(SignSeed)
	s := make(Signs, n)
	for i := range s {
		s[i] = m.next()%2 == 1
	}
	return s
}

// SignsFromWords unpacks n signs from little-endian bit words (word w bit i ⇔ dim 32w+i negated).
func SignsFromWords(words []uint32, n int) (Signs, error) {
	if len(words)*32 < n {
		return nil, fmt.Errorf("oracle: %d sign words hold %d bits, need %d", len(words), 32*len(words), n)
	}
	s := make(Signs, n)
	for i := range s {
		s[i] = words[i/32]>>(i%32)&1 == 1
	}
	return s, nil
}

// SignsFromInt32 is SignsFromWords for two's-complement int32 words, as the kernels and the golden
// files store them.
func SignsFromInt32(words []int32, n int) (Signs, error) {
	u := make([]uint32, len(words))
	for i, w := range words {
		u[i] = uint32(w)
	}
	return SignsFromWords(u, n)
}

// Words packs the signs into ⌈n/32⌉ bit words.
func (s Signs) Words() []uint32 {
	w := make([]uint32, (len(s)+31)/32)
	for i, neg := range s {
		if neg {
			w[i/32] |= 1 << (i % 32)
		}
	}
	return w
}

// Int32Words is Words as two's-complement int32, the kernels' sign_bits form.
func (s Signs) Int32Words() []int32 {
	w := s.Words()
	r := make([]int32, len(w))
	for i, v := range w {
		r[i] = int32(v)
	}
	return r
}

// Factor returns ±1 for dim i.
func (s Signs) Factor(i int) float32 {
	if s[i] {
		return -1
	}
	return 1
}
