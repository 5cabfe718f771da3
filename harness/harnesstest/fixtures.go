// Package harnesstest opens the test binaries' library (EnvLib, LibOrSkip, ForEachImpl) and makes
// kernel libraries that are wrong in known ways, to test the judge and
// every caller of it (fuzz properties, the kernel grids, the conformance battery, replay), in the
// way net/http/httptest makes servers. Each fixture is a view of an opened library (normally the
// CPU emulator build, make emu) with one thing changed; the judge must reach the fixture's
// verdict from the outputs alone:
//
//   - Without drops a tier (a required tier missing from the library);
//   - Declaring makes a tier declare another numeric profile (a looser one, to be judged by);
//   - Zeros makes a tier write zeros to every output row after its kernels ran (a kernel that
//     computes nothing: at long context its zeros can lie within the element bounds);
//   - Stalling makes every op not return for a while (a kernel that hangs: the watchdogs of the
//     long runs must name the case);
//   - Restricted makes it declare a narrower domain, as an adapter's declaration does (ops, dtypes,
//     formats, block sizes, excluded input classes).
//
// A fixture never changes the judge: harness.Lib.Ops runs the wrapped ops, and nothing else in
// the harness knows it is a fixture.
package harnesstest

import (
	"fmt"
	"slices"
	"time"

	"github.com/octant-kv/octant/arch"
	"github.com/octant-kv/octant/harness"
	"github.com/octant-kv/octant/kernels"
)

// Without returns a view of l without the named tier (an error when l has no such tier).
func Without(l *harness.Lib, tier arch.TierName) (*harness.Lib, error) {
	i, err := tierIndex(l, tier)
	if err != nil {
		return nil, err
	}
	v := *l
	v.Tiers = slices.Delete(slices.Clone(l.Tiers), i, i+1)
	return &v, nil
}

// Declaring returns a view of l whose named tier declares profile for op (decode or prefill).
func Declaring(l *harness.Lib, tier arch.TierName, op arch.Op, profile string) (*harness.Lib, error) {
	i, err := tierIndex(l, tier)
	if err != nil {
		return nil, err
	}
	v := *l
	v.Tiers = slices.Clone(l.Tiers)
	switch op {
	case arch.Decode:
		v.Tiers[i].DecodeProfile = profile
	case arch.Prefill:
		v.Tiers[i].PrefillProfile = profile
	default:
		return nil, fmt.Errorf("harnesstest: Declaring a %s profile: expected decode or prefill (the tiered ops)", op)
	}
	return &v, nil
}

// Zeros returns a view of l whose named tier's decode and prefill write zeros to every output row
// (the elements of every query head; the gaps between rows untouched) after the tier's kernels
// ran.
func Zeros(l *harness.Lib, tier arch.TierName) (*harness.Lib, error) {
	i, err := tierIndex(l, tier)
	if err != nil {
		return nil, err
	}
	v := *l
	v.Ops = &zeros{Kernels: l.Runner(), dev: l.Dev, tier: l.Tiers[i].Tier}
	return &v, nil
}

// Stalling returns a view of l whose every op sleeps for d before it runs (a library that
// hangs, for as long as a test can afford).
func Stalling(l *harness.Lib, d time.Duration) *harness.Lib {
	v := *l
	v.Ops = &stalling{Kernels: l.Runner(), d: d}
	return &v
}

// stalling sleeps before every op.
type stalling struct {
	harness.Kernels
	d time.Duration
}

func (s *stalling) Store(a kernels.StoreArgs) error     { time.Sleep(s.d); return s.Kernels.Store(a) }
func (s *stalling) Rotate(a kernels.RotateArgs) error   { time.Sleep(s.d); return s.Kernels.Rotate(a) }
func (s *stalling) Decode(a kernels.DecodeArgs) error   { time.Sleep(s.d); return s.Kernels.Decode(a) }
func (s *stalling) Reduce(a kernels.ReduceArgs) error   { time.Sleep(s.d); return s.Kernels.Reduce(a) }
func (s *stalling) Prefill(a kernels.PrefillArgs) error { time.Sleep(s.d); return s.Kernels.Prefill(a) }

func tierIndex(l *harness.Lib, tier arch.TierName) (int, error) {
	i := slices.IndexFunc(l.Tiers, func(t kernels.TierDesc) bool { return t.Name == tier })
	if i < 0 {
		return 0, fmt.Errorf("harnesstest: %s offers tiers %v, not %q", l.Path, l.TierNames(), tier)
	}
	return i, nil
}

// zeros runs the ops, then overwrites the tier's decode and prefill output rows with zeros.
type zeros struct {
	harness.Kernels
	dev  *kernels.Device
	tier kernels.Tier
}

func (z *zeros) Decode(a kernels.DecodeArgs) error {
	if err := z.Kernels.Decode(a); err != nil || a.Tier != z.tier {
		return err
	}
	return z.clear(a.Out, int(a.NumQ), int(a.NumQHeads)*int(a.HeadSize), a.OutStrideToken)
}

func (z *zeros) Prefill(a kernels.PrefillArgs) error {
	if err := z.Kernels.Prefill(a); err != nil || a.Tier != z.tier {
		return err
	}
	return z.clear(a.Out, int(a.NumTokens), int(a.NumQHeads)*int(a.HeadSize), a.OutStrideToken)
}

// clear writes zeros to rows rows of rowElems 16-bit elements, strideToken elements apart, at
// device address out.
func (z *zeros) clear(out uintptr, rows, rowElems int, strideToken int64) error {
	if rows == 0 || rowElems == 0 {
		return nil
	}
	src, err := z.dev.Alloc(2*rowElems, 0)
	if err != nil {
		return err
	}
	defer src.Free()
	for r := 0; r < rows; r++ {
		if err := z.dev.CopyD2D(out+uintptr(int64(r)*strideToken*2), src.Ptr, uint64(2*rowElems)); err != nil {
			return err
		}
	}
	return z.dev.Sync()
}

// Restricted returns a view of l that declares d (harness.Lib.Decl), as an adapter's declaration
// would: the judges run no call outside it (NotSupported with the reason) and find no
// implementation of an op it leaves out, while every call inside it runs on l unchanged.
func Restricted(l *harness.Lib, d *harness.Declaration) *harness.Lib {
	v := *l
	v.Decl = d
	return &v
}
