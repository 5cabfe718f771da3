package conformance

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"
)

// ReadCertificate reads a certificate.json written by Certificate.Write. A file that is not a
// whole certificate (truncated, not JSON, another schema) is an error naming the file.
func ReadCertificate(path string) (*Certificate, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c Certificate
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("%s: expected a whole certificate.json, found %d bytes that do not parse (truncated or not a certificate): %v", path, len(b), err)
	}
	if c.Schema != SchemaVersion {
		return nil, fmt.Errorf("%s: expected certificate schema %d, found %d", path, SchemaVersion, c.Schema)
	}
	return &c, nil
}

// UnmarshalJSON reads what MarshalJSON writes: rel_l2 and bound_ratio as numbers or as "+Inf",
// "-Inf", "NaN"; a rel_l2 left out is NaN (not computed).
func (c *CaseResult) UnmarshalJSON(b []byte) error {
	type plain CaseResult
	p := struct {
		*plain
		RelL2    any `json:"rel_l2"`
		BoundErr any `json:"bound_ratio"`
	}{plain: (*plain)(c)}
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	var err error
	if c.RelL2, err = jsonNumber(p.RelL2, math.NaN()); err != nil {
		return fmt.Errorf("case %s: rel_l2: %w", c.Path, err)
	}
	if c.BoundErr, err = jsonNumber(p.BoundErr, 0); err != nil {
		return fmt.Errorf("case %s: bound_ratio: %w", c.Path, err)
	}
	return nil
}

// jsonNumber is the float jsonFloat wrote (absent: def).
func jsonNumber(v any, def float64) (float64, error) {
	switch x := v.(type) {
	case nil:
		return def, nil
	case float64:
		return x, nil
	case string:
		switch x {
		case "NaN":
			return math.NaN(), nil
		case "+Inf":
			return math.Inf(1), nil
		case "-Inf":
			return math.Inf(-1), nil
		}
	}
	return 0, fmt.Errorf("expected a number, \"+Inf\", \"-Inf\" or \"NaN\", found %v", v)
}

// ShardFile is a shard's certificate and where it was read from (for messages).
type ShardFile struct {
	Name string
	Cert *Certificate
}

// Merge combines the certificates of the shards of one case-count run into the certificate of
// the unsharded run with the same flags: the same cases in the same order (case k of the case
// list from shard k mod n), evidence, summary, case floor and verdict, recomputed on the merged
// cases (Finish). Shards of different runs (commit, library, case generator, seed, case counts,
// n, plan) are an error, and so is a shard that holds another number of cases than its part of
// the list (an edited or cut file). A shard missing from files is not run: its cases are absent,
// the certificate names it under shards_not_run and is not certified. The merged verdict is never
// better than the worst shard's cases: every case of every shard is in it.
func Merge(files []ShardFile, command string) (*Certificate, error) {
	if len(files) == 0 {
		return nil, fmt.Errorf("merge: expected at least one shard certificate, found none")
	}
	for _, f := range files {
		s := f.Cert.Shard
		if s == nil {
			return nil, fmt.Errorf("merge: %s: expected a shard's certificate (octant conform --cases N --shard i/n), found one without \"shard\" (%s)", f.Name, f.Cert.Verdict())
		}
		if s.Count < 1 || s.Index < 0 || s.Index >= s.Count || s.Total < 0 || s.Static < 0 {
			return nil, fmt.Errorf("merge: %s: expected shard i/n with 0 ≤ i < n and counts ≥ 0, found %s (total %d, static %d)", f.Name, s, s.Total, s.Static)
		}
	}
	base := files[0]
	n := base.Cert.Shard.Count
	byIndex := make([]*ShardFile, n)
	for i := range files {
		f := &files[i]
		if err := sameRun(base, *f); err != nil {
			return nil, err
		}
		s := f.Cert.Shard
		if prev := byIndex[s.Index]; prev != nil {
			return nil, fmt.Errorf("merge: shard %s given twice: %s and %s", s, prev.Name, f.Name)
		}
		want := len(ShardCases(make([]struct{}, s.Total), s.Index, n))
		if s.Ran != want || len(f.Cert.Cases) < s.Static+s.Ran {
			return nil, fmt.Errorf("merge: %s: shard %s of a %d-case list must hold %d cases of it, found %d recorded and %d in the file (edited or cut)", f.Name, s, s.Total, want, s.Ran, len(f.Cert.Cases)-s.Static)
		}
		byIndex[s.Index] = f
	}
	c := *base.Cert
	c.Shard, c.Command, c.Date, c.TooFew = nil, command, time.Now().UTC().Format(time.RFC3339), nil
	c.Cases = slices.Clone(base.Cert.Cases[:base.Cert.Shard.Static])
	c.ShardsNotRun, c.VisibleDevices, c.ShardDevices = nil, "", nil
	for i, f := range byIndex {
		switch {
		case f == nil:
			c.ShardsNotRun = append(c.ShardsNotRun, Shard{Index: i, Count: n}.String())
		case f.Cert.VisibleDevices != "":
			c.ShardDevices = append(c.ShardDevices, fmt.Sprintf("%s: %s", f.Cert.Shard, f.Cert.VisibleDevices))
		}
	}
	total := base.Cert.Shard.Total
	for k := 0; k < total; k++ {
		if f := byIndex[k%n]; f != nil {
			c.Cases = append(c.Cases, f.Cert.Cases[f.Cert.Shard.Static+k/n])
		}
	}
	// Finish turns a unit with no case in a shard into "not run"; what was to run is the same in
	// every shard, so the merged row takes it from any shard that ran a case of the unit.
	c.Evidence = slices.Clone(base.Cert.Evidence)
	for i := range c.Evidence {
		for _, f := range byIndex {
			if f != nil && f.Cert.Evidence[i].How != HowNotRun {
				c.Evidence[i].How = f.Cert.Evidence[i].How
			}
		}
	}
	c.Finish()
	return &c, nil
}

// sameRun checks that shard f comes from the same run as base: everything that decides the case
// list and what judged it.
func sameRun(base, f ShardFile) error {
	a, b := base.Cert, f.Cert
	adapterSHA := func(c *Certificate) string {
		if c.Adapter == nil {
			return ""
		}
		return c.Adapter.SHA256
	}
	units := func(c *Certificate) string {
		var u []string
		for _, e := range c.Evidence {
			u = append(u, string(e.Op)+"/"+string(e.Tier))
		}
		return strings.Join(u, ", ")
	}
	for _, d := range []struct {
		what string
		x, y any
	}{
		{"schema", a.Schema, b.Schema}, {"suite version", a.Suite, b.Suite},
		{"commit", a.Commit, b.Commit}, {"dirty tree", a.Dirty, b.Dirty}, {"mode", a.Mode, b.Mode},
		{"architecture", a.Arch, b.Arch}, {"library sha256", a.LibrarySHA, b.LibrarySHA},
		{"adapter sha256", adapterSHA(a), adapterSHA(b)}, {"ABI", a.ABI, b.ABI},
		{"case generator", a.CaseGen, b.CaseGen}, {"kernel sources sha256", a.KernelSources, b.KernelSources},
		{"seed", a.Seed, b.Seed}, {"fixed cases", a.Fixed, b.Fixed}, {"random cases", a.RandomCases, b.RandomCases},
		{"min cases", a.MinCases, b.MinCases}, {"shard count n", a.Shard.Count, b.Shard.Count},
		{"case list length", a.Shard.Total, b.Shard.Total}, {"static cases", a.Shard.Static, b.Shard.Static},
		{"units (--units)", a.Partial, b.Partial}, {"narrowed domain", a.Narrowed, b.Narrowed}, {"notes", a.Notes, b.Notes},
		{"evidence rows", units(a), units(b)},
	} {
		if !reflect.DeepEqual(d.x, d.y) {
			return fmt.Errorf("merge: %s and %s are shards of different runs: %s %v vs %v", base.Name, f.Name, d.what, show(d.x), show(d.y))
		}
	}
	return nil
}

// show prints a pointer's value.
func show(v any) any {
	if p, ok := v.(*int); ok {
		if p == nil {
			return "none"
		}
		return *p
	}
	return v
}
