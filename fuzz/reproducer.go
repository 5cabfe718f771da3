package fuzz

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/octant-kv/octant/harness"
	"pgregory.net/rapid"
)

// Property is one oracle property: a rapid property (Check), exposed as TestX and FuzzX in this
// package's tests, and its replay from a reproducer's case.
type Property struct {
	Name  string // "slot-roundtrip", …: the reproducer's property field
	Op    string // directory under corpus/regressions
	Doc   string
	Check func(*rapid.T)
	// replay decodes a case and re-runs the property's check on it.
	replay func(json.RawMessage) error
	// call, for GPU properties (Target TargetLib), decodes a case and builds the call the judges
	// run (on a library, or the oracle alone).
	call func(raw json.RawMessage) (harness.Call, error)
	// check, for GPU properties that are not one call (the must-not-matter properties), decodes
	// a case and runs the property's check with a library (nil: the oracle alone).
	check func(raw json.RawMessage, l *harness.Lib) error
}

// Target is what the property checks: TargetLib for GPU properties, else TargetOracle.
func (p Property) Target() string {
	if p.call != nil || p.check != nil {
		return harness.TargetLib
	}
	return harness.TargetOracle
}

// Properties lists every property of the package (prop_*.go).
func Properties() []Property {
	return []Property{
		{Name: PropNameSlotRoundTrip, Op: "slot", Doc: "quantize → slot bytes → dequantize equals LUT·scale/64 of the codes; re-quantizing is stable; acceptance says identical", Check: PropSlotRoundTrip, replay: replaySlotRoundTrip},
		{Name: PropNameSlotAcceptance, Op: "slot", Doc: "oracle slots identical; single bit flips of codes and scales unexplained unless a re-derived tie; pad ignored; non-finite groups decode to zero", Check: PropSlotAcceptance, replay: replaySlotAcceptance},
		{Name: PropNameQueryMaps, Op: "querymap", Doc: "oracle.BuildQueryMaps equals a brute-force reading of docs/contract.md §4, and refuses exactly the inputs no builder produces", Check: PropQueryMaps, replay: replayQueryMaps},
		{Name: PropNameMerge, Op: "merge", Doc: "DecodePartials over any split geometry, merged, equals ExactDecode within a derived float64 bound", Check: PropMergePartials, replay: replayMerge},
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
func NewReproducer(prop string, c any, status, message string) (*harness.Reproducer, error) {
	p, ok := lookupProperty(prop)
	if !ok {
		return nil, fmt.Errorf("unknown property %q", prop)
	}
	raw, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("encoding the case: %w", err)
	}
	return &harness.Reproducer{Op: p.Op, Property: p.Name, Target: p.Target(), Case: raw,
		Verdict: harness.ReproVerdict{Status: status, Message: message},
		Found:   fmt.Sprintf("%s, %s %s/%s", time.Now().UTC().Format(time.RFC3339), runtime.Version(), runtime.GOOS, runtime.GOARCH)}, nil
}

// Replay rebuilds the case of a reproducer file and re-runs its property against the oracle. It
// returns nil when the property holds (the bug is fixed, or the file is an example), and an error
// saying what failed otherwise. A GPU property's case runs against the oracle alone (ReplayLib
// runs it on a library).
func Replay(path string) error { return ReplayLib(path, nil) }

// ReplayLib is Replay with a kernel library: a GPU property's case runs on every implementation in
// l and the oracle judges it (harness.CheckAll), as in the fuzz target. l nil runs the oracle
// alone; an oracle property ignores l.
func ReplayLib(path string, l *harness.Lib) error {
	r, err := harness.ReadReproducer(path)
	if err != nil {
		return err
	}
	p, ok := lookupProperty(r.Property)
	if !ok {
		var names []string
		for _, q := range append(Properties(), GPUProperties()...) {
			names = append(names, q.Name)
		}
		sort.Strings(names)
		return fmt.Errorf("%s: unknown property %q, expected one of %s", path, r.Property, strings.Join(names, ", "))
	}
	if r.Op != "" && r.Op != p.Op {
		return fmt.Errorf("%s: op %q does not match property %s (op %q)", path, r.Op, p.Name, p.Op)
	}
	if r.Target != "" && r.Target != p.Target() {
		return fmt.Errorf("%s: target %q does not match property %s (target %q)", path, r.Target, p.Name, p.Target())
	}
	if p.check != nil {
		if err := p.check(r.Case, l); err != nil {
			return fmt.Errorf("%s: %s: %w", path, p.Name, err)
		}
		return nil
	}
	if p.call != nil {
		c, err := p.call(r.Case)
		if err != nil {
			return fmt.Errorf("%s: %s: %w", path, p.Name, err)
		}
		if err := harness.FirstFailure(harness.CheckAll(l, c)); err != nil {
			return fmt.Errorf("%s: %s: %w", path, p.Name, err)
		}
		return nil
	}
	if err := p.replay(r.Case); err != nil {
		return fmt.Errorf("%s: %s: %w", path, p.Name, err)
	}
	return nil
}

// written remembers, per property, the reproducer this process wrote last: while rapid shrinks a
// failure it calls the property on ever smaller failing cases, and only the last (smallest) one
// should stay.
var written struct {
	sync.Mutex
	last map[string]string
}

// recordFailure writes the failing case's reproducer (unless turned off) and returns its path.
func recordFailure(prop string, c any, err error, l *harness.Lib) (string, error) {
	dir, derr := harness.RegressionsDir()
	if derr != nil {
		return "", derr
	}
	if dir == "" {
		return "", fmt.Errorf("%s=off", harness.RegressionsEnv)
	}
	r, rerr := NewReproducer(prop, c, "fail", err.Error())
	if rerr != nil {
		return "", rerr
	}
	if l != nil {
		r.Found += "; " + l.String()
	}
	path, werr := r.Write(dir)
	if werr != nil {
		return "", werr
	}
	written.Lock()
	defer written.Unlock()
	if written.last == nil {
		written.last = map[string]string{}
	}
	if prev := written.last[prop]; prev != "" && prev != path {
		os.Remove(prev)
	}
	written.last[prop] = path
	return path, nil
}

// fail reports a property failure: the error, then the reproducer's replay command on the last
// line.
func fail(t *rapid.T, prop string, c any, err error) {
	path, werr := recordFailure(prop, c, err, nil)
	t.Fatal(failureMessage(prop, err, path, werr, nil))
}

// failLib reports a GPU property's failure on library l; the replay command names the library.
func failLib(t *rapid.T, prop string, l *harness.Lib, c any, err error) {
	path, werr := recordFailure(prop, c, err, l)
	t.Fatal(failureMessage(prop, err, path, werr, l))
}

// failureMessage is what a failing property reports: the property and the error, and as the last
// line the command that replays the reproducer (or why none was written).
func failureMessage(prop string, err error, path string, werr error, l *harness.Lib) string {
	if werr != nil {
		return fmt.Sprintf("%s: %v\n(no reproducer written: %v)", prop, err, werr)
	}
	lib := ""
	if l != nil {
		lib = " --lib " + l.Path
	}
	return fmt.Sprintf("%s: %v\nreplay: %s%s %s", prop, err, harness.ReplayCmd(), lib, harness.DisplayPath(path))
}
