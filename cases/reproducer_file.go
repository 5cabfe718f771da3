package cases

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/octant-kv/octant/internal/provenance"
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

// ReplayCommand is the command that replays a reproducer file, run from the repository root (a
// caller may name another in its messages: a machine without Go runs the prebuilt binary,
// "bin/octant replay").
const ReplayCommand = "go run ./cmd/octant replay"

// ModuleRoot finds the directory of this module's go.mod, walking up from the working directory
// (provenance.ModuleRoot).
func ModuleRoot() (string, error) { return provenance.ModuleRoot() }

// DefaultRegressionsDir is the one regression corpus, corpus/regressions at the module root.
func DefaultRegressionsDir() (string, error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "corpus", "regressions"), nil
}

// DisplayPath is path relative to the module root when it lies inside it (the replay command
// runs there), else absolute.
func DisplayPath(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	if root, err := ModuleRoot(); err == nil {
		if rel, err := filepath.Rel(root, abs); err == nil && !strings.HasPrefix(rel, "..") {
			return rel
		}
	}
	return abs
}

// ShellWord is s as one word of a shell command line: s itself when it holds only characters no
// shell treats specially, else s in single quotes (a worker spec such as
// host:/a/capi.py?lib=/b.so&device=1 holds ? and &), so that a replay line runs as printed.
func ShellWord(s string) string {
	safe := s != ""
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_./:=,+@%", c)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
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

// ReproducerError is a reproducer file that cannot be replayed: unreadable, not a reproducer, an
// unknown property, or a case with a field out of its range. It is apart from a case that replays
// and fails: `octant replay` counts such a file unreadable (exit 2), never failing (exit 1).
type ReproducerError struct {
	Path string
	Err  error
}

func (e *ReproducerError) Error() string { return e.Path + ": " + e.Err.Error() }

func (e *ReproducerError) Unwrap() error { return e.Err }

// Verdict statuses a reproducer records.
const (
	StatusFail = "fail" // written by a failing property
	StatusPass = "pass" // an example
)

// ReadReproducer loads a reproducer file (DecodeReproducer).
func ReadReproducer(path string) (*Reproducer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, &ReproducerError{Path: path, Err: err}
	}
	return DecodeReproducer(path, b)
}

// DecodeReproducer reads a reproducer from its JSON bytes (path names it in errors): strictly (an
// unknown or misspelt field is an error), with the fields property, case (a JSON object) and
// verdict present, target "oracle" or "lib" when present, and status "fail" or "pass". It leaves
// the case to the property's reader. Every error is a *ReproducerError.
func DecodeReproducer(path string, b []byte) (*Reproducer, error) {
	bad := func(format string, args ...any) (*Reproducer, error) {
		return nil, &ReproducerError{Path: path, Err: fmt.Errorf(format, args...)}
	}
	var r Reproducer
	if err := decodeStrict(b, &r); err != nil {
		return bad("not a reproducer: %w", err)
	}
	if r.Property == "" {
		return bad("not a reproducer: no property, expected the name of the property that wrote it")
	}
	if c := bytes.TrimSpace(r.Case); len(c) == 0 || c[0] != '{' {
		return bad("case = %.40s, expected a JSON object (the property's case)", string(c))
	}
	if r.Target != "" && r.Target != TargetOracle && r.Target != TargetLib {
		return bad("target = %q, expected %q or %q", r.Target, TargetOracle, TargetLib)
	}
	if r.Verdict.Status != StatusFail && r.Verdict.Status != StatusPass {
		return bad("verdict.status = %q, expected %q or %q", r.Verdict.Status, StatusFail, StatusPass)
	}
	return &r, nil
}

// decodeStrict unmarshals one JSON value into v: unknown fields and anything after the value are
// errors.
func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the JSON value, expected one value")
	}
	return nil
}

// DecodeCase unmarshals a case strictly (unknown fields are an error: a typo in a hand-written
// reproducer must not silently change the case).
func DecodeCase(raw json.RawMessage, c any) error {
	if err := decodeStrict(raw, c); err != nil {
		return fmt.Errorf("decoding the case: %w", err)
	}
	return nil
}
