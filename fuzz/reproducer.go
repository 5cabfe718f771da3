package fuzz

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"pgregory.net/rapid"
)

// Reproducer is one case a property failed on (or an example), as written under
// corpus/regressions/<op>/: the property, the case in the property's own JSON form (everything
// needed to rebuild it: concrete inputs where they are small, recipes and seeds with a digest where
// they are not), and the verdict it got.
type Reproducer struct {
	Op       string          `json:"op"`       // "slot", "querymap", "merge": the directory
	Property string          `json:"property"` // e.g. "slot-roundtrip"
	Target   string          `json:"target"`   // what was checked: "oracle", or "lib" (a kernel library)
	Case     json.RawMessage `json:"case"`
	Verdict  ReproVerdict    `json:"verdict"`
	Found    string          `json:"found,omitempty"` // when and with what the case was recorded
	Note     string          `json:"note,omitempty"`
}

// ReproVerdict is the outcome recorded with a reproducer.
type ReproVerdict struct {
	Status  string `json:"status"` // "fail" (written by a failing property) or "pass" (an example)
	Message string `json:"message,omitempty"`
}

// Replay targets: TargetOracle properties check the oracle; TargetLib properties (the GPU targets)
// check a kernel library against the oracle and replay with one (`octant replay --lib PATH`), or
// against the oracle alone without it.
const (
	TargetOracle = "oracle"
	TargetLib    = "lib"
)

// ReplayCommand is the command that replays a reproducer file, run from the repository root.
// $OCTANT_REPLAY_CMD overrides it in failure messages (a machine without Go runs the prebuilt
// binary: OCTANT_REPLAY_CMD="bin/octant replay").
const ReplayCommand = "go run ./cmd/octant replay"

// ReplayCommandEnv names the environment variable that overrides ReplayCommand in messages.
const ReplayCommandEnv = "OCTANT_REPLAY_CMD"

func replayCommand() string {
	if c := os.Getenv(ReplayCommandEnv); c != "" {
		return c
	}
	return ReplayCommand
}

// RegressionsEnv names an environment variable: the directory that failing properties write
// reproducers to (default: corpus/regressions of the module holding the working directory), or
// "off" to write none.
const RegressionsEnv = "OCTANT_REGRESSIONS"

// Property is one oracle property: a rapid property (Check), exposed as TestX and FuzzX in this
// package's tests, and its replay from a reproducer's case.
type Property struct {
	Name  string // "slot-roundtrip", …: the reproducer's property field
	Op    string // directory under corpus/regressions
	Doc   string
	Check func(*rapid.T)
	// replay decodes a case and re-runs the property's check on it.
	replay func(json.RawMessage) error
	// replayLib, for GPU properties (Target TargetLib), re-runs the check with a library (g nil:
	// the oracle alone).
	replayLib func(raw json.RawMessage, g *GPU) error
}

// Target is what the property checks: TargetLib for GPU properties, else TargetOracle.
func (p Property) Target() string {
	if p.replayLib != nil {
		return TargetLib
	}
	return TargetOracle
}

// Properties lists every property of the package (prop_*.go).
func Properties() []Property {
	return []Property{
		{Name: PropNameSlotRoundTrip, Op: "slot", Doc: "quantize → slot bytes → dequantize equals LUT·scale/64 of the codes; re-quantizing is stable; acceptance says identical", Check: PropSlotRoundTrip, replay: replaySlotRoundTrip},
		{Name: PropNameSlotAcceptance, Op: "slot", Doc: "oracle slots identical; single bit flips of codes and scales unexplained unless a re-derived tie; pad ignored; non-finite groups decode to zero", Check: PropSlotAcceptance, replay: replaySlotAcceptance},
		{Name: PropNameQueryMaps, Op: "querymap", Doc: "oracle.BuildQueryMaps equals a brute-force reading of KERNELS.md §4, and refuses exactly the inputs no builder produces", Check: PropQueryMaps, replay: replayQueryMaps},
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

// moduleRoot finds the directory of this module's go.mod, walking up from the working directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.Contains(b, []byte("module github.com/octant-kv/octant")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod of module github.com/octant-kv/octant above the working directory")
		}
		dir = parent
	}
}

// RegressionsDir is where reproducers go: $OCTANT_REGRESSIONS, or corpus/regressions at the
// module root. It returns "" when writing is turned off.
func RegressionsDir() (string, error) {
	if d, ok := os.LookupEnv(RegressionsEnv); ok {
		if d == "off" || d == "" {
			return "", nil
		}
		return d, nil
	}
	root, err := moduleRoot()
	if err != nil {
		return "", fmt.Errorf("%w (set %s)", err, RegressionsEnv)
	}
	return filepath.Join(root, "corpus", "regressions"), nil
}

// displayPath is path relative to the module root when it lies inside it (the replay command
// runs there), else absolute.
func displayPath(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	if root, err := moduleRoot(); err == nil {
		if rel, err := filepath.Rel(root, abs); err == nil && !strings.HasPrefix(rel, "..") {
			return rel
		}
	}
	return abs
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

// Encode is the reproducer as indented JSON.
func (r *Reproducer) Encode() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Write stores the reproducer as dir/<op>/<property>-<hash of the case>.json and returns the
// path.
func (r *Reproducer) Write(dir string) (string, error) {
	b, err := r.Encode()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(r.Case)
	d := filepath.Join(dir, r.Op)
	if err := os.MkdirAll(d, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(d, fmt.Sprintf("%s-%s.json", r.Property, hex.EncodeToString(sum[:6])))
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return "", err
	}
	return path, nil
}

// ReadReproducer loads a reproducer file.
func ReadReproducer(path string) (*Reproducer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Reproducer
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: not a reproducer: %w", path, err)
	}
	if r.Property == "" || len(r.Case) == 0 {
		return nil, fmt.Errorf("%s: not a reproducer: expected the fields property and case", path)
	}
	return &r, nil
}

// Replay rebuilds the case of a reproducer file and re-runs its property against the oracle. It
// returns nil when the property holds (the bug is fixed, or the file is an example), and an error
// saying what failed otherwise. A GPU property's case runs against the oracle alone (ReplayLib
// runs it on a library).
func Replay(path string) error { return ReplayLib(path, nil) }

// ReplayLib is Replay with a kernel library: a GPU property's case runs on every tier of g and the
// oracle judges it, as in the fuzz target. g nil runs the oracle alone; an oracle property ignores
// g.
func ReplayLib(path string, g *GPU) error {
	r, err := ReadReproducer(path)
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
	if p.replayLib != nil {
		if err := p.replayLib(r.Case, g); err != nil {
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
func recordFailure(prop string, c any, err error, g *GPU) (string, error) {
	dir, derr := RegressionsDir()
	if derr != nil {
		return "", derr
	}
	if dir == "" {
		return "", fmt.Errorf("%s=off", RegressionsEnv)
	}
	r, rerr := NewReproducer(prop, c, "fail", err.Error())
	if rerr != nil {
		return "", rerr
	}
	if g != nil {
		r.Found += "; " + g.String()
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

// failLib reports a GPU property's failure on library g; the replay command names the library.
func failLib(t *rapid.T, prop string, g *GPU, c any, err error) {
	path, werr := recordFailure(prop, c, err, g)
	t.Fatal(failureMessage(prop, err, path, werr, g))
}

// failureMessage is what a failing property reports: the property and the error, and as the last
// line the command that replays the reproducer (or why none was written).
func failureMessage(prop string, err error, path string, werr error, g *GPU) string {
	if werr != nil {
		return fmt.Sprintf("%s: %v\n(no reproducer written: %v)", prop, err, werr)
	}
	lib := ""
	if g != nil {
		lib = " --lib " + g.Path
	}
	return fmt.Sprintf("%s: %v\nreplay: %s%s %s", prop, err, replayCommand(), lib, displayPath(path))
}

// decodeCase unmarshals a case strictly (unknown fields are an error: a typo in a hand-written
// reproducer must not silently change the case).
func decodeCase(raw json.RawMessage, c any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(c); err != nil {
		return fmt.Errorf("decoding the case: %w", err)
	}
	return nil
}
