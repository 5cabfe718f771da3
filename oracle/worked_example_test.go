package oracle

import (
	"encoding/hex"
	"strings"
	"testing"
)

// The worked example of docs/format.md §9: small-integer inputs whose sums are exact, so the slot
// bytes do not depend on summation order. The expected bytes were computed independently in torch
// and in Go by the spec's authors.
func workedExample() (k, v []float32) {
	k = make([]float32, 256)
	v = make([]float32, 256)
	for d := range k {
		k[d] = float32((37*d+11)%7 - 3)
		v[d] = float32((53*d+5)%9 - 4)
	}
	return
}

var workedSlots = map[FormatID]string{
	K3V4: `54d218bb48a478745b4754b835ac74b61bba7c5ab35b74428b6d8abd65135ed7
f7e932eaf4826c52b4846498f97378447c35b8151855dec0cb938a96ad5f4de4
913290ffde6a2a5998dda54d71df09af30811263317d1d7b59fd036884947431
4688df50b815e9d11836d5c975b995786782bd6ac56887ba987fa8b6c314c7c6
33973b6876384838c6e88584767c95439311aa44aa9379e793c4c97788816666
c8d8a3b437c52d64be6b6da7966c8d9b8d467ad791c6576537b65137739b4a57
2d965442d3635c859dc1488aa5c35cb974383d98f95258764cc5779f8a4232c3
997b3bb264ad528e8d41644060405c403843000000000000`,
	K3V3: `54d218bb48a478745b4754b835ac74b61bba7c5ab35b74428b6d8abd65135ed7
f7e932eaf4826c52b4846498f97378447c35b8151855dec0cb938a96ad5f4de4
913290ffde6a2a5998dda54d71df09af30811263317d1d7b59fd036884947431
4688df50b815e9d1e0472ac8afc1365d902fb4b7f543854cfbec22925110c5f9
010af8ff78a865e63bed2e1702bbbdefd71758b796d3aa296298a841ce9486f0
1a8a5f93e06d9535816cbad70b615b5ae2877a823eba6320bb851d2e902e4480
cb1a553f3dd210eb8d41644060405c40cf41000000000000`,
	K3V3Compact: `89068fd40cb2ab9253e1718a646f6847316bf92a79fa11e6ce8f67953a1faa57
b7df66ff51369224b774d186763391f75514d4d07bd3687edb9d166cce8faede
548c0463b81579f11b7ea1a8858472a5b08220b3316b572e866add975807cbd1
e0472ac8afc1365d902fb4b7f543854cfbec22925110c5f9010af8ff78a865e6
3bed2e1702bbbdefd71758b796d3aa296298a841ce9486f01a8a5f93e06d9535
816cbad70b615b5ae2877a823eba6320bb851d2e902e4480cb1a553f3dd210eb
7040cf41`,
}

func TestWorkedExampleSlots(t *testing.T) {
	k, v := workedExample()
	s := DefaultSigns(256)
	for id, hexs := range workedSlots {
		want, err := hex.DecodeString(strings.ReplaceAll(hexs, "\n", ""))
		if err != nil {
			t.Fatal(err)
		}
		got, err := QuantizeSlot(MustFormat(id, 256, 64), k, v, s, s)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%v: slot %d bytes, want %d", id, len(got), len(want))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("%v: byte %d = %02x, docs/format.md §9 says %02x", id, i, got[i], want[i])
			}
		}
	}
}

func TestWorkedExampleIntermediates(t *testing.T) {
	k, v := workedExample()
	s := DefaultSigns(256)
	q, _ := NewQuantizer(MustFormat(K3V4, 256, 64), s, s)
	sl := q.Quantize(k, v)
	wantRot := []float32{-2.125, -2.875, 0.375, 2.125, -1.375, 2.875, -3.875, 1.875}
	for i, w := range wantRot {
		if sl.KRot[i] != w {
			t.Errorf("rotated K[%d] = %v, want %v", i, sl.KRot[i], w)
		}
	}
	wantCodes := []uint8{4, 2, 8, 11, 5, 13, 1, 11, 8, 4, 8, 4, 4, 10, 7, 7}
	for i, w := range wantCodes {
		if sl.Groups[0].Codes[i] != w {
			t.Errorf("K0 code %d = %d, want %d", i, sl.Groups[0].Codes[i], w)
		}
	}
	for i, w := range []struct {
		s32 float32
		s16 uint16
	}{{2.7749786, 0x418D}, {2.1960166, 0x4064}, {2.1866472, 0x4060}, {2.180196, 0x405C}, {3.608588, 0x4338}} {
		g := sl.Groups[i]
		if g.Scale32 != w.s32 || g.Scale16 != w.s16 {
			t.Errorf("group %d scale %v (%#04x), want %v (%#04x)", i, g.Scale32, g.Scale16, w.s32, w.s16)
		}
	}
}

func TestZeroSlots(t *testing.T) {
	z := make([]float32, 256)
	s := DefaultSigns(256)
	for _, id := range AllFormats {
		f := MustFormat(id, 256, 64)
		got, _ := QuantizeSlot(f, z, z, s, s)
		var want []byte
		rep := func(b byte, n int) {
			for range n {
				want = append(want, b)
			}
		}
		if f.Compact() {
			rep(0xff, 64)
			rep(0, 32)
		} else {
			rep(0x77, 32)
			rep(0xff, 48)
			rep(0, 24)
		}
		if f.VBits() == 4 {
			rep(0x77, 128)
		} else {
			rep(0xff, 64)
			rep(0, 32)
		}
		rep(0, f.SlotBytes()-len(want))
		if string(got) != string(want) {
			t.Errorf("%v: zero slot\n got %x\nwant %x", id, got, want)
		}
	}
}
