package arch

import "fmt"

// Op is one operation of the contract (docs/contract.md §3), spelled once for the whole project:
// the registry's requirements, the kernel library's tier descriptions (kernels.TierDesc.Offers),
// the harness's judges and the conformance battery all use these values.
type Op string

// The operations. Decode and prefill come in tiers (a library may offer several implementations
// of each); store, rotate and reduce have one implementation per library.
const (
	Store   Op = "store"
	Rotate  Op = "rotate"
	Decode  Op = "decode"
	Reduce  Op = "reduce"
	Prefill Op = "prefill"
)

// Ops lists every operation, in the order the contract describes them.
func Ops() []Op { return []Op{Store, Rotate, Decode, Reduce, Prefill} }

// Tiered reports whether the op comes in tiers (decode, prefill).
func (o Op) Tiered() bool { return o == Decode || o == Prefill }

// ParseOp returns the op named s.
func ParseOp(s string) (Op, error) {
	for _, o := range Ops() {
		if string(o) == s {
			return o, nil
		}
	}
	return "", fmt.Errorf("op %q: expected one of %v", s, Ops())
}
