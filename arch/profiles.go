package arch

import (
	"fmt"
	"slices"
	"strings"
)

// AllowedProfiles lists the profiles a kernel library's tier may declare for op: the profile
// every architecture that registers the tier (name.Base()) gives it, and the profiles of the
// tier's builds that this repository makes and tests (Tier.VariantProfiles). A library that
// declares any other profile for the tier is judged a Fail by every caller (harness): a judge
// holds a tier to the arithmetic the registry says it has, not to what the library chooses to
// claim. The error says why nothing is allowed: no architecture registers the tier, or none gives
// it op.
func AllowedProfiles(name TierName, op Op) ([]string, error) {
	base := name.Base()
	var out []string
	registered := false
	for _, a := range registry {
		t, ok := a.Tier(base)
		if !ok {
			continue
		}
		registered = true
		if !t.Implements(op) {
			continue
		}
		for _, p := range append([]string{t.Profile(op)}, t.VariantProfiles[op]...) {
			if !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	switch {
	case !registered:
		return nil, fmt.Errorf("tier %q is not in the architecture registry (arch/registry.go): expected a registered tier name (%s) or one of them with %q", name, JoinTiers(TierNames()), ModelSuffix)
	case len(out) == 0:
		return nil, fmt.Errorf("tier %q: no architecture registers a %s profile for the %s tier", name, op, base)
	}
	return out, nil
}

// CheckProfile returns an error when profile is not one AllowedProfiles gives the library's tier
// name for op.
func CheckProfile(name TierName, op Op, profile string) error {
	allowed, err := AllowedProfiles(name, op)
	if err != nil {
		return err
	}
	if !slices.Contains(allowed, profile) {
		return fmt.Errorf("tier %s declares %s profile %q; the registry allows %s for the %s tier (arch/registry.go): a library is held to its tier's registered arithmetic, not to a profile of its own choosing",
			name, op, profile, quoteAll(allowed), name.Base())
	}
	return nil
}

// TierNames lists every registered tier name once, in registry order.
func TierNames() []TierName {
	var out []TierName
	for _, a := range registry {
		for _, t := range a.Tiers {
			if !slices.Contains(out, t.Name) {
				out = append(out, t.Name)
			}
		}
	}
	return out
}

func quoteAll(ps []string) string {
	q := make([]string, len(ps))
	for i, p := range ps {
		q[i] = fmt.Sprintf("%q", p)
	}
	return strings.Join(q, " or ")
}

// JoinTiers joins tier names with ", " for a message.
func JoinTiers(ns []TierName) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = string(n)
	}
	return strings.Join(s, ", ")
}
