package arch

import (
	"slices"
	"strings"
	"testing"
)

// TestMissingNativeKernels pins the verdicts of the registry: gfx1100 and gfx942 require native
// decode and prefill tiers, and their wmma and mfma tiers have both, so nothing is missing there
// (a static certificate of either is NOT CERTIFIED only because nothing ran); sm_90 requires its
// mma tier (decode and prefill), which is built; the emulator requires only the portable tier.
func TestMissingNativeKernels(t *testing.T) {
	want := map[string][]string{
		"gfx1100": nil,
		"gfx942":  nil,
		"sm_90":   nil,
		"emu":     nil,
	}
	for _, a := range All() {
		w, ok := want[a.Name]
		if !ok {
			t.Errorf("%s: registered but not pinned by this test: add its expected verdict", a.Name)
			continue
		}
		got := a.Missing()
		if len(got) != len(w) {
			t.Errorf("%s: Missing() = %q, expected %d lines naming %q", a.Name, got, len(w), w)
			continue
		}
		for i := range w {
			if !strings.HasPrefix(got[i], w[i]) {
				t.Errorf("%s: Missing()[%d] = %q, expected it to start with %q", a.Name, i, got[i], w[i])
			}
		}
	}
}

// TestMissingWhenUnbuilt: for every registered architecture and every tier a certificate requires,
// marking that tier unbuilt makes the architecture not certifiable, with a line naming the op
// and the tier (the check that would have caught gfx1100 certified without its wmma kernels).
func TestMissingWhenUnbuilt(t *testing.T) {
	for _, a := range All() {
		for _, r := range a.Requires {
			for _, tn := range r.RequiredTiers() {
				b := a
				b.Tiers = slices.Clone(a.Tiers)
				i := slices.IndexFunc(b.Tiers, func(x Tier) bool { return x.Name == tn })
				if i < 0 {
					if len(a.Missing()) == 0 {
						t.Errorf("%s: requires unregistered tier %s for %s, yet Missing() is empty", a.Name, tn, r.Op)
					}
					continue
				}
				b.Tiers[i].Built = false
				found := false
				for _, m := range b.Missing() {
					if strings.HasPrefix(m, string(r.Op)+":") && strings.Contains(m, string(tn)) {
						found = true
					}
				}
				if !found {
					t.Errorf("%s with tier %s unbuilt: Missing() = %q, expected a line naming %s and %s", a.Name, tn, b.Missing(), r.Op, tn)
				}
				if !a.Tiers[i].Built {
					continue
				}
				// The registry itself is unchanged by the copy.
				if c, _ := Lookup(a.Name); !c.Tiers[i].Built {
					t.Fatalf("%s: marking a copy's tier unbuilt changed the registry", a.Name)
				}
			}
		}
	}
}

func TestParseOp(t *testing.T) {
	for _, o := range Ops() {
		if p, err := ParseOp(string(o)); err != nil || p != o {
			t.Errorf("ParseOp(%q) = %q, %v", o, p, err)
		}
	}
	if _, err := ParseOp("attend"); err == nil || !strings.Contains(err.Error(), "expected one of") {
		t.Errorf("ParseOp(attend): %v, expected an error listing the ops", err)
	}
}

// TestNotBuilt: an op listed in NotBuilt is missing although the tier is built, and only that op;
// gfx1100's wmma tier is built for decode and prefill.
func TestNotBuilt(t *testing.T) {
	a, _ := Lookup("gfx1100")
	w, ok := a.Tier("wmma")
	if !ok || !w.Built || !w.BuiltFor(Decode) || !w.BuiltFor(Prefill) || w.DecodeProfile != "wmma-f16q" ||
		w.PrefillProfile != "int8rowq+chunk-f16" {
		t.Fatalf("gfx1100 wmma tier %+v: expected built for decode (wmma-f16q) and prefill (int8rowq+chunk-f16)", w)
	}
	b := a
	b.Tiers = slices.Clone(a.Tiers)
	i := slices.IndexFunc(b.Tiers, func(x Tier) bool { return x.Name == "wmma" })
	b.Tiers[i].NotBuilt = []Op{Prefill}
	if m := b.Missing(); len(m) != 1 || !strings.HasPrefix(m[0], "prefill: the wmma tier's prefill kernel is not built") {
		t.Errorf("wmma with prefill not built: Missing() = %q", m)
	}
	b.Tiers[i].NotBuilt = []Op{Decode, Prefill}
	if m := b.Missing(); len(m) != 2 || !strings.HasPrefix(m[0], "decode: the wmma tier's decode kernel is not built") {
		t.Errorf("wmma with decode and prefill not built: Missing() = %q", m)
	}
	b.Tiers[i].NotBuilt = nil
	if m := b.Missing(); len(m) != 0 {
		t.Errorf("wmma with everything built: Missing() = %q, expected nothing", m)
	}
}
