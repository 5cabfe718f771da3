package cases

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"time"

	"github.com/octant-kv/octant/arch"
	"github.com/octant-kv/octant/harness"
)

// Property is one property of the registry: its name (a reproducer's property field), the
// directory of its reproducers and how a reproducer's case is replayed. Package fuzz holds each
// property's rapid form (TestX, FuzzX) under the same name.
type Property struct {
	Name string // "slot-roundtrip", …: the reproducer's property field
	Op   string // directory under corpus/regressions
	Doc  string
	// prepare, for oracle properties, reads and checks a case (every field in its range) and
	// returns the property's check of it.
	prepare func(json.RawMessage) (func() error, error)
	// call, for GPU properties (Target TargetLib), decodes a case and builds the call the judges
	// run (on a library, or the oracle alone).
	call func(raw json.RawMessage) (harness.Call, error)
	// load, for GPU properties that are not one call (the must-not-matter and isolation
	// properties), decodes a case strictly, checks every field (its Validate), builds its calls
	// once (a recorded digest must match) and returns their op and the property's check of the
	// case with a library (nil: the oracle alone).
	load func(raw json.RawMessage) (arch.Op, func(l *harness.Lib) error, error)
}

// Target is what the property checks: TargetLib for GPU properties, else TargetOracle.
func (p Property) Target() string {
	if p.call != nil || p.load != nil {
		return TargetLib
	}
	return TargetOracle
}

// Properties lists every property of the package (prop_*.go).
func Properties() []Property {
	return []Property{
		{Name: PropNameSlotRoundTrip, Op: "slot", Doc: "quantize → slot bytes → dequantize equals LUT·scale/64 of the codes; re-quantizing is stable; acceptance says identical", prepare: prepareSlot(CheckSlotRoundTrip)},
		{Name: PropNameSlotAcceptance, Op: "slot", Doc: "oracle slots identical; single bit flips of codes and scales unexplained unless a re-derived tie; pad ignored; non-finite groups decode to zero", prepare: prepareSlot(CheckSlotAcceptance)},
		{Name: PropNameQueryMaps, Op: "querymap", Doc: "oracle.BuildQueryMaps equals a brute-force reading of docs/contract.md §4, and refuses exactly the inputs no builder produces", prepare: prepareQueryMaps},
		{Name: PropNameMerge, Op: "merge", Doc: "DecodePartials over any split geometry, merged, equals ExactDecode within a derived float64 bound", prepare: prepareMerge},
	}
}

func lookupProperty(name string) (Property, bool) {
	for _, p := range append(Properties(), GPUProperties()...) {
		if p.Name == name {
			return p, true
		}
	}
	return Property{}, false
}

// NewReproducer wraps a case of property prop with a verdict.
func NewReproducer(prop string, c any, status, message string) (*Reproducer, error) {
	p, ok := lookupProperty(prop)
	if !ok {
		return nil, fmt.Errorf("unknown property %q", prop)
	}
	raw, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("encoding the case: %w", err)
	}
	return &Reproducer{Op: p.Op, Property: p.Name, Target: p.Target(), Case: raw,
		Verdict: ReproVerdict{Status: status, Message: message},
		Found:   fmt.Sprintf("%s, %s %s/%s", time.Now().UTC().Format(time.RFC3339), runtime.Version(), runtime.GOOS, runtime.GOARCH)}, nil
}

// Replay rebuilds the case of a reproducer file and re-runs its property against the oracle. It
// returns nil when the property holds (the bug is fixed, or the file is an example), and an error
// saying what failed otherwise. A GPU property's case runs against the oracle alone (ReplayLib
// runs it on a library).
func Replay(path string) error { return ReplayLib(path, nil) }

// ReplayLib is Replay with a kernel library: a GPU property's case runs on every implementation in
// l and the oracle judges it (harness.CheckAll), as in the fuzz target. l nil runs the oracle
// alone; an oracle property ignores l. A file that cannot be replayed (LoadReproducer) gives a
// *ReproducerError; a case that replays and fails, any other error.
func ReplayLib(path string, l *harness.Lib) error {
	x, err := LoadReproducer(path)
	if err != nil {
		return err
	}
	return x.Run(l)
}

// Replayable is a reproducer read and checked, with its case built: what Run replays.
type Replayable struct {
	Path     string
	Repro    *Reproducer
	Property Property
	op       arch.Op // the op of a GPU property's call
	run      func(l *harness.Lib) error
}

// LoadReproducer reads a reproducer file and prepares its replay (ParseReproducer).
func LoadReproducer(path string) (*Replayable, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, &ReproducerError{Path: path, Err: err}
	}
	return ParseReproducer(path, b)
}

// ParseReproducer reads a reproducer from its bytes (path names it in errors) and prepares its
// replay: the file is a reproducer (DecodeReproducer), its property is known and its op and
// target are the property's, every field of its case is in range (the case types' Validate
// methods), and its call is built (a recorded digest must match the rebuilt call). Every error is
// a *ReproducerError; nothing here panics on any input (FuzzReadReproducer).
func ParseReproducer(path string, b []byte) (*Replayable, error) {
	r, err := DecodeReproducer(path, b)
	if err != nil {
		return nil, err
	}
	bad := func(err error) (*Replayable, error) { return nil, &ReproducerError{Path: path, Err: err} }
	p, ok := lookupProperty(r.Property)
	if !ok {
		var names []string
		for _, q := range append(Properties(), GPUProperties()...) {
			names = append(names, q.Name)
		}
		sort.Strings(names)
		return bad(fmt.Errorf("property = %q, expected one of %s", r.Property, strings.Join(names, ", ")))
	}
	if r.Op != "" && r.Op != p.Op {
		return bad(fmt.Errorf("op = %q, expected %q (the op of property %s)", r.Op, p.Op, p.Name))
	}
	if r.Target != "" && r.Target != p.Target() {
		return bad(fmt.Errorf("target = %q, expected %q (the target of property %s)", r.Target, p.Target(), p.Name))
	}
	x := &Replayable{Path: path, Repro: r, Property: p}
	if err := x.prepare(r.Case); err != nil {
		return bad(under("case", err))
	}
	return x, nil
}

// prepare checks the case and builds what Run runs.
func (x *Replayable) prepare(raw json.RawMessage) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("building the call panicked: %v\n%s", r, debug.Stack())
		}
	}()
	p := x.Property
	switch {
	case p.prepare != nil:
		check, err := p.prepare(raw)
		if err != nil {
			return err
		}
		x.run = func(*harness.Lib) error { return check() }
		return nil
	case p.load != nil:
		op, run, err := p.load(raw)
		if err != nil {
			return err
		}
		if x.op = op; string(x.op) != p.Op {
			return fmt.Errorf("a %s recipe, expected a %s recipe (property %s)", x.op, p.Op, p.Name)
		}
		x.run = run
		return nil
	case p.call != nil:
		if err := validateRecipe(p.Name, raw); err != nil {
			return err
		}
		c, err := p.call(raw)
		if err != nil {
			return err
		}
		x.op = c.Op()
		x.run = func(l *harness.Lib) error { return verdictError(harness.CheckAll(l, c)) }
		return nil
	}
	return fmt.Errorf("property %s: no reader of its case", p.Name)
}

// verdictError is the replay's outcome of a GPU property's verdicts: the *harness.DomainError when
// the call lies outside l's declared domain (nothing ran), else the first failure.
func verdictError(vs []harness.Verdict) error {
	if d, ok := harness.OutsideDomain(vs); ok {
		return d
	}
	return harness.FirstFailure(vs)
}

// Run replays the case: nil when the property holds, else the failure (starting with the path and
// the property). A GPU property's case runs on every implementation in l of its op (the oracle
// alone when l is nil). A case outside l's declared domain (an adapter's, harness.Lib.Decl) is
// not run: its error wraps the *harness.DomainError that says why, which errors.As finds.
func (x *Replayable) Run(l *harness.Lib) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: %s: panic while replaying: %v\n%s", x.Path, x.Property.Name, r, debug.Stack())
		}
	}()
	if err := x.run(l); err != nil {
		return fmt.Errorf("%s: %s: %w", x.Path, x.Property.Name, err)
	}
	return nil
}

// Ran says what Run runs with library l: "oracle" for an oracle property; for a GPU property
// "oracle only: no --lib" without a library, else the implementations of its op in l ("oracle;
// tiers portable, mma on build/liboctave_cuda.so").
func (x *Replayable) Ran(l *harness.Lib) string {
	if x.Property.Target() == TargetOracle {
		return "oracle"
	}
	if l == nil {
		return "oracle only: no --lib"
	}
	impls, err := harness.Impls(l, x.op)
	if err != nil {
		return "oracle; " + err.Error()
	}
	var names []string
	for _, im := range impls {
		names = append(names, im.Name)
	}
	what := "tiers"
	if !x.op.Tiered() {
		what = "the library's " + string(x.op) + ":"
	}
	return fmt.Sprintf("oracle; %s %s on %s", what, strings.Join(names, ", "), l.Path)
}
