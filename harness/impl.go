package harness

import (
	"fmt"

	"github.com/octant-kv/octant/arch"
	"github.com/octant-kv/octant/kernels"
)

// Impl is one implementation of an op that a judge runs a call on: the oracle (the base, in the
// style of crypto/internal/cryptotest.TestAllImplementations: its float32 model of the op's
// arithmetic, held to the same check as every tier, so that a bound too tight for the arithmetic
// it describes fails without any GPU), or one implementation in a kernel library.
type Impl struct {
	Name   string // "oracle", or the tier's name ("portable", ...)
	Oracle bool
	Tier   kernels.TierDesc // library implementations of tiered ops
}

// OracleImpl and PortableImpl name the oracle and the library's implementation of an untiered op
// (store, rotate, reduce: one per library, the portable code).
const (
	OracleImpl   = "oracle"
	PortableImpl = string(arch.Portable)
)

// Impls lists the implementations of op a judge runs: with no library (l nil) the oracle alone;
// with one, every tier of l that offers op (decode, prefill) or the library's one implementation
// (store, rotate, reduce). A library with no tier for a tiered op is an error: every architecture
// has at least the portable tier (docs/contract.md §6); so is an op l's declaration (Lib.Decl)
// leaves out.
func Impls(l *Lib, op arch.Op) ([]Impl, error) {
	if l == nil {
		return []Impl{{Name: OracleImpl, Oracle: true}}, nil
	}
	if !l.Decl.Declares(op) {
		return nil, fmt.Errorf("%s declares no %s op: it has no implementation of it (outside declared domain)", l.Path, op)
	}
	if !op.Tiered() {
		return []Impl{{Name: PortableImpl, Tier: kernels.TierDesc{Name: arch.Portable}}}, nil
	}
	var out []Impl
	for _, t := range l.Tiers {
		if t.Offers(op) {
			out = append(out, Impl{Name: string(t.Name), Tier: t})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("device %q (arch %s) offers tiers %v, none implementing %s: expected at least the portable tier",
			l.Dev.Info.Name, l.Dev.Info.Arch, l.TierNames(), op)
	}
	return out, nil
}
