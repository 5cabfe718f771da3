package conformance

import (
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/octant-kv/octant/arch"
	"github.com/octant-kv/octant/fuzz"
)

// Options configure a runtime certification.
type Options struct {
	Arch     arch.Arch
	Budget   time.Duration // total; the fixed cases always run
	Fixed    int           // fixed cases per unit (seeds 0..Fixed−1)
	Seed     int           // first seed of the random cases (≥ Fixed)
	OutDir   string        // reproducers of failing cases go to OutDir/regressions
	Progress io.Writer
}

// RunBattery runs the battery on g: for every unit, its fixed cases, then random cases round-robin
// until the budget ends. A required tier the library lacks is one Fail case naming it.
func RunBattery(g *fuzz.GPU, o Options) []CaseResult {
	units := Units(o.Arch.Requires)
	var out []CaseResult
	var live []Unit
	for _, u := range units {
		if !tierPresent(g, u.Op, u.Tier) {
			out = append(out, CaseResult{Path: u.Op + "/" + u.Tier + "/missing", Status: Fail,
				Message: fmt.Sprintf("the library offers no %s tier for %s (tiers: %v); the architecture's certificate requires it", u.Tier, u.Op, tierNames(g))})
			continue
		}
		live = append(live, u)
	}
	start := time.Now()
	var worst float64
	g.Observe = func(_ string, r float64) { worst = max(worst, r) }
	defer func() { g.Observe = nil }()
	runOne := func(u Unit, seed int) {
		t0 := time.Now()
		worst = 0
		path, c, err := u.run(g, seed)
		st, be := statusOf(err)
		r := CaseResult{Path: fmt.Sprintf("%s/seed%d", path, seed), Status: st, Seconds: time.Since(t0).Seconds()}
		if err != nil {
			r.Message = err.Error()
		}
		r.BoundErr = worst
		if be != nil {
			r.RelL2, r.BoundErr = be.RelL2, be.Ratio
		}
		if st == Fail {
			r.Replay = reproducer(g, u, c, err, o.OutDir)
		}
		out = append(out, r)
	}
	for _, u := range live {
		for s := 0; s < o.Fixed; s++ {
			runOne(u, s)
		}
		progress(o.Progress, fmt.Sprintf("%s/%s", u.Op, u.Tier), o.Fixed, o.Fixed, start, o.Budget)
	}
	seed := max(o.Seed, o.Fixed)
	n := 0
	for len(live) > 0 && time.Since(start) < o.Budget {
		u := live[n%len(live)]
		runOne(u, seed+n/len(live))
		n++
		if n%len(live) == 0 && n/len(live)%10 == 0 {
			progress(o.Progress, "random", n, 0, start, o.Budget)
		}
	}
	progress(o.Progress, "random", n, n, start, o.Budget)
	return out
}

func tierNames(g *fuzz.GPU) []string {
	var n []string
	for _, t := range g.Tiers {
		n = append(n, t.Name)
	}
	return n
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

// reproducer writes the failing case as a reproducer and returns its replay command.
func reproducer(g *fuzz.GPU, u Unit, c any, err error, dir string) string {
	if c == nil || dir == "" {
		return ""
	}
	r, rerr := fuzz.NewReproducer(u.Property, c, "fail", err.Error())
	if rerr != nil {
		return ""
	}
	r.Found += "; octant conform on " + g.String()
	p, werr := r.Write(filepath.Join(dir, "regressions"))
	if werr != nil {
		return ""
	}
	return fmt.Sprintf("octant replay --lib %s %s", g.Path, p)
}
