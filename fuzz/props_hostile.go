package fuzz

import (
	"errors"

	"github.com/octant-kv/octant/cases"
	"github.com/octant-kv/octant/harness"
	"pgregory.net/rapid"
)

// mustNotMatter is a must-not-matter property: draw a case with set, a fill seed, check it on
// the runner's library (or the oracle alone), record a failure.
func (r *Runner) mustNotMatter(name string, regions cases.Region, set func(t *rapid.T, m *cases.MustNotMatterCase)) func(*rapid.T) {
	return func(t *rapid.T) {
		l := r.Lib
		m := &cases.MustNotMatterCase{Regions: regions}
		set(t, m)
		m.Seed = rapid.Uint64().Draw(t, "hostile_seed")
		err := cases.CheckMustNotMatter(l, m)
		if d := (*harness.DomainError)(nil); errors.As(err, &d) {
			r.outside(t, name, d, false)
			return
		}
		if err != nil {
			if m.Decode != nil {
				if c, cerr := m.Decode.Call(); cerr == nil {
					m.Decode.Record(c)
				}
			}
			r.failLib(t, name, l, m, err)
		}
	}
}

// PropMustNotMatterDecode: a decode call (GPUDecodeCases) and the same call with hostile content in
// every input it must not depend on (DecodeRegions) give the same output bits.
func (r *Runner) PropMustNotMatterDecode(t *rapid.T) {
	r.mustNotMatter(cases.PropNameMNMDecode, cases.DecodeRegions, func(t *rapid.T, m *cases.MustNotMatterCase) {
		m.Decode = cases.GPUDecodeCases(cases.GPUDecodeOptions()).Draw(t, "case")
	})(t)
}

// PropMustNotMatterPrefill: the same for prefill (PrefillRegions).
func (r *Runner) PropMustNotMatterPrefill(t *rapid.T) {
	r.mustNotMatter(cases.PropNameMNMPrefill, cases.PrefillRegions, func(t *rapid.T, m *cases.MustNotMatterCase) { m.Prefill = cases.GPUPrefillCases().Draw(t, "case") })(t)
}

// PropMustNotMatterStore: the same for cache_store (StoreRegions): the cache after the store.
func (r *Runner) PropMustNotMatterStore(t *rapid.T) {
	r.mustNotMatter(cases.PropNameMNMStore, cases.StoreRegions, func(t *rapid.T, m *cases.MustNotMatterCase) { m.Store = cases.GPUStoreCases().Draw(t, "case") })(t)
}

// PropMustNotMatterReduce: the same for reduce (ReduceRegions).
func (r *Runner) PropMustNotMatterReduce(t *rapid.T) {
	r.mustNotMatter(cases.PropNameMNMReduce, cases.ReduceRegions, func(t *rapid.T, m *cases.MustNotMatterCase) { m.Reduce = cases.GPUReduceCases().Draw(t, "case") })(t)
}

// PropIsolationDecode: a decode call (IsolationCases) and the same call with the slots between
// sibling rows' klens poisoned give the same output bits in the rows that do not attend them, on
// every tier that does not declare coupled rows, and pass their judgement on every tier. A failure
// records the case (its recipe with its digest, cuts and poison seed) as a reproducer under
// corpus/regressions/decode and ends with its replay command, as the other GPU properties do.
func (r *Runner) PropIsolationDecode(t *rapid.T) { r.isolationProp(cases.IsolationCases(), false)(t) }

// PropIsolationDecodeSmall is PropIsolationDecode over FuzzDecode's small calls alone
// (IsolationSmallCases): TestIsolationDecode's -short form, judged on every tier the same way.
func (r *Runner) PropIsolationDecodeSmall(t *rapid.T) {
	r.isolationProp(cases.IsolationSmallCases(), false)(t)
}

// isolationProp is the isolation property over the cases of gen, on the runner's library or the oracle
// alone; a failure records its reproducer, and a case outside the library's declared domain is
// counted (outside.go), and skipped when skipOutside.
func (r *Runner) isolationProp(gen *rapid.Generator[*cases.IsolationCase], skipOutside bool) func(*rapid.T) {
	return func(t *rapid.T) {
		l := r.Lib
		m := gen.Draw(t, "iso")
		_, err := cases.CheckIsolationCase(l, m)
		if d := (*harness.DomainError)(nil); errors.As(err, &d) {
			r.outside(t, cases.PropNameIsoDecode, d, skipOutside)
			return
		}
		if err != nil {
			m.Record()
			r.failLib(t, cases.PropNameIsoDecode, l, m, err)
		}
	}
}
