package arch

import (
	"slices"
	"strings"
	"testing"
)

// TestAllowedProfiles: a tier may declare the profile the registry gives it, a tested variant's,
// and nothing else; a model tier is held to its native tier's; an unregistered tier to nothing.
func TestAllowedProfiles(t *testing.T) {
	for _, c := range []struct {
		tier TierName
		op   Op
		want []string
	}{
		{"portable", Decode, []string{"dot4-int8q"}},
		{"portable", Prefill, []string{"prefill-fp32"}},
		{"wmma", Decode, []string{"wmma-f16q"}},
		{"wmma-model", Decode, []string{"wmma-f16q"}},
		{"wmma-model", Prefill, []string{"int8rowq+chunk-f16"}},
		{"mma-model", Decode, []string{"int8rowq", "wmma-f16q"}},
		{"mma", Prefill, []string{"int8rowq+chunk-f16"}},
	} {
		got, err := AllowedProfiles(c.tier, c.op)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("AllowedProfiles(%s, %s) = %q, %v; expected %q", c.tier, c.op, got, err, c.want)
		}
	}
	if err := CheckProfile("portable", Decode, "wmma-f16q"); err == nil || !strings.Contains(err.Error(), `the registry allows "dot4-int8q" for the portable tier`) {
		t.Errorf("portable declaring wmma-f16q: %v", err)
	}
	if err := CheckProfile("mma-model", Decode, "int8rowq"); err != nil {
		t.Errorf("mma-model declaring its own profile: %v", err)
	}
	if _, err := AllowedProfiles("fast", Decode); err == nil || !strings.Contains(err.Error(), `tier "fast" is not in the architecture registry`) {
		t.Errorf("an unregistered tier: %v", err)
	}
	if err := CheckProfile("mfma-model", Decode, "int8rowq"); err != nil {
		t.Errorf("mfma-model declaring its own profile: %v", err)
	}
	if err := CheckProfile("mfma", Decode, "wmma-f16q"); err == nil || !strings.Contains(err.Error(), `the registry allows "int8rowq" for the mfma tier`) {
		t.Errorf("mfma declaring the WMMA tier's decode profile: %v", err)
	}
}
