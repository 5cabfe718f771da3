package conformance

import (
	"context"
	"fmt"
	"io"
	"slices"
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
	MinCases int           // cases every op and tier must run for the certificate (at least 1 whatever is set)
	// Tiers narrows the library's tiers judged beyond the required ones (nil: every tier the
	// library lists). A required tier is judged whether or not it is named here.
	Tiers []arch.TierName
	// Units narrows the battery to the named units of the plan ("op/tier", Unit.String; nil:
	// every unit). A run narrowed so is partial: its certificate never certifies (SelectUnits).
	Units []string
	// Model runs the architecture's native tiers as the library's "<tier>-model" tiers
	// (ModelTier): the same kernel source on a model of the instructions the device lacks.
	Model    bool
	OutDir   string // reproducers of failing cases go to OutDir/regressions
	Progress io.Writer
	// CaseTimeout arms a watchdog around every case (0: none): a case that has not returned
	// after it is hung inside the library, which Go cannot interrupt; Hung is then called from
	// the watchdog's goroutine with the case, its reproducer written, and decides what happens
	// (the command reports it and exits non-zero).
	CaseTimeout time.Duration
	Hung        func(HungCase)
}

// HungCase is a case the watchdog found still running after Options.CaseTimeout.
type HungCase struct {
	Path   string        // the case's name, as in the certificate
	After  time.Duration // how long it had run
	Replay string        // the reproducer's replay command, or why none was written
}

// Plan returns the battery's units on l: every required (op, tier) of the architecture (on its
// model tier when o.Model) whose op l's declaration declares (every op for a C library), then every other tier l lists for decode and prefill (o.Tiers may
// narrow these, never the required ones), and notes for a person: a tier o.Tiers names that l
// lacks is an error.
func Plan(l *harness.Lib, o Options) (units []Unit, notes []string, err error) {
	for _, n := range o.Tiers {
		if !slices.Contains(l.TierNames(), n) {
			return nil, nil, fmt.Errorf("--tiers %s: the library offers no tier %q (tiers: %s)", arch.JoinTiers(o.Tiers), n, arch.JoinTiers(l.TierNames()))
		}
	}
	for _, u := range Units(o.Arch.Requires) {
		if !l.Decl.Declares(u.Op) {
			continue // not declared by the adapter (or its reduce inside decode): a narrowed certificate's evidence says so
		}
		if o.Model && u.Tier != arch.Portable {
			u.LibTier = u.Tier.Model()
		}
		if o.Tiers != nil && !slices.Contains(o.Tiers, u.libTier()) && l.Offers(u.Op, u.libTier()) {
			notes = append(notes, fmt.Sprintf("--tiers leaves out %s, which the certificate requires: judged all the same", u))
		}
		units = append(units, u)
	}
	for _, op := range []arch.Op{arch.Decode, arch.Prefill} {
		for _, t := range l.TierNames() {
			if !l.Offers(op, t) || slices.ContainsFunc(units, func(u Unit) bool { return u.Op == op && u.libTier() == t }) {
				continue
			}
			if o.Tiers != nil && !slices.Contains(o.Tiers, t) {
				notes = append(notes, fmt.Sprintf("%s/%s: listed by the library, left out by --tiers (not in this certificate)", op, t))
				continue
			}
			units = append(units, Unit{Op: op, Tier: t, Optional: true})
		}
	}
	return units, notes, nil
}

// RunBattery runs the battery's units (Plan) on l: for every unit, its fixed cases, then random
// cases round-robin over the units until the budget ends. A required tier the library lacks is
// one failing case naming it. When ctx is done it stops between cases and returns the results so
// far with ctx's error.
func RunBattery(ctx context.Context, l *harness.Lib, units []Unit, o Options) ([]CaseResult, error) {
	var out []CaseResult
	var live []Unit
	for _, u := range units {
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
			if err := ctx.Err(); err != nil {
				return out, err
			}
			out = append(out, u.Run(l, uint64(s), o))
		}
		progress(o.Progress, u.String(), o.Fixed, o.Fixed, start, o.Budget)
	}
	seed := max(o.Seed, o.Fixed)
	n := 0
	for len(live) > 0 && time.Since(start) < o.Budget {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		u := live[n%len(live)]
		out = append(out, u.Run(l, uint64(seed+n/len(live)), o))
		n++
		if n%len(live) == 0 && n/len(live)%10 == 0 {
			progress(o.Progress, "random", n, 0, start, o.Budget)
		}
	}
	progress(o.Progress, "random", n, n, start, o.Budget)
	return out, nil
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
