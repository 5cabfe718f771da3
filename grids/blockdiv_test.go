package grids

// The block index of the mma decode and the mma prefill's prefix (csrc/octave_params.h:
// oct_bs_magic on the host, oct_bs_div in the kernels): t / block_size as a multiply and a shift,
// which must be exact for every token position t < 2^31 and every block size the ABI accepts (1 …
// INT32_MAX). The decode and prefill tests reach only the block sizes of their grids (16, 32, 48, 64 and a few more); this test reaches the rest through the
// test entry point octave_blockdiv_selftest (host code, the same functions), against Go's division:
// every block size's multiples ± 1 near 0, near 2^31 and at random, for small, odd, power-of-two
// and near-2^31 block sizes and random ones.
//
//	OCTANT_LIB=$PWD/build/liboctave_emu.so go test ./grids/ -run TestBlockIndexDivision -v

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"unsafe"

	"github.com/octant-kv/octant/kernels"
)

func TestBlockIndexDivision(t *testing.T) {
	l, _ := openSelftest(t)
	var fn func(int32, uintptr, uintptr, int64) int32
	if err := l.BindSelftest("octave_blockdiv_selftest", &fn); err != nil {
		t.Fatal(err)
	}
	div := func(bs int32, ts []uint32) ([]uint32, error) {
		q := make([]uint32, len(ts))
		var tp, qp uintptr
		if len(ts) > 0 {
			tp, qp = uintptr(unsafe.Pointer(&ts[0])), uintptr(unsafe.Pointer(&q[0]))
		}
		err := l.CallSelftest("octave_blockdiv_selftest", func() int32 { return fn(bs, tp, qp, int64(len(ts))) })
		return q, err
	}

	const tMax = math.MaxInt32 // the largest token position (a klen is an int32)
	rng := rand.New(rand.NewPCG(1, 2))
	sizes := []int32{1, 2, 3, 5, 7, 16, 17, 31, 48, 100, 255, 1000, 4096, 65535, 65537, 1<<30 - 1, 1 << 30, 1<<30 + 1,
		1431655765, math.MaxInt32 - 1, math.MaxInt32}
	for range 200 {
		sizes = append(sizes, 1+rng.Int32N(math.MaxInt32))
	}
	for range 50 {
		sizes = append(sizes, 1+rng.Int32N(1<<12))
	}
	cases := 0
	for _, bs := range sizes {
		b := int64(bs)
		var ts []uint32
		add := func(v int64) {
			if v >= 0 && v <= tMax {
				ts = append(ts, uint32(v))
			}
		}
		for k := int64(0); k < 64; k++ { // the first blocks' edges
			add(k*b - 1)
			add(k * b)
			add(k*b + 1)
		}
		last := tMax / b
		for k := last - 64; k <= last+1; k++ { // the last blocks' edges, below 2^31
			add(k*b - 1)
			add(k * b)
			add(k*b + 1)
		}
		for range 2000 {
			k := rng.Int64N(last + 1)
			add(k*b - 1)
			add(k * b)
			add(k*b + b - 1)
			add(rng.Int64N(tMax + 1))
		}
		add(tMax)
		q, err := div(bs, ts)
		if err != nil {
			t.Fatalf("block size %d: %v", bs, err)
		}
		bad := 0
		for i, v := range ts {
			if want := v / uint32(bs); q[i] != want {
				if bad++; bad <= 3 {
					t.Errorf("block size %d: token %d: block index %d, expected %d", bs, v, q[i], want)
				}
			}
		}
		if bad > 3 {
			t.Errorf("block size %d: %d of %d token positions wrong", bs, bad, len(ts))
		}
		cases += len(ts)
	}
	t.Logf("%d block sizes, %d token positions", len(sizes), cases)

	// Bad input is refused with a message, never divided.
	for _, c := range []struct {
		bs   int32
		ts   []uint32
		word string
	}{
		{0, []uint32{1}, "block_size = 0"},
		{-16, []uint32{1}, "block_size = -16"},
		{16, []uint32{5, 1 << 31}, "t[1] = 2147483648"},
	} {
		_, err := div(c.bs, c.ts)
		if ke, ok := err.(*kernels.Error); !ok || ke.Status != kernels.ErrInvalidArgument || !strings.Contains(ke.Message, c.word) {
			t.Errorf("blockdiv_selftest(%d, %v): got %v, expected INVALID_ARGUMENT with a message holding %q", c.bs, c.ts, err, c.word)
		}
	}
	if q, err := div(16, nil); err != nil || len(q) != 0 {
		t.Errorf("no positions: %v, %v", q, err)
	}
}
