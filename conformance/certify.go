package conformance

import (
	"fmt"
	"strings"
	"time"

	"github.com/octant-kv/octant/arch"
	"github.com/octant-kv/octant/fuzz"
	"github.com/octant-kv/octant/harness"
	"github.com/octant-kv/octant/internal/provenance"
	"github.com/octant-kv/octant/kernels"
)

// Suite identifies the suite run that writes a certificate.
type Suite struct {
	Version string // octant version
	Command string // the command line, for the record
}

// newCertificate starts a certificate with the suite's identity, the commit it was built from,
// the date and the case generator.
func newCertificate(s Suite, mode string, a arch.Arch) *Certificate {
	commit, dirty := provenance.SuiteCommit()
	return &Certificate{Schema: SchemaVersion, Suite: s.Version, Commit: commit, Dirty: dirty, Mode: mode, Arch: a.Name,
		Date: time.Now().UTC().Format(time.RFC3339), Command: s.Command, CaseGen: fuzz.CaseGenVersion, Missing: a.Missing()}
}

// missingPair reports whether a.Missing names the (op, tier) pair.
func missingPair(a arch.Arch, op arch.Op, tier string) (string, bool) {
	for _, m := range a.Missing() {
		if strings.HasPrefix(m, string(op)+":") && strings.Contains(m, " "+tier+" ") {
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
func Runtime(l *harness.Lib, a arch.Arch, o Options, s Suite) (*Certificate, error) {
	dev := l.Dev.Info
	if a.Name != dev.Arch && !strings.HasPrefix(dev.Arch, a.Name+":") {
		return nil, fmt.Errorf("--arch %s but the device is %s (%s)", a.Name, dev.Arch, dev.Name)
	}
	if len(a.Requires) == 0 {
		return nil, fmt.Errorf("%s has no certification requirements in the registry (it is not a GPU architecture)", a.Name)
	}
	sum, err := provenance.FileSHA256(l.Path)
	if err != nil {
		return nil, err
	}
	c := newCertificate(s, ModeRuntime, a)
	c.Library, c.LibrarySHA, c.ABI = l.Path, sum, kernels.ABIVersion
	c.BuildInfo, c.Device, c.Runtime = l.Lib.BuildInfo(), dev.Name, dev.Runtime
	c.Seed, c.Budget, c.MinCases = o.Seed, o.Budget.String(), o.MinCases
	where := fmt.Sprintf("%s (%s), %s", dev.Name, dev.Arch, l.Path)
	for _, r := range a.Requires {
		for _, t := range r.RequiredTiers() {
			e := Evidence{Op: r.Op, Tier: t, How: HowRan, Where: where}
			if m, ok := missingPair(a, r.Op, t); ok {
				e.How, e.Where = HowMissing, m
			}
			c.Evidence = append(c.Evidence, e)
		}
	}
	o.Arch = a
	c.Cases = RunBattery(l, o)
	c.Finish()
	return c, nil
}
