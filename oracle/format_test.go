package oracle

import (
	"strings"
	"testing"
)

func TestFormatTable(t *testing.T) {
	// docs/format.md §5's table for head 256, rope 64, and the bits per value the issue states.
	for _, c := range []struct {
		id                                   FormatID
		name                                 string
		offNope, offV, offScales, scales, sb int
		bpv                                  string
	}{
		{K3V4, "octave_k3v4", 32, 104, 232, 5, 248, "3.88"},
		{K3V3, "octave_k3v3", 32, 104, 200, 5, 216, "3.38"},
		{K3V3Compact, "octave_k3v3_compact", 0, 96, 192, 2, 196, "3.06"},
	} {
		f, err := KernelFormat(c.id)
		if err != nil {
			t.Fatal(err)
		}
		if f.Name() != c.name || f.OffKNope() != c.offNope || f.OffV() != c.offV || f.OffScales() != c.offScales ||
			f.NumScales() != c.scales || f.SlotBytes() != c.sb {
			t.Errorf("%v: name %s offsets %d/%d/%d scales %d slot %d; want %s %d/%d/%d %d %d", c.id, f.Name(),
				f.OffKNope(), f.OffV(), f.OffScales(), f.NumScales(), f.SlotBytes(), c.name, c.offNope, c.offV, c.offScales, c.scales, c.sb)
		}
		if got := fmtFloat(f.BitsPerValue()); got != c.bpv {
			t.Errorf("%v: %v bits per value, want %s", c.id, f.BitsPerValue(), c.bpv)
		}
		id, err := ParseFormatID(c.name)
		if err != nil || id != c.id || id.String() != c.name {
			t.Errorf("ParseFormatID(%q) = %v, %v", c.name, id, err)
		}
		if id, err := ParseFormatID(sprintInt(int(c.id))); err != nil || id != c.id {
			t.Errorf("ParseFormatID(%d) = %v, %v", c.id, id, err)
		}
		// Groups tile the code sections without overlap and scales are consecutive.
		seen := map[int]bool{}
		for i, g := range f.Groups() {
			if g.ScaleOff != f.OffScales()+2*i {
				t.Errorf("%v group %s scale at %d, want %d", c.id, g.Name, g.ScaleOff, f.OffScales()+2*i)
			}
			for d := g.Dim0; d < g.Dim0+g.N; d++ {
				key := d
				if g.IsV {
					key += 10000
				}
				if seen[key] {
					t.Errorf("%v: dim %d in two groups", c.id, d)
				}
				seen[key] = true
			}
		}
		if len(seen) != 2*f.HeadSize {
			t.Errorf("%v: groups cover %d dims, want %d", c.id, len(seen), 2*f.HeadSize)
		}
	}
}

func TestFormatValidation(t *testing.T) {
	for _, c := range []struct {
		id         FormatID
		d, r       int
		wantSubstr string
	}{
		{20, 256, 64, "not a kernel format"},
		{5, 256, 64, "not a kernel format"},
		{K3V4, 200, 64, "head_size 200"},
		{K3V4, 0, 0, "head_size 0"},
		{K3V4, 256, 32, "rope_dim 32"},
		{K3V4, 256, 320, "rope_dim 320"},
		{K3V3Compact, 192, 64, "power-of-two"},
	} {
		_, err := NewFormat(c.id, c.d, c.r)
		if err == nil || !strings.Contains(err.Error(), c.wantSubstr) {
			t.Errorf("NewFormat(%d, %d, %d) = %v, want an error mentioning %q", c.id, c.d, c.r, err, c.wantSubstr)
		}
	}
	if _, err := ParseFormatID("octave_k4v4"); err == nil || !strings.Contains(err.Error(), "expected one of") {
		t.Errorf("octave_k4v4 must not parse (docs/format.md §8.6): %v", err)
	}
	// Edge layouts the oracle accepts (docs/oracle.md): no rope blocks, all rope blocks, d = 192.
	for _, c := range [][3]int{{int(K3V4), 256, 0}, {int(K3V3), 256, 256}, {int(K3V4), 192, 64}, {int(K3V3Compact), 128, 0}} {
		f, err := NewFormat(FormatID(c[0]), c[1], c[2])
		if err != nil {
			t.Errorf("NewFormat%v: %v", c, err)
			continue
		}
		if f.SlotBytes()%4 != 0 || f.OffScales()+2*f.NumScales() > f.SlotBytes() {
			t.Errorf("%v: slot %d bytes, scales end at %d", f, f.SlotBytes(), f.OffScales()+2*f.NumScales())
		}
	}
}
