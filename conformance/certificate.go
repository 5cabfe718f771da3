package conformance

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/octant-kv/octant/arch"
	"github.com/octant-kv/octant/harness"
	"github.com/octant-kv/octant/oracle"
)

// SchemaVersion is the certificate schema's version (docs/conformance.md).
const SchemaVersion = 2

// Certificate is certificate.json.
type Certificate struct {
	Schema  int    `json:"schema"`
	Suite   string `json:"suite"`  // octant version
	Commit  string `json:"commit"` // git commit of the suite
	Dirty   bool   `json:"dirty"`  // uncommitted changes in the suite's tree
	Mode    string `json:"mode"`   // ModeRuntime or ModeStatic
	Arch    string `json:"arch"`
	Library string `json:"library,omitempty"` // the --lib given: a library's path, or a worker spec
	// LibrarySHA is the SHA-256 of the library file, or of the adapter file for a worker spec.
	LibrarySHA string `json:"library_sha256,omitempty"`
	// Adapter is what ran the kernels when Library is a worker spec (provenance.go); nil for a
	// C library.
	Adapter   *Adapter `json:"adapter,omitempty"`
	ABI       int      `json:"abi,omitempty"`
	BuildInfo string   `json:"build_info,omitempty"`
	Device    string   `json:"device,omitempty"`
	Runtime   string   `json:"runtime,omitempty"` // runtime and driver as the library reports them
	// VisibleDevices is the device mask the run's process saw (Suite.VisibleDevices); "" when
	// none was set. It is where a run was, not what was judged: Merge does not compare it.
	VisibleDevices string `json:"visible_devices,omitempty"`
	// ShardDevices are a merged certificate's shards' VisibleDevices, one "i/n: mask" per shard
	// that had one (octant conform --devices: one device per shard).
	ShardDevices []string `json:"shard_devices,omitempty"`
	Date         string   `json:"date"`
	Command      string   `json:"command"`
	CaseGen      string   `json:"case_generator,omitempty"` // cases.CaseGenVersion: what the seeds mean
	// KernelSources is the SHA-256 of the suite tree's kernel sources with comments stripped
	// (provenance.KernelSourceDigest of csrc): what a library built from this tree was built from.
	// A committed certificate whose digest, ABI or case generator no longer match the tree is
	// stale (TestCommittedCertificatesCurrent).
	KernelSources string `json:"kernel_source_sha256,omitempty"`
	Seed          int    `json:"seed"`
	Budget        string `json:"budget"` // the random phase's wall-clock budget; empty in a case-count run
	// Fixed is --fixed: the fixed cases per unit (seeds 0..Fixed−1).
	Fixed int `json:"fixed"`
	// RandomCases is --cases in a case-count run: the random cases per unit after the fixed ones
	// (CaseList); nil in a budget run, whose random phase depends on the machine.
	RandomCases *int `json:"random_cases,omitempty"`
	// Shard says which part of a case-count run's case list this certificate judged (shard.go):
	// a shard's certificate is partial and never certifies. nil: the whole case list.
	Shard *Shard `json:"shard,omitempty"`
	// ShardsNotRun names the shards a merged certificate lacks ("2/4"): their cases were not run,
	// and the certificate is not certified.
	ShardsNotRun []string `json:"shards_not_run,omitempty"`
	Certified    bool     `json:"certified"`
	// VerdictLine is Verdict(), the one verdict every report shows: the console's last line,
	// report.md's title, junit.xml's certificate test case.
	VerdictLine string `json:"verdict"`
	// QualityWarnings counts the cases judged QualityWarning: within their profile's bounds, but
	// farther from exact attention than the contract's relative L2. A certified certificate with
	// any says so in its verdict.
	QualityWarnings int            `json:"quality_warnings"`
	MinCases        int            `json:"min_cases,omitempty"` // cases every op/tier must have run (runtime mode; at least 1)
	TooFew          []string       `json:"too_few_cases,omitempty"`
	Missing         []string       `json:"missing,omitempty"` // required kernels that do not exist
	Status          harness.Status `json:"status"`
	// Evidence says, per required op and tier, what the certificate rests on: kernels run (on
	// which device, or on a model of an instruction), code objects only compiled and
	// disassembled, or nothing.
	Evidence []Evidence   `json:"evidence"`
	Summary  []Summary    `json:"summary"`
	Cases    []CaseResult `json:"cases"`
	// Narrowed lists how the implementation's declaration narrows the contract (narrow.go): the
	// required ops it does not declare, a reduce inside decode, formats, dtypes and block sizes it
	// leaves out, the input classes it excludes, the ops that do not report their tier. A
	// certified certificate with any is "CERTIFIED ON A NARROWED DOMAIN (...)".
	Narrowed     []string `json:"narrowed,omitempty"`
	NotCertified []string `json:"not_certified,omitempty"` // what this certificate does not cover
	Notes        []string `json:"notes,omitempty"`         // how the run was narrowed (--tiers)
	// Partial lists the units judged when the run was narrowed to some units of its plan
	// (--units): such a certificate is partial and never certifies. nil: the whole plan ran.
	Partial []string `json:"partial,omitempty"`
}

// Certificate modes.
const (
	ModeRuntime = "runtime"   // a kernel library's kernels ran on a device
	ModeStatic  = "isa-only"  // code objects compiled and disassembled: no kernel ran
	ModeModel   = "model+isa" // code objects checked, and the kernels run on another device with a model of the architecture's instructions
)

// How a required op and tier was examined (Evidence.How).
const (
	HowRan      = "ran"      // its kernels ran on a device (Where names it) and were judged
	HowModel    = "model"    // its kernels ran, with an instruction the device lacks supplied by a model (Where says which)
	HowOther    = "other"    // the same source ran, compiled for another device (Where says which), in a certificate on a model
	HowCompiled = "compiled" // its code objects were compiled and disassembled; nothing ran
	HowMissing  = "missing"  // its kernels do not exist in this repository
	HowNotRun   = "not run"  // its kernels were to run (Where says on what), but no case of it ran
	// HowNotDeclared: the implementation's declaration (an adapter's) has no such op: nothing
	// ran, and the certificate is narrowed (narrow.go).
	HowNotDeclared = "not declared"
	// HowInDecode: the reduce runs inside the declared decode (reduce_in_decode): judged through
	// decode's output only; the certificate is narrowed.
	HowInDecode = "inside decode"
)

// Evidence is what one required (op, tier) of a certificate rests on.
type Evidence struct {
	Op     arch.Op        `json:"op"`
	Tier   arch.TierName  `json:"tier"`
	How    string         `json:"how"`
	Where  string         `json:"where"`
	Cases  int            `json:"cases"` // cases judged at runtime (Pass, QualityWarning, Fail)
	Status harness.Status `json:"status"`
	// Optional marks a tier the library lists beyond the architecture's requirements: it is
	// judged like a required one, and a Fail in it blocks the certificate all the same.
	Optional bool `json:"optional,omitempty"`
	// OutsideDomain counts the cases of this op and tier outside the implementation's declared
	// domain: NotSupported, never run, not among Cases.
	OutsideDomain int `json:"outside_domain,omitempty"`
	// TierNotReported says the op's callable does not report the tier that ran (an adapter's
	// reports_tier false): a silent fallback to another tier shows only where the two tiers'
	// bounds tell their outputs apart.
	TierNotReported bool `json:"tier_not_reported,omitempty"`
}

// narrowed reports whether the evidence is a narrowing of the declaration, not a unit to run.
func (e Evidence) narrowed() bool { return e.How == HowNotDeclared || e.How == HowInDecode }

// Runtime reports whether the evidence is runtime evidence (its kernels ran).
func (e Evidence) Runtime() bool { return e.How == HowRan || e.How == HowModel || e.How == HowOther }

// Finish sets the status, summary, evidence counts and verdict from the cases and the missing
// kernels. A certificate is certified only when no case of any tier failed (required or not),
// no required kernel is missing, every op and tier judged has runtime evidence (a static check
// never certifies) of at least max(MinCases, 1) cases: a tier that ran no case is "not run", never
// "ran".
func (c *Certificate) Finish() {
	for _, e := range c.Evidence {
		path := string(e.Op) + "/" + string(e.Tier) + "/missing"
		if e.How == HowMissing && !slices.ContainsFunc(c.Cases, func(r CaseResult) bool { return r.Path == path }) {
			c.Cases = append(c.Cases, CaseResult{Path: path, Status: harness.Fail, Message: "required kernel missing: " + e.Where})
		}
	}
	c.Status = harness.Pass
	c.QualityWarnings = 0
	for _, r := range c.Cases {
		c.Status = harness.Worst(c.Status, r.Status)
		if r.Status == harness.QualityWarning {
			c.QualityWarnings++
		}
	}
	if len(c.Missing) > 0 {
		c.Status = harness.Fail
	}
	c.Summary = Summarize(c.Cases, 2)
	runs := map[string]int{}
	outside := map[string]int{}
	status := map[string]harness.Status{}
	for _, u := range c.Summary {
		if strings.Contains(u.Node, "/") {
			runs[u.Node] = u.Counts[harness.Pass.String()] + u.Counts[harness.QualityWarning.String()] + u.Counts[harness.Fail.String()]
			outside[u.Node] = u.Counts[harness.NotSupported.String()]
			status[u.Node] = u.Status
		}
	}
	floor := max(c.MinCases, 1)
	c.TooFew = nil
	runtime, anyRuntime := len(c.Evidence) > 0, false
	for i := range c.Evidence {
		e := &c.Evidence[i]
		k := string(e.Op) + "/" + string(e.Tier)
		e.Cases, e.Status = runs[k], status[k]
		if c.Adapter != nil || len(c.Narrowed) > 0 {
			e.OutsideDomain = outside[k]
		}
		if e.narrowed() {
			e.Status = harness.NotSupported // declared out by the adapter: no case, no floor; the verdict says narrowed
			continue
		}
		if e.Runtime() && e.Cases == 0 {
			e.How = HowNotRun
		}
		if e.How == HowNotRun {
			c.TooFew = append(c.TooFew, fmt.Sprintf("%s: no case ran, at least %d required (raise --budget or --fixed)", k, floor))
			runtime = false
			continue
		}
		if !e.Runtime() {
			runtime = false
			continue
		}
		anyRuntime = true
		if e.Cases < floor {
			c.TooFew = append(c.TooFew, fmt.Sprintf("%s: %d cases run, at least %d required (--min-cases; raise --budget or --fixed)", k, e.Cases, floor))
		}
	}
	c.Certified = c.Status != harness.Fail && len(c.Missing) == 0 && len(c.Cases) > 0 && len(c.TooFew) == 0 && runtime && anyRuntime && c.Partial == nil &&
		c.Shard == nil && len(c.ShardsNotRun) == 0
	c.VerdictLine = c.Verdict()
}

// modelInstructions names the instructions a certificate on a model ran modelled ("WMMA", "MFMA").
func (c *Certificate) modelInstructions() string {
	if a, err := arch.Lookup(c.Arch); err == nil && a.Model != nil {
		return a.Model.Instructions
	}
	return "native"
}

// Verdict is the one-line verdict a person reads, the same in every report (the console,
// report.md's title, certificate.json's "verdict", junit.xml's certificate case): CERTIFIED (on
// a model, or on the CPU emulator, when that is what ran), with its quality warnings counted and
// summarised when there are any; or NOT CERTIFIED with the first reason.
func (c *Certificate) Verdict() string {
	if c.Certified {
		v := "CERTIFIED"
		if len(c.Narrowed) > 0 {
			v = "CERTIFIED ON A NARROWED DOMAIN (" + strings.Join(c.Narrowed, "; ") + ")"
		}
		switch {
		case c.Mode == ModeModel:
			v += " on a model of the " + c.modelInstructions() + " instructions; no " + c.Arch + " device ran (code objects checked; the kernels ran with the instructions modelled)"
		case c.Arch == "emu":
			v += " on the CPU emulator (the kernels' source compiled for the host CPU and run there: no GPU ran, and no GPU is certified)"
		}
		if c.QualityWarnings > 0 {
			v += fmt.Sprintf(" with %d quality warning%s: %s", c.QualityWarnings, plural(c.QualityWarnings), c.warningSummary())
		}
		return v
	}
	var why string
	switch {
	case c.Shard != nil:
		why = fmt.Sprintf("partial: shard %d/%d, %d of the run's %d cases; octant merge combines the %d shards into the certificate", c.Shard.Index, c.Shard.Count, c.Shard.Ran, c.Shard.Total, c.Shard.Count)
		if c.Status == harness.Fail {
			why += ", failing cases"
		}
	case len(c.ShardsNotRun) > 0:
		why = fmt.Sprintf("shard(s) not run: %s; their cases are not in this certificate", strings.Join(c.ShardsNotRun, ", "))
		if c.Status == harness.Fail {
			why += ", failing cases"
		}
	case c.Partial != nil:
		why = fmt.Sprintf("a partial run: %d unit(s) judged (--units)", len(c.Partial))
		if c.Status == harness.Fail {
			why += ", failing cases"
		}
	case len(c.Missing) > 0:
		why = fmt.Sprintf("%d required kernel(s) missing", len(c.Missing))
	case c.Status == harness.Fail:
		why = "failing cases"
	case c.Mode == ModeStatic:
		why = "static checks only: code objects compiled and disassembled, no kernel ran"
	case len(c.TooFew) > 0:
		why = "too few cases ran: " + c.TooFew[0]
	case !c.anyRuntimeEvidence():
		why = "no runtime evidence: the declaration leaves out every required op"
	default:
		why = "no runtime evidence for every required op and tier"
	}
	v := "NOT CERTIFIED (" + why + ")"
	if len(c.Narrowed) > 0 {
		v += " on a narrowed domain (" + strings.Join(c.Narrowed, "; ") + ")"
	}
	return v
}

// anyRuntimeEvidence reports whether some op and tier of the certificate is runtime evidence
// (its kernels were to run), not a narrowing of the declaration.
func (c *Certificate) anyRuntimeEvidence() bool {
	return slices.ContainsFunc(c.Evidence, func(e Evidence) bool { return !e.narrowed() })
}

// warningSummary says where the quality warnings are and how far from exact attention they go:
// "decode/mma 30 (relative L2 from exact attention up to 0.76)", per op and tier; every one is
// within its declared profile's bounds (that is what makes it a warning, not a failure).
func (c *Certificate) warningSummary() string {
	type agg struct {
		n     int
		worst float64
	}
	per := map[string]*agg{}
	var keys []string
	for _, r := range c.Cases {
		if r.Status != harness.QualityWarning {
			continue
		}
		k := unitKey(r.Path)
		a := per[k]
		if a == nil {
			a = &agg{}
			per[k] = a
			keys = append(keys, k)
		}
		a.n++
		if !math.IsNaN(r.RelL2) {
			a.worst = math.Max(a.worst, r.RelL2)
		}
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d (relative L2 from exact attention up to %.3g)", k, per[k].n, per[k].worst)
	}
	return strings.Join(parts, ", ") + fmt.Sprintf("; each within its declared profile's bounds but beyond the contract's %g from exact attention (report.md: accuracy)", oracle.ContractRelL2)
}

// unitKey is a case path's op/tier.
func unitKey(path string) string {
	el := strings.SplitN(path, "/", 3)
	if len(el) < 2 {
		return path
	}
	return el[0] + "/" + el[1]
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// budgetText is how the random phase was bounded, for report.md: a budget, or a case count
// (and the shard, for a shard's certificate).
func (c *Certificate) budgetText() string {
	if c.RandomCases == nil {
		return "budget " + c.Budget
	}
	s := fmt.Sprintf("%d fixed and %d random cases per unit", c.Fixed, *c.RandomCases)
	if c.Shard != nil {
		s += fmt.Sprintf("; shard %d/%d: %d of the %d cases", c.Shard.Index, c.Shard.Count, c.Shard.Ran, c.Shard.Total)
	}
	return s
}

// DefaultMinCases is how many cases each op/tier of a runtime certificate must have run: a few
// cases can pass a defective build (the emulator's mutant 1, which leaves padding rows unwritten,
// passed five), so a short run is reported as not certified rather than certified on little
// evidence.
const DefaultMinCases = 32

// Write writes certificate.json, report.md and junit.xml into dir.
func (c *Certificate) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	j, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "certificate.json"), append(j, '\n'), 0o644); err != nil {
		return err
	}
	plots, err := c.plotSection(dir)
	if err != nil {
		return err
	}
	rep := c.Report() + plots
	if err := os.WriteFile(filepath.Join(dir, "report.md"), []byte(rep), 0o644); err != nil {
		return err
	}
	x, err := c.JUnit()
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "junit.xml"), x, 0o644)
}

// Report is report.md: the verdict, a summary per op and tier, every failing case with its replay
// command, and the distribution of distances from exact attention.
func (c *Certificate) Report() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Octave KV conformance: %s (%s) — **%s**\n\n", c.Arch, c.Mode, c.Verdict())
	fmt.Fprintf(&b, "- suite: octant %s, commit %s (dirty: %v)\n- kernel sources (csrc, comments stripped): sha256 %s\n- date: %s\n- command: `%s`\n- cases: %s, seed %d, %s\n", c.Suite, c.Commit, c.Dirty, c.KernelSources, c.Date, c.Command, c.CaseGen, c.Seed, c.budgetText())
	if c.Library != "" {
		fmt.Fprintf(&b, "- library: %s (sha256 %s, ABI %d; %s)\n- device: %s, runtime %s\n", c.Library, c.LibrarySHA, c.ABI, c.BuildInfo, c.Device, c.Runtime)
	}
	if c.VisibleDevices != "" {
		fmt.Fprintf(&b, "- visible devices: %s\n", c.VisibleDevices)
	}
	for _, d := range c.ShardDevices {
		fmt.Fprintf(&b, "- shard %s\n", d)
	}
	if a := c.Adapter; a != nil {
		fmt.Fprintf(&b, "- adapter (%s mode): %s, sha256 %s\n", a.Mode, a.File, a.SHA256)
		for _, f := range a.OptionFiles {
			fmt.Fprintf(&b, "  - option %s=%s: sha256 %s\n", f.Option, f.Path, f.SHA256)
		}
	}
	if len(c.Evidence) > 0 {
		b.WriteString("\n## What this certificate rests on\n\n| op | tier | required | evidence | cases | status |\n| --- | --- | --- | --- | --- | --- |\n")
		for _, e := range c.Evidence {
			req := "yes"
			if e.Optional {
				req = "no (listed by the library: judged, and a Fail blocks the certificate)"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %d | %s |\n", e.Op, e.Tier, req, e.Describe(), e.Cases, e.Status)
		}
	}
	if len(c.Missing) > 0 {
		fmt.Fprintf(&b, "\nNot certifiable: the contract (docs/contract.md §6) requires kernels that do not exist:\n\n")
		for _, m := range c.Missing {
			fmt.Fprintf(&b, "- %s\n", m)
		}
	}
	if len(c.TooFew) > 0 {
		fmt.Fprintf(&b, "\nNot certified: too few cases ran:\n\n")
		for _, m := range c.TooFew {
			fmt.Fprintf(&b, "- %s\n", m)
		}
	}
	if len(c.Notes) > 0 {
		fmt.Fprintf(&b, "\nNotes on this run:\n\n")
		for _, m := range c.Notes {
			fmt.Fprintf(&b, "- %s\n", m)
		}
	}
	if len(c.NotCertified) > 0 {
		fmt.Fprintf(&b, "\nNot covered by this certificate:\n\n")
		for _, m := range c.NotCertified {
			fmt.Fprintf(&b, "- %s\n", m)
		}
	}
	b.WriteString("\n## Summary\n\n| node | status | Pass | QualityWarning | NotSupported | Fail |\n| --- | --- | --- | --- | --- | --- |\n")
	for _, s := range c.Summary {
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %d | %d |\n", s.Node, s.Status, s.Counts["Pass"], s.Counts["QualityWarning"], s.Counts["NotSupported"], s.Counts["Fail"])
	}
	b.WriteString(c.accuracyTable())
	var bad []CaseResult
	for _, r := range c.Cases {
		if r.Status == harness.Fail || r.Status == harness.QualityWarning {
			bad = append(bad, r)
		}
	}
	if len(bad) > 0 {
		b.WriteString("\n## Failures and quality warnings\n\n")
		for _, r := range bad {
			fmt.Fprintf(&b, "- `%s` **%s**: %s\n", r.Path, r.Status, r.Message)
			if r.Replay != "" {
				fmt.Fprintf(&b, "  - replay: `%s`\n", r.Replay)
			}
			if r.Python != "" {
				fmt.Fprintf(&b, "  - without Go: `%s`\n", r.Python)
			}
		}
	}
	b.WriteString(c.timeTable())
	return b.String()
}

// timeTable is the per-op distribution of case times (the runtime's cost, for budgeting).
func (c *Certificate) timeTable() string {
	per := map[string][]float64{}
	for _, r := range c.Cases {
		op := strings.SplitN(r.Path, "/", 3)
		if len(op) >= 2 && r.Seconds > 0 {
			k := op[0] + "/" + op[1]
			per[k] = append(per[k], r.Seconds)
		}
	}
	if len(per) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n## Case times\n\n| op/tier | cases | median s | max s |\n| --- | --- | --- | --- |\n")
	keys := make([]string, 0, len(per))
	for k := range per {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := per[k]
		sort.Float64s(v)
		fmt.Fprintf(&b, "| %s | %d | %.3f | %.3f |\n", k, len(v), v[len(v)/2], v[len(v)-1])
	}
	return b.String()
}

type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}
type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Cases    []junitCase `xml:"testcase"`
}
type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	Output    string        `xml:"system-out,omitempty"`
}
type junitMessage struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// JUnit is junit.xml: a first suite "certificate" whose one case is the verdict (a failure when
// the certificate is not certified, with every reason: a required kernel that does not exist, too
// few cases, failing cases, a static check), then one suite per op, one case per battery case
// (quality warnings pass with the message as output, NotSupported cases are skipped, a missing
// kernel is a failure). A dashboard that shows JUnit is therefore red exactly when the
// certificate is not certified.
func (c *Certificate) JUnit() ([]byte, error) {
	verdict := junitCase{Name: "verdict", Classname: "octant.certificate", Time: "0", Output: c.Verdict()}
	cert := junitSuite{Name: "octant/" + c.Arch + "/certificate", Tests: 1}
	if !c.Certified {
		why := append(append(append([]string{c.Verdict()}, c.Missing...), c.TooFew...), c.NotCertified...)
		verdict.Failure = &junitMessage{Message: c.Verdict(), Text: strings.Join(why, "\n")}
		cert.Failures = 1
	}
	cert.Cases = []junitCase{verdict}
	suites := map[string]*junitSuite{}
	var order []string
	for _, r := range c.Cases {
		op := strings.SplitN(r.Path, "/", 2)[0]
		s := suites[op]
		if s == nil {
			s = &junitSuite{Name: "octant/" + c.Arch + "/" + op}
			suites[op] = s
			order = append(order, op)
		}
		jc := junitCase{Name: r.Path, Classname: "octant." + op, Time: fmt.Sprintf("%.3f", math.Max(r.Seconds, 0))}
		switch r.Status {
		case harness.Fail:
			jc.Failure = &junitMessage{Message: firstLine(r.Message), Text: strings.TrimSuffix(r.Message+"\n"+r.Replay+"\n"+r.Python, "\n")}
			s.Failures++
		case harness.NotSupported:
			jc.Skipped = &junitMessage{Message: r.Message}
			s.Skipped++
		case harness.QualityWarning:
			jc.Output = "QualityWarning: " + r.Message
		}
		s.Tests++
		s.Cases = append(s.Cases, jc)
	}
	all := junitSuites{Suites: []junitSuite{cert}}
	for _, op := range order {
		all.Suites = append(all.Suites, *suites[op])
	}
	b, err := xml.MarshalIndent(all, "", "  ")
	if err != nil {
		return nil, err
	}
	return append([]byte(xml.Header), append(b, '\n')...), nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// Describe is the evidence in words: "ran on NVIDIA H200 (sm_90)", "compiled and disassembled
// only: no kernel ran", "missing: not built".
func (e Evidence) Describe() string {
	switch e.How {
	case HowRan:
		return "ran on " + e.Where + e.domainNote()
	case HowModel:
		return "ran on a model: " + e.Where + e.domainNote()
	case HowOther:
		return "ran on another device: " + e.Where + e.domainNote()
	case HowCompiled:
		return "compiled and disassembled only (" + e.Where + "): no kernel ran"
	case HowNotRun:
		return "not run: no case ran (to run on " + e.Where + ")" + e.domainNote()
	case HowNotDeclared:
		return "not declared: " + e.Where
	case HowInDecode:
		return "inside decode: " + e.Where
	}
	return "missing: " + e.Where
}

// domainNote is what a declared unit's evidence adds about its declaration: the cases outside
// its domain, a tier not reported.
func (e Evidence) domainNote() string {
	s := ""
	if e.OutsideDomain > 0 {
		s += fmt.Sprintf("; %d case%s outside the declared domain (not run)", e.OutsideDomain, plural(e.OutsideDomain))
	}
	if e.TierNotReported {
		s += "; tier not reported (a silent fallback shows only where the tiers' bounds differ)"
	}
	return s
}

// accuracyTable is report.md's accuracy section: per attention op and tier, the error against
// the declared profile (worst |error| / bound: ≤ 1 passes) beside the error against exact
// attention (relative L2; the contract asks below oracle.ContractRelL2), so that CERTIFIED is not
// read as "accurate" where a profile's arithmetic or the output dtype is not.
func (c *Certificate) accuracyTable() string {
	type agg struct {
		n, over, noClaim int
		ratio            float64
		rels             []float64
		warn, fail       int
	}
	per := map[string]*agg{}
	var keys []string
	for _, r := range c.Cases {
		op := strings.SplitN(r.Path, "/", 2)[0]
		if op != string(arch.Decode) && op != string(arch.Prefill) || r.Status == harness.NotSupported || strings.HasSuffix(r.Path, "/missing") {
			continue
		}
		k := unitKey(r.Path)
		a := per[k]
		if a == nil {
			a = &agg{}
			per[k] = a
			keys = append(keys, k)
		}
		a.n++
		a.ratio = math.Max(a.ratio, r.BoundErr)
		if r.Judged == 0 && r.Status != harness.Fail {
			a.noClaim++
		}
		if !math.IsNaN(r.RelL2) && r.Judged > 0 {
			a.rels = append(a.rels, r.RelL2)
			if !(r.RelL2 < oracle.ContractRelL2) {
				a.over++
			}
		}
		switch r.Status {
		case harness.QualityWarning:
			a.warn++
		case harness.Fail:
			a.fail++
		}
	}
	if len(keys) == 0 {
		return ""
	}
	sort.Strings(keys)
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Accuracy: against the declared profile and against exact attention\n\n"+
		"A case passes when every output element is within its bound of the declared profile's model (worst |error| / bound ≤ 1).\n"+
		"Its distance from exact attention (relative L2 over the rows judged) is what a user of the output sees: the contract asks\n"+
		"below %g. A case within its bounds but beyond that is a quality warning: the profile's own arithmetic, or the output\n"+
		"dtype's rounding, costs more than the contract allows on that input. A case where the profile makes no claim about\n"+
		"any element (its own arithmetic overflows on that input: every bound +Inf) judges nothing against a bound or exact\n"+
		"attention; it is counted apart (\"no claim\"), and only its other checks (padding, canaries, the same bits twice) hold.\n\n"+
		"| op/tier | cases | no claim | worst \\|error\\| / bound | rel. L2 from exact: median | max | cases ≥ %g | quality warnings | failures |\n"+
		"| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n", oracle.ContractRelL2, oracle.ContractRelL2)
	for _, k := range keys {
		a := per[k]
		med, mx := "—", "—"
		if len(a.rels) > 0 {
			sort.Float64s(a.rels)
			med, mx = num(a.rels[len(a.rels)/2]), num(a.rels[len(a.rels)-1])
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %s | %s | %s | %d | %d | %d |\n", k, a.n, a.noClaim, num(a.ratio), med, mx, a.over, a.warn, a.fail)
	}
	return b.String()
}
