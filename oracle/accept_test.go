package oracle

import (
	"math"
	"testing"

	"pgregory.net/rapid"
)

// genSlotInput draws K and V of one of several kinds, including the structured kinds that put y
// exactly on thresholds (constant, spike, all-zero).
func genSlotInput(t *rapid.T) (k, v []float32) {
	gen := func(label string) []float32 {
		switch rapid.IntRange(0, 4).Draw(t, label+"-kind") {
		case 0: // constant
			c := F16ToF32(F32ToF16(float32(rapid.Float64Range(-100, 100).Draw(t, label+"-c"))))
			x := make([]float32, 256)
			for i := range x {
				x[i] = c
			}
			return x
		case 1: // single spike
			x := make([]float32, 256)
			x[rapid.IntRange(0, 255).Draw(t, label+"-at")] = F16ToF32(F32ToF16(float32(rapid.Float64Range(-1000, 1000).Draw(t, label+"-s"))))
			return x
		case 2:
			return make([]float32, 256)
		default:
			return genValues(t, 256, label)
		}
	}
	return gen("k"), gen("v")
}

func TestOracleSlotsAcceptedIdentical(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		f := MustFormat(rapid.SampledFrom(AllFormats).Draw(t, "fmt"), 256, 64)
		ks, vs := genSigns(t, 256), genSigns(t, 256)
		k, v := genSlotInput(t)
		slot, err := QuantizeSlot(f, k, v, ks, vs)
		if err != nil {
			t.Fatal(err)
		}
		sv, err := AcceptSlot(f, k, v, slot, ks, vs)
		if err != nil {
			t.Fatal(err)
		}
		if sv.Verdict != Identical || !sv.ByteIdentical {
			t.Fatalf("the oracle's own slot is %s (byte identical %v): %s", sv.Verdict, sv.ByteIdentical, sv.Summary())
		}
	})
}

// TestBitFlipsUnexplained flips one code or scale bit of an oracle slot. Unless the flipped code
// sits on a rounding tie (|y − t| ≤ δ|t|) or the flipped scale bit moves to the other side of an
// fp16 midpoint within δ, the verdict must be Unexplained.
func TestBitFlipsUnexplained(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		f := MustFormat(rapid.SampledFrom(AllFormats).Draw(t, "fmt"), 256, 64)
		s := DefaultSigns(256)
		k, v := genSlotInput(t)
		q, _ := NewQuantizer(f, s, s)
		sl := q.Quantize(k, v)
		end := f.OffScales() + 2*f.NumScales()
		bit := rapid.IntRange(0, 8*end-1).Draw(t, "bit")
		bad := append([]byte(nil), sl.Bytes...)
		bad[bit/8] ^= 1 << (bit % 8)
		sv, err := AcceptSlot(f, k, v, bad, s, s)
		if err != nil {
			t.Fatal(err)
		}
		if sv.Verdict == Unexplained {
			return
		}
		// Not refused: it must be a genuine tie, which we re-derive independently here.
		for _, g := range sv.Groups {
			for _, d := range g.Diffs {
				if d.Margin > TieMargin && d.Rule != "scale-of-stored-codes" {
					t.Fatalf("flip of bit %d accepted with margin %g > δ: %s", bit, d.Margin, sv.Summary())
				}
				if d.Dim >= 0 {
					x := sl.KRot
					if g.Group.IsV {
						x = sl.VRot
					}
					xv := x[g.Group.Dim0+d.Dim]
					var ss float64
					for _, w := range x[g.Group.Dim0 : g.Group.Dim0+g.Group.N] {
						ss += float64(w) * float64(w)
					}
					y := float64(xv) / math.Sqrt(ss/float64(g.Group.N)) * float64(LUTMult(g.Group.Bits))
					tt := float64(Thresholds(g.Group.Bits)[min(d.Stored, d.Exact)])
					if math.Abs(y-tt) > 1e-5*math.Max(1, math.Abs(tt)) {
						t.Fatalf("flip of bit %d accepted as a tie but y = %g is %g from threshold %g", bit, y, y-tt, tt)
					}
				}
			}
		}
		if sv.Verdict == Identical {
			t.Fatalf("flip of bit %d not noticed", bit)
		}
	})
}

func TestAcceptRefusesDefects(t *testing.T) {
	f := MustFormat(K3V4, 256, 64)
	s := DefaultSigns(256)
	k, v := workedExample()
	slot, _ := QuantizeSlot(f, k, v, s, s)
	// Wrong sign pattern for V: codes of a different rotation.
	other := append(Signs(nil), s...)
	other[3] = !other[3]
	bad, _ := QuantizeSlot(f, k, v, s, other)
	if sv, _ := AcceptSlot(f, k, v, bad, s, s); sv.Verdict != Unexplained {
		t.Errorf("slot written with another V sign pattern: %s", sv.Summary())
	}
	// Pad bytes are ignored but reported.
	padded := append([]byte(nil), slot...)
	padded[len(padded)-1] = 0xEE
	sv, _ := AcceptSlot(f, k, v, padded, s, s)
	if sv.Verdict != Identical || sv.ByteIdentical || !sv.PadNonZero {
		t.Errorf("non-zero pad: verdict %s, byte identical %v, pad flagged %v", sv.Verdict, sv.ByteIdentical, sv.PadNonZero)
	}
	// Errors, not panics, on bad shapes.
	if _, err := AcceptSlot(f, k[:100], v, slot, s, s); err == nil {
		t.Error("short K accepted")
	}
	if _, err := AcceptSlot(f, k, v, slot[:100], s, s); err == nil {
		t.Error("short slot accepted")
	}
}

func TestAcceptHazards(t *testing.T) {
	f := MustFormat(K3V4, 256, 64)
	s := DefaultSigns(256)
	huge := make([]float32, 256)
	for i := range huge {
		huge[i] = BF16ToF32(F32ToBF16(1e5)) // σ ≈ 1e5: the V scale overflows fp16
	}
	zero := make([]float32, 256)
	slot, _ := QuantizeSlot(f, zero, huge, s, s)
	sv, _ := AcceptSlot(f, zero, huge, slot, s, s)
	hz := map[string]bool{}
	for _, h := range sv.Hazards() {
		hz[h] = true
	}
	if !hz["V:scale-overflow"] || !hz["K0:zero-group"] || sv.Verdict != Identical {
		t.Errorf("hazards %v, verdict %s", sv.Hazards(), sv.Verdict)
	}
	// Non-finite input: must decode to zero (rule 4).
	nan := append([]float32(nil), zero...)
	nan[5] = float32(math.NaN())
	slot, _ = QuantizeSlot(f, nan, zero, s, s)
	sv, _ = AcceptSlot(f, nan, zero, slot, s, s)
	if sv.Verdict == Unexplained || !hz["K0:zero-group"] {
		t.Errorf("oracle's NaN slot: %s", sv.Summary())
	}
	// Block-K rotates in 64-dim blocks: the NaN reaches K0 only.
	for i, g := range sv.Groups[:4] {
		want := HazardZeroGroup
		if i == 0 {
			want = HazardNonFinite
		}
		if len(g.Hazards) == 0 || g.Hazards[0] != want {
			t.Errorf("group %s: hazards %v, want %s", g.Group.Name, g.Hazards, want)
		}
	}
	bad := append([]byte(nil), slot...)
	bad[f.OffScales()] = 0x00
	bad[f.OffScales()+1] = 0x7e // NaN scale: decodes to NaN, not zero
	if sv, _ := AcceptSlot(f, nan, zero, bad, s, s); sv.Verdict != Unexplained {
		t.Errorf("NaN scale on non-finite input accepted: %s", sv.Summary())
	}
}

// TestAcceptSSOverflow: bf16 inputs large enough that Σx² overflows float32 must not make the
// oracle refuse its own slot; the hazard is reported.
func TestAcceptSSOverflow(t *testing.T) {
	f := MustFormat(K3V3, 256, 64)
	s := DefaultSigns(256)
	k := make([]float32, 256)
	for i := range k {
		k[i] = BF16ToF32(F32ToBF16(float32(1e19 * float64(1+i%3))))
	}
	z := make([]float32, 256)
	slot, _ := QuantizeSlot(f, z, k, s, s)
	sv, _ := AcceptSlot(f, z, k, slot, s, s)
	if sv.Verdict != Identical {
		t.Fatalf("oracle's slot for overflowing ss: %s", sv.Summary())
	}
	found := false
	for _, h := range sv.Hazards() {
		found = found || h == "V:ss-overflow"
	}
	if !found {
		t.Errorf("hazards %v, want V:ss-overflow", sv.Hazards())
	}
}
