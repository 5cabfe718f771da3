package harness

import (
	"errors"
	"fmt"
	"slices"

	"github.com/octant-kv/octant/arch"
	"github.com/octant-kv/octant/kernels"
	"github.com/octant-kv/octant/kernels/worker"
)

// Lib is an opened kernel library, its device 0 and the tiers the device offers: what every judge
// runs implementations on.
type Lib struct {
	// Path is what was opened: a library's path, or a worker's spec (OpenWith) as given.
	Path string
	// Lib is the C library; nil when a worker runs the ops (Worker).
	Lib *kernels.Lib
	// Worker is the worker process a host: or torch: spec started; nil for a C library.
	Worker *worker.Backend
	Dev    *kernels.Device
	Tiers  []kernels.TierDesc
	// Ops runs the C ABI's ops: Dev itself, or an implementation wrapped around it (the
	// certifier's fixtures, harnesstest) whose verdicts the judges must reach on their own.
	Ops Kernels
	// Decl is what the implementation declares it supports (a worker's adapter, docs/adapters.md);
	// nil for a C library, which is judged on the whole contract. A call outside it is
	// NotSupported, never run (Outside, Check), and an op it does not declare has no
	// implementation (Offers, Impls).
	Decl *Declaration

	rec *recorder // Record's view: the first op call is recorded
}

// Kernels is the C ABI's ops as the judges call them (kernels.Device implements it).
type Kernels interface {
	Store(kernels.StoreArgs) error
	Rotate(kernels.RotateArgs) error
	Decode(kernels.DecodeArgs) error
	Reduce(kernels.ReduceArgs) error
	Prefill(kernels.PrefillArgs) error
	WorkspaceBytes(numQ, numQHeads, numSplits, partialStride int) uint64
}

// Runner is what runs l's ops: Ops when set, else the device (on a Record view, wrapped so
// that the first op call is recorded).
func (l *Lib) Runner() Kernels {
	var k Kernels = l.Dev
	if l.Ops != nil {
		k = l.Ops
	}
	if l.rec != nil {
		return recordingOps{k, l.rec}
	}
	return k
}

// PoolBytes is how much freed device memory the fuzz targets and the conformance runner let a
// Lib keep for reuse (kernels.Device.EnablePool): a case allocates and frees its buffers twice per
// tier, and the runtime's allocator would cost more than the kernels. The kernel grid tests keep
// exact allocations (compute-sanitizer memcheck sees an overrun into a pooled allocation's slack
// only then).
const PoolBytes = 1 << 30

// Open opens the library at path, or the worker a spec names (OpenWith, default options), and its
// device 0, and lists its tiers.
func Open(path string) (*Lib, error) { return OpenWith(path, OpenOptions{}) }

// openLibrary opens the C library at path and its device 0 and lists its tiers.
func openLibrary(path string) (*Lib, error) {
	l, err := kernels.Open(path)
	if err != nil {
		return nil, err
	}
	d, err := l.OpenDevice(0)
	if err != nil {
		l.Close()
		return nil, fmt.Errorf("opening device 0 of %s: %w", path, err)
	}
	tiers, err := d.Tiers()
	if err != nil {
		d.Close()
		l.Close()
		return nil, fmt.Errorf("listing the tiers of %s: %w", path, err)
	}
	return &Lib{Path: path, Lib: l, Dev: d, Tiers: tiers}, nil
}

// Close releases the device and the library (a worker: the device's Close ends it).
func (l *Lib) Close() error {
	if l.Lib == nil {
		return l.Dev.Close()
	}
	return errors.Join(l.Dev.Close(), l.Lib.Close())
}

// String names the library (or the worker's spec) and the device.
func (l *Lib) String() string {
	return fmt.Sprintf("%s on %s (%s; %s)", l.Path, l.Dev.Info.Name, l.Dev.Info.Arch, l.Dev.BuildInfo())
}

// OnTier returns a view of l that offers only the named tier, or none when l has no such tier (the
// conformance battery judges one tier at a time).
func (l *Lib) OnTier(name arch.TierName) *Lib {
	if v, err := l.Only([]arch.TierName{name}); err == nil {
		return v
	}
	v := *l
	v.Tiers = nil
	return &v
}

// Offers reports whether l implements op on the named tier (untiered ops: the portable
// implementation every library has, and every adapter that declares the op).
func (l *Lib) Offers(op arch.Op, tier arch.TierName) bool {
	if !l.Decl.Declares(op) {
		return false
	}
	if !op.Tiered() {
		return tier == arch.Portable
	}
	for _, t := range l.Tiers {
		if t.Name == tier && t.Offers(op) {
			return true
		}
	}
	return false
}

// TierNames lists the tiers the device offers.
func (l *Lib) TierNames() []arch.TierName {
	var n []arch.TierName
	for _, t := range l.Tiers {
		n = append(n, t.Name)
	}
	return n
}

// emulator reports whether l is the CPU emulator build, which runs workgroups one at a time in a
// fixed order: a race cannot show there.
func (l *Lib) emulator() bool { return l.Dev.Info.Arch == "emu" }

// maxEmuRepeat is the largest launch (workgroups) the judges run a second time on the CPU
// emulator to compare bits: the emulator cannot show a race, and a second run of a large launch
// would double its time. On a GPU every call runs twice.
const maxEmuRepeat = 256

// repeat reports whether a call of the given number of workgroups runs twice.
func (l *Lib) repeat(workgroups int) bool { return !l.emulator() || workgroups <= maxEmuRepeat }

// Only returns a view of l that offers only the named tiers, in l's order; a name the device does
// not offer is an error that lists the tiers it does.
func (l *Lib) Only(names []arch.TierName) (*Lib, error) {
	v := *l
	v.Tiers = nil
	for _, n := range names {
		if !slices.Contains(l.TierNames(), n) {
			return nil, fmt.Errorf("tiers %s: tier %q is not offered by %s: expected some of %s", arch.JoinTiers(names), n, l.Path, arch.JoinTiers(l.TierNames()))
		}
	}
	for _, t := range l.Tiers {
		if slices.Contains(names, t.Name) {
			v.Tiers = append(v.Tiers, t)
		}
	}
	return &v, nil
}
