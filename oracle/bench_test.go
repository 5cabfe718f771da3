package oracle

import (
	"math/rand/v2"
	"testing"
)

// benchInputs returns n Gaussian K/V pairs rounded to fp16.
func benchInputs(n int) (ks, vs [][]float32) {
	r := rand.New(rand.NewPCG(1, 2))
	for range n {
		k, v := make([]float32, 256), make([]float32, 256)
		for i := range k {
			k[i] = F16ToF32(F32ToF16(float32(r.NormFloat64())))
			v[i] = F16ToF32(F32ToF16(float32(r.NormFloat64())))
		}
		ks, vs = append(ks, k), append(vs, v)
	}
	return
}

// BenchmarkQuantizeSlot measures rotate+quantize+pack of one (token, head) slot; slots/s is
// reported as a metric. Target (issue 2): ≥ 300k slots/s per core.
func BenchmarkQuantizeSlot(b *testing.B) {
	ks, vs := benchInputs(64)
	s := DefaultSigns(256)
	for _, id := range AllFormats {
		b.Run(id.String(), func(b *testing.B) {
			f := MustFormat(id, 256, 64)
			q, _ := NewQuantizer(f, s, s)
			dst := make([]byte, f.SlotBytes())
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				q.QuantizeInto(dst, ks[i%64], vs[i%64])
				i++
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "slots/s")
		})
	}
}

// BenchmarkDequantizeSlot measures decoding one slot to rotated-space K and V. Target: ≥ 1M
// slots/s per core.
func BenchmarkDequantizeSlot(b *testing.B) {
	ks, vs := benchInputs(64)
	s := DefaultSigns(256)
	for _, id := range AllFormats {
		b.Run(id.String(), func(b *testing.B) {
			f := MustFormat(id, 256, 64)
			q, _ := NewQuantizer(f, s, s)
			slots := make([][]byte, 64)
			for i := range slots {
				slots[i] = make([]byte, f.SlotBytes())
				q.QuantizeInto(slots[i], ks[i], vs[i])
			}
			dq := NewDequantizer(f)
			k, v := make([]float32, 256), make([]float32, 256)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				dq.DequantizeInto(k, v, slots[i%64])
				i++
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "slots/s")
		})
	}
}
