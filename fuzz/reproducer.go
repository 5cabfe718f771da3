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
	Target   string          `json:"target"`   // what was checked: "oracle"
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

// TargetOracle is the only replay target so far: the property is re-run against the oracle.
const TargetOracle = "oracle"

// ReplayCommand is the command that replays a reproducer file, run from the repository root.
const ReplayCommand = "go run ./cmd/octant replay"

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
	for _, p := range Properties() {
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
	return &Reproducer{Op: p.Op, Property: p.Name, Target: TargetOracle, Case: raw,
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
// saying what failed otherwise.
func Replay(path string) error {
	r, err := ReadReproducer(path)
	if err != nil {
		return err
	}
	p, ok := lookupProperty(r.Property)
	if !ok {
		var names []string
		for _, q := range Properties() {
			names = append(names, q.Name)
		}
		sort.Strings(names)
		return fmt.Errorf("%s: unknown property %q, expected one of %s", path, r.Property, strings.Join(names, ", "))
	}
	if r.Op != "" && r.Op != p.Op {
		return fmt.Errorf("%s: op %q does not match property %s (op %q)", path, r.Op, p.Name, p.Op)
	}
	if r.Target != "" && r.Target != TargetOracle {
		return fmt.Errorf("%s: target %q: this replay runs properties against the oracle only", path, r.Target)
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
func recordFailure(prop string, c any, err error) (string, error) {
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
	path, werr := recordFailure(prop, c, err)
	t.Fatal(failureMessage(prop, err, path, werr))
}

// failureMessage is what a failing property reports: the property and the error, and as the last
// line the command that replays the reproducer (or why none was written).
func failureMessage(prop string, err error, path string, werr error) string {
	if werr != nil {
		return fmt.Sprintf("%s: %v\n(no reproducer written: %v)", prop, err, werr)
	}
	return fmt.Sprintf("%s: %v\nreplay: %s %s", prop, err, ReplayCommand, displayPath(path))
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
