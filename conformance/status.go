package conformance

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/octant-kv/octant/harness"
)

// CaseResult is one case of the battery: the harness's verdict on it (harness.Verdict), named
// by a path.
type CaseResult struct {
	Path    string         `json:"path"`
	Status  harness.Status `json:"status"`
	Seconds float64        `json:"seconds"`
	Message string         `json:"message,omitempty"`
	Replay  string         `json:"replay,omitempty"` // the command that replays a failing case
	// Python is the command that replays a failing case of a library run by an adapter without Go
	// (its Python reproducer, docs/adapters.md), or why none was written.
	Python   string  `json:"python,omitempty"`
	RelL2    float64 `json:"rel_l2,omitempty"`      // decode, prefill: distance from exact attention
	BoundErr float64 `json:"bound_ratio,omitempty"` // worst |error|/bound of the case (≤ 1 passes; rotate is bit-exact: 0)
	// Judged counts the elements held to a bound (store: slots written); 0 means nothing was
	// compared (every row padding, an empty call), so a BoundErr of 0 says nothing.
	Judged int `json:"judged,omitempty"`
}

// MarshalJSON writes rel_l2 and bound_ratio as numbers when finite and as the strings "+Inf",
// "-Inf" or "NaN" otherwise (JSON has no such numbers, and a defective kernel's NaN output gives
// an infinite bound ratio: it must reach the certificate, not abort it). A NaN rel_l2 means "not
// computed" and is left out.
func (c CaseResult) MarshalJSON() ([]byte, error) {
	type plain CaseResult
	p := struct {
		plain
		RelL2    any `json:"rel_l2,omitempty"`
		BoundErr any `json:"bound_ratio,omitempty"`
	}{plain: plain(c)}
	if !math.IsNaN(c.RelL2) && c.RelL2 != 0 {
		p.RelL2 = jsonFloat(c.RelL2)
	}
	if c.BoundErr != 0 {
		p.BoundErr = jsonFloat(c.BoundErr)
	}
	return json.Marshal(p)
}

// jsonFloat is x, or its name when it is not finite.
func jsonFloat(x float64) any {
	switch {
	case math.IsNaN(x):
		return "NaN"
	case math.IsInf(x, 1):
		return "+Inf"
	case math.IsInf(x, -1):
		return "-Inf"
	}
	return x
}

// Summary is the status of every prefix of the case paths (worst wins) and the counts.
type Summary struct {
	Node   string         `json:"node"`
	Status harness.Status `json:"status"`
	Counts map[string]int `json:"counts"`
}

// Summarize returns one Summary per path prefix of depth ≤ depth (op, op/tier, …), sorted.
func Summarize(cases []CaseResult, depth int) []Summary {
	m := map[string]*Summary{}
	for _, c := range cases {
		el := strings.Split(c.Path, "/")
		for k := 1; k <= depth && k <= len(el); k++ {
			key := strings.Join(el[:k], "/")
			s := m[key]
			if s == nil {
				s = &Summary{Node: key, Counts: map[string]int{}}
				m[key] = s
			}
			s.Status = harness.Worst(s.Status, c.Status)
			s.Counts[c.Status.String()]++
		}
	}
	out := make([]Summary, 0, len(m))
	for _, s := range m {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Node < out[j].Node })
	return out
}

// CountsString is a status count map for people: "Pass 24, QualityWarning 1", best status first,
// statuses with no case left out ("no cases" when empty).
func CountsString(counts map[string]int) string {
	var parts []string
	for _, st := range []harness.Status{harness.Pass, harness.QualityWarning, harness.NotSupported, harness.Fail} {
		if n := counts[st.String()]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", st, n))
		}
	}
	if len(parts) == 0 {
		return "no cases"
	}
	return strings.Join(parts, ", ")
}
