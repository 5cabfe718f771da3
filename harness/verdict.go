package harness

import (
	"errors"
	"fmt"
	"math"

	"github.com/octant-kv/octant/arch"
)

// Status is a judged outcome; a larger value is worse.
type Status int

// Statuses, best first (the Vulkan CTS's: the worst status wins up a tree of cases).
const (
	Pass Status = iota
	NotSupported
	QualityWarning
	Fail
)

var statusNames = []string{"Pass", "NotSupported", "QualityWarning", "Fail"}

func (s Status) String() string {
	if s >= 0 && int(s) < len(statusNames) {
		return statusNames[s]
	}
	return fmt.Sprintf("Status(%d)", int(s))
}

// MarshalText writes the status's name.
func (s Status) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a status name.
func (s *Status) UnmarshalText(b []byte) error {
	for i, n := range statusNames {
		if string(b) == n {
			*s = Status(i)
			return nil
		}
	}
	return fmt.Errorf("status %q: expected one of %v", b, statusNames)
}

// Worst is the worse of two statuses.
func Worst(a, b Status) Status { return max(a, b) }

// Verdict is a judge's outcome for one call on one implementation. One rule for every judge
// (docs/contract.md §5): a call fails on any error status, overwritten canary, modified input,
// written gap or padding row, nondeterministic bits, or an element outside the declared profile's
// bound (Ratio > 1). An attention output within its profile's bound everywhere but not within the
// contract's relative L2 (oracle.ContractRelL2) of exact attention is a QualityWarning when the
// profile's own arithmetic misses the contract on that input (ModelRelL2 says by how much) or the
// output dtype cannot hold the values to that precision; when neither explains it (the output as
// far from its profile's model as the contract allows or farther) it is a Fail: the bound was too
// loose to judge that case element by element.
type Verdict struct {
	Op     arch.Op
	Impl   string
	Status Status
	// Ratio is the worst |error| / bound over the judged elements (0 for a bit-exact op, or when
	// nothing was judged); +Inf or NaN for a non-finite output where a finite one was due.
	Ratio float64
	// Judged counts the elements held to a finite bound (store: the slots written; decode and
	// prefill: not the elements whose profile bound is +Inf, where the profile's own arithmetic
	// overflows). 0 means nothing was compared (every row padding, an empty call, or a profile
	// that makes no claim about this input): Ratio 0 then says nothing.
	Judged int
	// Explained counts the judged elements accepted by a rule other than bit identity (store:
	// slots that differ from the oracle's by a tie or rounding docs/format.md §10 explains).
	Explained int
	// RelL2 is the output's relative L2 distance from exact attention over the judged rows
	// (decode, prefill); NaN when not computed.
	RelL2 float64
	// ModelRelL2 is the declared profile's own model's distance from exact attention (decode,
	// prefill); NaN when not computed.
	ModelRelL2 float64
	// Err says what failed (Fail) or what the warning is about (QualityWarning); nil for Pass.
	Err error
	// Note is a one-line summary for logs ("240 slots: 238 identical, 2 explained").
	Note string
	// Output is the implementation's output of its first run, as bytes: the cache after a store,
	// the output tensor's dtype bits (packed rows, little-endian) otherwise. nil on failure before
	// the output was read.
	Output []byte
}

// Failed reports whether the verdict is Fail.
func (v Verdict) Failed() bool { return v.Status == Fail }

// String is one line: implementation, status, and the error or the numbers.
func (v Verdict) String() string {
	s := fmt.Sprintf("%s %s: %s", v.Op, v.Impl, v.Status)
	if v.Err != nil {
		return s + ": " + v.Err.Error()
	}
	if v.Judged > 0 {
		s += fmt.Sprintf(", worst |error|/bound %.3g over %d elements", v.Ratio, v.Judged)
	}
	if !math.IsNaN(v.RelL2) && v.RelL2 != 0 {
		s += fmt.Sprintf(", rel L2 from exact %.3g", v.RelL2)
	}
	if v.Note != "" {
		s += "; " + v.Note
	}
	return s
}

// newVerdict starts a verdict of op on im: Pass with nothing judged and no distances.
func newVerdict(op arch.Op, im Impl) Verdict {
	return Verdict{Op: op, Impl: im.Name, Status: Pass, RelL2: math.NaN(), ModelRelL2: math.NaN()}
}

// fail marks v failed with err (prefixed with the implementation's name) and returns it.
func (v Verdict) fail(err error) Verdict {
	v.Status = Fail
	v.Err = fmt.Errorf("%s: %w", v.Impl, err)
	return v
}

// failf is fail with a formatted message.
func (v Verdict) failf(format string, a ...any) Verdict { return v.fail(fmt.Errorf(format, a...)) }

// FirstFailure returns the first failing verdict's error, or nil when none failed (quality
// warnings pass): what a property or a reproducer replay reports.
func FirstFailure(vs []Verdict) error {
	for _, v := range vs {
		if v.Failed() {
			return v.Err
		}
	}
	return nil
}

// Summary joins every verdict's line (for a log).
func Summary(vs []Verdict) string {
	var errs []error
	for _, v := range vs {
		errs = append(errs, errors.New(v.String()))
	}
	return errors.Join(errs...).Error()
}
