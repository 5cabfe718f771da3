package oracle

import (
	"math/rand/v2"
	"testing"
)

// attBenchInput is one query (Hq = 6, Hkv = 1) over 32768 tokens of a k3v4 cache (block size 16).
// The slots hold random code bytes with fp16 scales in [0.5, 2): the benchmark measures the token
// loop, which does not depend on how the codes were made.
func attBenchInput(tokens int) *DecodeInput {
	f := MustFormat(K3V4, KernelHeadSize, KernelRopeDim)
	bs := 16
	nb := tokens / bs
	rng := rand.New(rand.NewPCG(7, 7))
	data := make([]byte, CacheBytes(f, nb, 1, bs))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	c, err := NewCacheLBHNC(f, data, nb, 1, bs)
	if err != nil {
		panic(err)
	}
	for b := 0; b < nb; b++ {
		for t := 0; t < bs; t++ {
			s := c.Slot(b, 0, t)
			for g := 0; g < f.NumScales(); g++ {
				putU16(s[f.OffScales()+2*g:], F32ToF16(float32(0.5+1.5*rng.Float64())))
			}
		}
	}
	bt := make([]int32, nb)
	for i, p := range rng.Perm(nb) {
		bt[i] = int32(p)
	}
	q := make([]float32, 6*f.HeadSize)
	for i := range q {
		q[i] = attF16Rand(rng, 1)
	}
	return &DecodeInput{Cache: c, Query: q, NumQHeads: 6, BlockTable: bt, NumReqs: 1, MaxBlocks: nb,
		QToReq: []int32{0}, QToKlen: []int32{int32(tokens)}, SMScale: 1.0 / 16, KSigns: DefaultSigns(256), VSigns: DefaultSigns(256)}
}

// BenchmarkExactDecode32k is the performance target of the exact decode: one query, 32768
// tokens, G = 6 (Hq 6, Hkv 1), one core; it must stay under 150 ms per call
// (docs/performance.md, "Oracle benchmarks").
func BenchmarkExactDecode32k(b *testing.B) {
	in := attBenchInput(32768)
	b.ResetTimer()
	for b.Loop() {
		if _, err := ExactDecode(in); err != nil {
			b.Fatal(err)
		}
	}
}
