package fuzz

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/octant-kv/octant/cases"
	"github.com/octant-kv/octant/harness"
	"github.com/octant-kv/octant/harness/harnesstest"
)

// TestReplayRegressions replays every reproducer under corpus/regressions (a file stays red until
// what it found is fixed): against the oracle, and GPU reproducers also on every implementation in
// $OCTANT_LIB when it is set (make emu-test runs them on the CPU emulator). A reproducer outside the
// library's declared domain (an adapter's) skips with the reason.
func TestReplayRegressions(t *testing.T) {
	lib, err := harnesstest.EnvLib()
	if err != nil && !errors.Is(err, harnesstest.ErrNoLib) {
		t.Fatal(err)
	}
	root, err := cases.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "corpus", "regressions")
	n := 0
	err = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".json") {
			return err
		}
		n++
		rel, _ := filepath.Rel(root, path)
		t.Run(rel, func(t *testing.T) {
			err := cases.ReplayLib(path, lib)
			if d := (*harness.DomainError)(nil); errors.As(err, &d) {
				t.Skipf("%v (not run on %s)", d, lib.Path)
			}
			if err != nil {
				t.Errorf("%v\nreplay: %s %s", err, cases.ReplayCommand, rel)
			}
		})
		return nil
	})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	t.Logf("%d reproducers replayed from %s", n, dir)
}

// TestReproducerRoundTrip: a failure writes dir/<op>/<property>-<hash>.json (replacing the file
// the same property wrote before in this process, as rapid shrinks), the message ends with the
// replay command, and Replay rebuilds each property's case.
func TestReproducerRoundTrip(t *testing.T) {
	dir := t.TempDir()
	run := &Runner{Regressions: dir}
	for seed := 0; seed < 8; seed++ {
		// One case of every property, each written as if it had failed, then replayed.
		for _, p := range cases.Properties() {
			var c any
			switch p.Name {
			case cases.PropNameSlotRoundTrip:
				c = cases.SlotCases(cases.SlotCaseOptions{}).Example(seed)
			case cases.PropNameSlotAcceptance:
				c = cases.SlotCases(cases.SlotCaseOptions{Flips: 3}).Example(seed)
			case cases.PropNameQueryMaps:
				c = cases.QueryMapCases().Example(seed)
			case cases.PropNameMerge:
				m := cases.MergeCases().Example(seed)
				in, err := m.Decode.Build()
				if err != nil {
					t.Fatal(err)
				}
				m.Digest = cases.Digest(in)
				c = m
			}
			path, err := run.recordFailure(p.Name, c, errors.New("synthetic failure"), nil)
			if err != nil {
				t.Fatal(err)
			}
			if want := filepath.Join(dir, p.Op); filepath.Dir(path) != want {
				t.Fatalf("reproducer written to %s, expected under %s", path, want)
			}
			msg := run.failureMessage(p.Name, errors.New("synthetic failure"), path, nil, nil)
			if lines := strings.Split(msg, "\n"); !strings.HasPrefix(lines[len(lines)-1], "replay: "+cases.ReplayCommand+" ") {
				t.Fatalf("failure message does not end with the replay command: %q", msg)
			}
			r, err := cases.ReadReproducer(path)
			if err != nil {
				t.Fatal(err)
			}
			if r.Verdict.Status != "fail" || r.Verdict.Message != "synthetic failure" || r.Op != p.Op || r.Target != cases.TargetOracle {
				t.Fatalf("reproducer fields: %+v", r)
			}
			if err := cases.Replay(path); err != nil {
				t.Fatalf("replaying a passing case: %v", err)
			}
		}
	}
	// Only the last reproducer of each property survives.
	for _, p := range cases.Properties() {
		files, _ := filepath.Glob(filepath.Join(dir, p.Op, p.Name+"-*.json"))
		if len(files) != 1 {
			t.Errorf("%s: %d reproducer files left, expected only the last one: %v", p.Name, len(files), files)
		}
	}
}

// TestReplayRefuses: a reproducer that no longer rebuilds the same call, names an unknown property
// or target, or misspells a field is refused with a file error saying so, never taken for a
// failing case.
func TestReplayRefuses(t *testing.T) {
	dir := t.TempDir()
	m := cases.MergeCases().Example(3)
	m.Digest = strings.Repeat("0", 64)
	write := func(name string, r *cases.Reproducer) string {
		b, err := r.Encode()
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	r, err := cases.NewReproducer(cases.PropNameMerge, m, "fail", "x")
	if err != nil {
		t.Fatal(err)
	}
	q, err := cases.NewReproducer(cases.PropNameQueryMaps, &cases.QueryMapCase{QSL: []int32{0, 1}, SeqLens: []int32{5}, NumTokens: 2}, "fail", "x")
	if err != nil {
		t.Fatal(err)
	}
	unknown := *q
	unknown.Property = "no-such-property"
	target := *q
	target.Target = "gfx1100/portable"
	typo := *q
	typo.Case = json.RawMessage(`{"qsl":[0,1],"seq_len":[5],"num_tokens":2}`)
	for _, c := range []struct {
		name, want string
		r          *cases.Reproducer
	}{
		{"drift.json", "generators changed", r},
		{"unknown.json", `property = "no-such-property", expected one of gpu-decode`, &unknown},
		{"target.json", `target = "gfx1100/portable", expected "oracle" or "lib"`, &target},
		{"typo.json", "unknown field", &typo},
	} {
		err := cases.Replay(write(c.name, c.r))
		var re *cases.ReproducerError
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.As(err, &re) {
			t.Errorf("%s: Replay gave %v, expected a file error (*cases.ReproducerError) mentioning %q", c.name, err, c.want)
		}
	}
	if err := cases.Replay(write("ok.json", q)); err != nil {
		t.Errorf("a valid query-map case: %v", err)
	}
}

// TestDecodeDigestRoundTrip: a decode recipe recorded with its digest (tail scaling and a hostile
// fill included) rebuilds to the same digest, and a changed recipe is refused.
func TestDecodeDigestRoundTrip(t *testing.T) {
	for i := 0; i < 40; i++ {
		c := cases.GPUDecodeCases(cases.GPUDecodeOptions()).Example(i)
		call, err := c.Call()
		if err != nil {
			t.Fatal(err)
		}
		c.Record(call)
		if _, err := c.Call(); err != nil {
			t.Fatalf("case %d (tail %d, hostile %d): %v", i, c.TailLog2Scale, c.HostileSeed, err)
		}
		c.Spec.SMScale *= 1.5
		if _, err := c.Call(); err == nil || !strings.Contains(err.Error(), "digest mismatch") {
			t.Fatalf("case %d with a changed sm_scale: %v, expected a digest mismatch", i, err)
		}
	}
}
