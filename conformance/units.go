package conformance

import (
	"fmt"
	"slices"
	"strings"
)

// SelectUnits keeps the units of the plan that names lists ("op/tier", as Unit.String), in the
// plan's order; nil names keeps every one. A name the plan lacks is an error listing the plan's.
// A run over a strict subset is partial: its certificate names the units it judged
// (Certificate.Partial) and never certifies.
func SelectUnits(units []Unit, names []string) ([]Unit, error) {
	if names == nil {
		return units, nil
	}
	var all []string
	for _, u := range units {
		all = append(all, u.String())
	}
	seen := map[string]bool{}
	for _, n := range names {
		if !slices.Contains(all, n) {
			return nil, fmt.Errorf("--units: unit %q is not in this run's plan: expected some of %s", n, strings.Join(all, ","))
		}
		if seen[n] {
			return nil, fmt.Errorf("--units: unit %q named twice, expected each once", n)
		}
		seen[n] = true
	}
	var out []Unit
	for _, u := range units {
		if seen[u.String()] {
			out = append(out, u)
		}
	}
	return out, nil
}

// narrow applies o.Units to the plan's units and records a partial run in c: the units judged,
// and a line of NotCertified for those left out.
func narrow(c *Certificate, units []Unit, o Options) ([]Unit, error) {
	sel, err := SelectUnits(units, o.Units)
	if err != nil || o.Units == nil {
		return sel, err
	}
	var left []string
	for _, u := range units {
		if !slices.Contains(sel, u) {
			left = append(left, u.String())
		}
	}
	c.Partial = []string{}
	for _, u := range sel {
		c.Partial = append(c.Partial, u.String())
	}
	if len(left) > 0 {
		c.NotCertified = append(c.NotCertified, fmt.Sprintf("a partial run (--units): %d of the plan's %d units judged; not judged: %s", len(sel), len(units), strings.Join(left, ", ")))
	} else {
		c.NotCertified = append(c.NotCertified, fmt.Sprintf("a partial run (--units): every unit of the plan named, but a run narrowed by --units never certifies (its %d units were chosen, not planned)", len(units)))
	}
	return sel, nil
}
