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
	Arch   arch.Arch
	Budget time.Duration // for random cases after the fixed ones (the fixed cases always run), unless CaseCount
	// CaseCount makes the random phase Cases random cases per unit (CaseList) instead of a
	// wall-clock Budget: the run's work is then the same on any machine.
	CaseCount bool
	Cases     int
	// Shard runs one part of a case-count run's case list (CaseList, ShardCases); nil: all of it.
	Shard    *Shard
	Fixed    int // fixed cases per unit: seeds 0..Fixed−1
	Seed     int // first seed of the random cases (at least Fixed)
	MinCases int // cases every op and tier must run for the certificate (at least 1 whatever is set)
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
// cases round-robin over the units, until the budget ends or, in a case-count run
// (o.CaseCount), o.Cases random cases per unit (CaseList). A required tier the library lacks is
// one failing case naming it. A shard (o.Shard) runs only its part of the case list. When ctx is
// done it stops between cases and returns the results so far with ctx's error.
func RunBattery(ctx context.Context, l *harness.Lib, units []Unit, o Options) ([]CaseResult, error) {
	if o.CaseCount {
		return runList(ctx, l, CaseList(l, units, o), o)
	}
	var out []CaseResult
	var live []Unit
	for _, u := range units {
		if !l.Offers(u.Op, u.libTier()) {
			out = append(out, missingTier(l, u))
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

// missingTier is the one failing case of a required unit whose tier the library does not offer.
func missingTier(l *harness.Lib, u Unit) CaseResult {
	return CaseResult{Path: u.String() + "/missing", Status: harness.Fail,
		Message: fmt.Sprintf("the library offers no %s tier for %s (tiers: %v); the architecture's certificate requires it", u.libTier(), u.Op, l.TierNames())}
}

// Planned is one case of a case-count run's case list: a seed of a unit, or the failing case of
// a required unit whose tier the library lacks (Missing).
type Planned struct {
	Unit    Unit
	Seed    uint64
	Missing bool
}

// CaseList is the case list of a case-count run (o.CaseCount) on units, in the order an unsharded
// run judges them: the missing-tier case of every required unit the library lacks, then every
// other unit's fixed seeds 0..o.Fixed−1 unit by unit, then o.Cases random seeds per unit drawn
// round-robin over those units from max(o.Seed, o.Fixed), the draw a budget run makes. It depends
// on the plan and the flags only, never on timing: case k of the list belongs to shard k mod n.
func CaseList(l *harness.Lib, units []Unit, o Options) []Planned {
	var list []Planned
	var live []Unit
	for _, u := range units {
		if !l.Offers(u.Op, u.libTier()) {
			list = append(list, Planned{Unit: u, Missing: true})
			continue
		}
		live = append(live, u)
	}
	for _, u := range live {
		for s := 0; s < o.Fixed; s++ {
			list = append(list, Planned{Unit: u, Seed: uint64(s)})
		}
	}
	seed := max(o.Seed, o.Fixed)
	for n := 0; n < o.Cases*len(live); n++ {
		list = append(list, Planned{Unit: live[n%len(live)], Seed: uint64(seed + n/len(live))})
	}
	return list
}

// ShardCases is shard i's part of a case list split n ways: the cases whose index k in the list
// has k mod n = i, in the list's order.
func ShardCases[T any](list []T, i, n int) []T {
	var out []T
	for k := i; k < len(list); k += n {
		out = append(out, list[k])
	}
	return out
}

// runList judges the case list (only o.Shard's part of it when o.Shard is set), in order.
func runList(ctx context.Context, l *harness.Lib, list []Planned, o Options) ([]CaseResult, error) {
	if o.Shard != nil {
		list = ShardCases(list, o.Shard.Index, o.Shard.Count)
	}
	var out []CaseResult
	start := time.Now()
	for k, p := range list {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		if p.Missing {
			out = append(out, missingTier(l, p.Unit))
			continue
		}
		out = append(out, p.Unit.Run(l, p.Seed, o))
		if (k+1)%50 == 0 || k+1 == len(list) {
			progress(o.Progress, "cases", k+1, len(list), start, 0)
		}
	}
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
