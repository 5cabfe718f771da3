package conformance

import (
	"fmt"
	"io"
	"time"

	"github.com/octant-kv/octant/arch"
	"github.com/octant-kv/octant/harness"
)

// Options configure a runtime certification.
type Options struct {
	Arch     arch.Arch
	Budget   time.Duration // for random cases after the fixed ones (the fixed cases always run)
	Fixed    int           // fixed cases per unit: seeds 0..Fixed−1
	Seed     int           // first seed of the random cases (at least Fixed)
	MinCases int           // cases every op and tier must run for the certificate (0: no minimum)
	// Model runs the architecture's native tiers as the library's "<tier>-model" tiers
	// (ModelTier): the same kernel source on a model of the instructions the device lacks.
	Model    bool
	OutDir   string // reproducers of failing cases go to OutDir/regressions
	Progress io.Writer
}

// RunBattery runs the battery on l: for every unit, its fixed cases, then random cases
// round-robin over the units until the budget ends. A required tier the library lacks is one
// failing case naming it.
func RunBattery(l *harness.Lib, o Options) []CaseResult {
	var out []CaseResult
	var live []Unit
	for _, u := range Units(o.Arch.Requires) {
		if o.Model && u.Tier != harness.PortableImpl {
			u.LibTier = ModelTier(u.Tier)
		}
		if !l.Offers(u.Op, u.libTier()) {
			out = append(out, CaseResult{Path: u.String() + "/missing", Status: harness.Fail,
				Message: fmt.Sprintf("the library offers no %s tier for %s (tiers: %v); the architecture's certificate requires it", u.libTier(), u.Op, l.TierNames())})
			continue
		}
		live = append(live, u)
	}
	start := time.Now()
	for _, u := range live {
		for s := 0; s < o.Fixed; s++ {
			out = append(out, u.Run(l, uint64(s), o.OutDir))
		}
		progress(o.Progress, u.String(), o.Fixed, o.Fixed, start, o.Budget)
	}
	seed := max(o.Seed, o.Fixed)
	n := 0
	for len(live) > 0 && time.Since(start) < o.Budget {
		u := live[n%len(live)]
		out = append(out, u.Run(l, uint64(seed+n/len(live)), o.OutDir))
		n++
		if n%len(live) == 0 && n/len(live)%10 == 0 {
			progress(o.Progress, "random", n, 0, start, o.Budget)
		}
	}
	progress(o.Progress, "random", n, n, start, o.Budget)
	return out
}

func progress(w io.Writer, what string, done, total int, start time.Time, budget time.Duration) {
	if w == nil {
		return
	}
	el := time.Since(start).Round(time.Second)
	rem := max(budget-time.Since(start), 0).Round(time.Second)
	if total > 0 {
		fmt.Fprintf(w, "conform: %-18s %d/%d cases, elapsed %v, remaining %v\n", what, done, total, el, rem)
	} else {
		fmt.Fprintf(w, "conform: %-18s %d cases, elapsed %v, remaining %v\n", what, done, el, rem)
	}
}
