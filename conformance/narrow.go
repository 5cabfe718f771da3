package conformance

import (
	"fmt"
	"slices"

	"github.com/octant-kv/octant/arch"
	"github.com/octant-kv/octant/harness"
)

// A certificate of an implementation whose declaration (an adapter's, harness.Lib.Decl) narrows
// the contract rests on the declared domain alone (docs/conformance.md, "Narrowed certificates"):
//
//   - a required op it does not declare runs no case; its evidence is HowNotDeclared;
//   - a reduce it declares inside its decode (reduce_in_decode) runs no reduce case: it is judged
//     through decode's output only, and its evidence is HowInDecode;
//   - a case outside the declared domain (an excluded input class, an undeclared dtype, format or
//     block size) is NotSupported, never run, counted per unit, and never counts toward
//     --min-cases;
//   - a declared op whose callable does not report the tier that ran says so in its evidence.
//
// Every narrowing is listed in Narrowed (the JSON), under not_certified, and in the verdict's
// title ("CERTIFIED ON A NARROWED DOMAIN (...)"). The floor of cases applies to every declared
// unit, and a certificate needs runtime evidence: a declaration that declares no required op, or
// whose domain excludes every case, certifies nothing. A C library (no declaration) is certified
// on the whole contract exactly as without this.

// narrowEvidence is e for l's declaration: a required op it does not declare, or its reduce inside
// decode, instead of a unit to run.
func narrowEvidence(l *harness.Lib, e Evidence) Evidence {
	d := l.Decl
	if d == nil || e.How == HowMissing {
		return e
	}
	switch {
	case e.Op == arch.Reduce && d.ReduceInDecode:
		e.How, e.Where = HowInDecode, "the reduce runs inside the declared decode (reduce_in_decode): judged through decode's output only, no reduce case runs"
	case !d.Declares(e.Op):
		e.How, e.Where = HowNotDeclared, fmt.Sprintf("the declaration of %s has no %s op: no %s case runs", l.Path, e.Op, e.Op)
	}
	return e
}

// narrow records how l's declaration narrows the contract for architecture a: Narrowed, one
// not_certified line per narrowing, and the evidence of every declared op that does not report
// the tier that ran.
func (c *Certificate) narrow(l *harness.Lib, a arch.Arch) {
	if l.Decl == nil {
		return
	}
	for i := range c.Evidence {
		c.Evidence[i].TierNotReported = !c.Evidence[i].narrowed() && !l.Decl.ReportsTier(c.Evidence[i].Op)
	}
	var ops []arch.Op
	for _, r := range a.Requires {
		if !slices.Contains(ops, r.Op) {
			ops = append(ops, r.Op)
		}
	}
	c.Narrowed = l.Decl.Narrowing(ops)
	for _, n := range c.Narrowed {
		c.NotCertified = append(c.NotCertified, "narrowed by the adapter's declaration: "+n)
	}
}
