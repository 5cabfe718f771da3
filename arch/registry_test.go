package arch

import (
	"slices"
	"strings"
	"testing"
)

// TestMissingNativeKernels pins today's verdicts: gfx1100 and gfx942 require native decode and
// prefill tiers that this repository does not build, so both are not certifiable, with each
// missing kernel named; sm_90 and the emulator require only the portable tier, which is built.
func TestMissingNativeKernels(t *testing.T) {
	want := map[string][]string{
		"gfx1100": {"decode: the wmma tier's decode kernel is not built", "prefill: the wmma tier's prefill kernel is not built"},
		"gfx942":  {"decode: the mfma tier has no decode kernel", "prefill: the mfma tier has no prefill kernel"},
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
					if strings.HasPrefix(m, string(r.Op)+":") && strings.Contains(m, tn) {
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
