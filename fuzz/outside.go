package fuzz

import (
	"fmt"
	"sort"
	"strings"

	"github.com/octant-kv/octant/harness"
	"pgregory.net/rapid"
)

// A GPU property's case outside the library's declared domain (harness.Lib.Decl: an adapter that
// declares it does not handle an input class, a dtype, a format or a block size) is not run: its
// verdicts are NotSupported (harness.CheckAll). It is neither a failure nor a pass: the runner
// counts it per property and reason, the case logs its reason, and the test ends with a tally line
// (OutsideLine). Under `go test -fuzz` and the seed corpora (FuzzX) such a case is skipped with
// its reason, so a seed outside the domain shows as SKIP; under rapid.Check (TestGPUX) it returns
// as checked, so that rapid's count of checks and the decode pipeline's seeds stay those of the
// cases drawn, and the tally says how many of them were outside.

// outsideTally counts one property's cases outside the declared domain, per reason.
type outsideTally struct {
	n       int
	reasons map[string]int
}

// outside records a case of prop outside the declared domain, logs it on t and, when skip, skips
// the case with the reason.
func (r *Runner) outside(t *rapid.T, prop string, d *harness.DomainError, skip bool) {
	r.countOutside(prop, d)
	if skip {
		t.Skip(d.Error())
	}
	t.Log(d.Error())
}

// countOutside counts a case of prop outside the declared domain under its reasons.
func (r *Runner) countOutside(prop string, d *harness.DomainError) {
	r.init()
	r.mu.Lock()
	defer r.mu.Unlock()
	o := r.outsides[prop]
	if o == nil {
		o = &outsideTally{reasons: map[string]int{}}
		r.outsides[prop] = o
	}
	o.n++
	o.reasons[strings.Join(d.Reasons, ", ")]++
}

// resetOutside forgets prop's count (a test starts its own).
func (r *Runner) resetOutside(prop string) {
	r.init()
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.outsides, prop)
}

// OutsideLine is prop's tally since its last reset: "gpu-decode: 7 cases outside the declared
// domain, not run (invalid block ids 5; custom signs 2)", the most frequent reason first; "" when
// there were none.
func (r *Runner) OutsideLine(prop string) string {
	r.init()
	r.mu.Lock()
	defer r.mu.Unlock()
	o := r.outsides[prop]
	if o == nil || o.n == 0 {
		return ""
	}
	keys := make([]string, 0, len(o.reasons))
	for k := range o.reasons {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if o.reasons[keys[i]] != o.reasons[keys[j]] {
			return o.reasons[keys[i]] > o.reasons[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, o.reasons[k])
	}
	return fmt.Sprintf("%s: %d case%s outside the declared domain, not run (%s)", prop, o.n, plural(o.n), strings.Join(parts, "; "))
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
