package conformance

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/octant-kv/octant/arch"
	"github.com/octant-kv/octant/cases"
	"github.com/octant-kv/octant/harness"
	"github.com/octant-kv/octant/internal/provenance"
	"github.com/octant-kv/octant/kernels"
)

// Suite identifies the suite run that writes a certificate.
type Suite struct {
	Version string // octant version
	Command string // the command line, for the record
	// VisibleDevices is the device mask the process ran under (settings.VisibleDevices:
	// "CUDA_VISIBLE_DEVICES=2, HIP_VISIBLE_DEVICES=2"; "" when none is set), recorded so that the
	// shards of `octant conform --devices` show one device each.
	VisibleDevices string
}

// newCertificate starts a certificate with the suite's identity, the commit it was built from,
// the date and the case generator.
func newCertificate(s Suite, mode string, a arch.Arch) *Certificate {
	commit, dirty := provenance.SuiteCommit()
	c := &Certificate{Schema: SchemaVersion, Suite: s.Version, Commit: commit, Dirty: dirty, Mode: mode, Arch: a.Name,
		Date: time.Now().UTC().Format(time.RFC3339), Command: s.Command, VisibleDevices: s.VisibleDevices, CaseGen: cases.CaseGenVersion, Missing: a.Missing()}
	if root, err := provenance.ModuleRoot(); err == nil {
		c.KernelSources, _ = provenance.KernelSourceDigest(filepath.Join(root, "csrc"))
	}
	return c
}

// missingPair reports whether a.Missing names the (op, tier) pair.
func missingPair(a arch.Arch, op arch.Op, tier arch.TierName) (string, bool) {
	for _, m := range a.Missing() {
		if strings.HasPrefix(m, string(op)+":") && strings.Contains(m, " "+string(tier)+" ") {
			return m, true
		}
	}
	return "", false
}

// Static certifies an AMD architecture's compiled code objects (the disassemblies make isa writes
// under isaDir) where no such device is present. It never certifies: no kernel runs, and the
// certificate says so for every required op and tier (Evidence: compiled, or missing).
func Static(a arch.Arch, isaDir string, s Suite) (*Certificate, error) {
	if a.Vendor != arch.AMD || a.Disassemble == "" {
		return nil, fmt.Errorf("static certification of %s: expected an AMD architecture with code objects (gfx1100, gfx942)", a.Name)
	}
	cases, err := StaticCases(a, isaDir)
	if err != nil {
		return nil, err
	}
	c := newCertificate(s, ModeStatic, a)
	c.Cases, c.Budget = cases, "0s"
	for _, r := range a.Requires {
		for _, t := range r.RequiredTiers() {
			e := Evidence{Op: r.Op, Tier: t, How: HowCompiled, Where: a.Name + " code objects, " + a.Disassemble}
			if m, ok := missingPair(a, r.Op, t); ok {
				e.How, e.Where = HowMissing, m
			}
			c.Evidence = append(c.Evidence, e)
		}
	}
	c.NotCertified = []string{"runtime behaviour: no " + a.Name + " device was present and no model of it was run; every runtime case is NotSupported"}
	for _, t := range a.Tiers {
		if !t.Built {
			c.NotCertified = append(c.NotCertified, fmt.Sprintf("the %s tier: registered with its profiles, but its kernels are not built by this repository, so its code objects are not checked", t.Name))
		}
	}
	c.Finish()
	return c, nil
}

// Runtime certifies the library l on its device against architecture a: the battery (RunBattery)
// on every required op and tier, the library identified by its path and SHA-256. The device must
// be a (its reported architecture, target features aside).
func Runtime(ctx context.Context, l *harness.Lib, a arch.Arch, o Options, s Suite) (*Certificate, error) {
	dev := l.Dev.Info
	if a.Name != dev.Arch && !strings.HasPrefix(dev.Arch, a.Name+":") {
		return nil, fmt.Errorf("--arch %s but the device is %s (%s)", a.Name, dev.Arch, dev.Name)
	}
	if len(a.Requires) == 0 {
		return nil, fmt.Errorf("%s has no certification requirements in the registry (it is not a GPU architecture)", a.Name)
	}
	sum, adapter, err := identify(l)
	if err != nil {
		return nil, err
	}
	c := newCertificate(s, ModeRuntime, a)
	c.Library, c.LibrarySHA, c.Adapter, c.ABI = l.Path, sum, adapter, kernels.ABIVersion
	c.BuildInfo, c.Device, c.Runtime = l.Dev.BuildInfo(), dev.Name, dev.Runtime
	c.Seed, c.Budget, c.MinCases = o.Seed, o.Budget.String(), o.MinCases
	c.countMode(o)
	where := fmt.Sprintf("%s (%s), %s", dev.Name, dev.Arch, l.Path)
	for _, r := range a.Requires {
		for _, t := range r.RequiredTiers() {
			e := Evidence{Op: r.Op, Tier: t, How: HowRan, Where: where}
			if m, ok := missingPair(a, r.Op, t); ok {
				e.How, e.Where = HowMissing, m
			}
			c.Evidence = append(c.Evidence, narrowEvidence(l, e))
		}
	}
	o.Arch = a
	units, notes, err := Plan(l, o)
	if err == nil {
		units, err = narrow(c, units, o)
	}
	if err != nil {
		return nil, err
	}
	c.Evidence = append(c.Evidence, optionalEvidence(units, where)...)
	c.narrow(l, a)
	c.Notes = notes
	if c.Cases, err = RunBattery(ctx, l, units, o); err != nil {
		return nil, interrupted(len(c.Cases), err)
	}
	c.shardRan(l, units, o, 0, len(c.Cases))
	c.Finish()
	return c, nil
}

// optionalEvidence is the evidence rows of the optional units (tiers the library lists beyond
// the requirements): ran on where, or on a model of the instructions for a "-model" tier.
func optionalEvidence(units []Unit, where string) []Evidence {
	var out []Evidence
	for _, u := range units {
		if !u.Optional {
			continue
		}
		e := Evidence{Op: u.Op, Tier: u.Tier, How: HowRan, Where: where, Optional: true}
		if u.Tier.IsModel() {
			e.How, e.Where = HowModel, fmt.Sprintf("%s: the %s tier's kernel source with the instructions the device lacks supplied by a model, on %s", u.Tier, u.Tier.Base(), where)
		}
		out = append(out, e)
	}
	return out
}

// ModelOffered reports whether l runs any of architecture a's native tiers (its required tiers
// other than portable) on a model of a's instructions: the library offers it as tier.Model()
// for the op. The certificate then says, per op and tier, what ran on the model and what is
// missing.
func ModelOffered(l *harness.Lib, a arch.Arch) bool {
	for _, r := range a.Requires {
		for _, t := range r.RequiredTiers() {
			if t != arch.Portable && l.Offers(r.Op, t.Model()) {
				return true
			}
		}
	}
	return false
}

// Model certifies architecture a without its hardware: its code objects compiled and checked
// (the static cases of Static, from isaDir), and the runtime battery on l, a library for another
// device that runs a's native tiers on a model of the instructions the device lacks (tiers
// tier.Model(): "wmma-model" runs gfx1100's WMMA decode and prefill with the WMMA
// instructions supplied by csrc/include/octave_wmma.h, "mfma-model" gfx942's MFMA decode and
// prefill with csrc/include/octave_mfma.h; a.Model names them) and its portable tier as the same portable
// source compiled for that device. The evidence says exactly that ("ran on a model"), never "on
// a's hardware".
func Model(ctx context.Context, l *harness.Lib, a arch.Arch, isaDir string, o Options, s Suite) (*Certificate, error) {
	if a.Model == nil {
		return nil, fmt.Errorf("%s has no model of its instructions in this repository: certify it on its own device, or with --isa-only", a.Name)
	}
	if !ModelOffered(l, a) {
		return nil, fmt.Errorf("%s (%s) runs no model of %s's native tiers (tiers: %v): certify %s on its own device, or with --isa-only", l.Path, l.Dev.Info.Arch, a.Name, l.TierNames(), a.Name)
	}
	static, err := Static(a, isaDir, s)
	if err != nil {
		return nil, err
	}
	sum, adapter, err := identify(l)
	if err != nil {
		return nil, err
	}
	dev := l.Dev.Info
	c := newCertificate(s, ModeModel, a)
	c.Library, c.LibrarySHA, c.Adapter, c.ABI = l.Path, sum, adapter, kernels.ABIVersion
	c.BuildInfo, c.Device, c.Runtime = l.Dev.BuildInfo(), dev.Name, dev.Runtime
	c.Seed, c.Budget, c.MinCases = o.Seed, o.Budget.String(), o.MinCases
	c.countMode(o)
	for _, r := range a.Requires {
		for _, t := range r.RequiredTiers() {
			e := Evidence{Op: r.Op, Tier: t, How: HowModel}
			switch {
			case t == arch.Portable:
				e.How = HowOther
				e.Where = fmt.Sprintf("the portable source compiled for %s and run on %s (%s), not a %s build; %s's code objects compiled and checked (isa cases)", dev.Arch, dev.Name, l.Path, a.Name, a.Name)
			default:
				e.Where = fmt.Sprintf("%s on %s (%s), %s: %s's kernel source with the %s instructions %s lacks supplied by the model (%s), never %s hardware; %s's code objects compiled and checked (isa cases)",
					t.Model(), dev.Name, dev.Arch, l.Path, a.Name, a.Model.Instructions, dev.Arch, a.Model.Header, a.Name, a.Name)
			}
			if m, ok := missingPair(a, r.Op, t); ok {
				e.How, e.Where = HowMissing, m
			}
			c.Evidence = append(c.Evidence, narrowEvidence(l, e))
		}
	}
	o.Arch, o.Model = a, true
	units, notes, err := Plan(l, o)
	if err == nil {
		units, err = narrow(c, units, o)
	}
	if err != nil {
		return nil, err
	}
	c.Evidence = append(c.Evidence, optionalEvidence(units, fmt.Sprintf("%s (%s), %s", dev.Name, dev.Arch, l.Path))...)
	c.narrow(l, a)
	c.Notes = notes
	for _, sc := range static.Cases {
		if strings.HasPrefix(sc.Path, "isa/") {
			c.Cases = append(c.Cases, sc)
		}
	}
	ran, err := RunBattery(ctx, l, units, o)
	if err != nil {
		return nil, interrupted(len(ran), err)
	}
	c.shardRan(l, units, o, len(c.Cases), len(ran))
	c.Cases = append(c.Cases, ran...)
	c.NotCertified = append([]string{fmt.Sprintf("%s hardware: nothing ran on a %s device; its behaviour there rests on the documented %s instruction semantics the model reproduces (docs/kernels.md, %q)", a.Name, a.Name, a.Model.Instructions, a.Model.Doc)}, c.NotCertified...)
	c.Finish()
	return c, nil
}

// interrupted is the error of a certification stopped by its context after n cases: no
// certificate is written for a battery that did not finish.
func interrupted(n int, err error) error {
	return fmt.Errorf("interrupted after %d cases (%w): no certificate written", n, err)
}

// countMode records a case-count run's flags (the budget plays no part in it) and its shard.
func (c *Certificate) countMode(o Options) {
	c.Fixed = o.Fixed
	if !o.CaseCount {
		return
	}
	n := o.Cases
	c.RandomCases, c.Budget = &n, ""
	if o.Shard != nil {
		s := *o.Shard
		c.Shard = &s
	}
}

// shardRan records in a shard's certificate the size of the run's case list, the cases of the
// list it ran and the static cases before them (every shard runs those).
func (c *Certificate) shardRan(l *harness.Lib, units []Unit, o Options, static, ran int) {
	if c.Shard != nil {
		c.Shard.Total, c.Shard.Ran, c.Shard.Static = len(CaseList(l, units, o)), ran, static
	}
}
