package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// shardFlags is the case-count run the shard tests split: the five required units of the
// emulator (--tiers portable leaves out its optional model tiers), 1 fixed and 2 random cases
// each; --min-cases 3 is met by the whole run and by no shard of it, so the merged certificate's
// case floor is its own, not a shard's.
var shardFlags = []string{"--fixed", "1", "--cases", "2", "--min-cases", "3", "--tiers", "portable"}

// conformProcess runs `octant conform` as its own process (bin) with the shard flags and extra,
// into a fresh directory, and returns the directory and the exit status.
func conformProcess(t *testing.T, bin, lib string, extra ...string) (string, int) {
	t.Helper()
	out := t.TempDir()
	args := append(append(append([]string{"conform", "--lib", lib}, shardFlags...), extra...), "--out", out)
	cmd := exec.Command(bin, args...)
	b, err := cmd.CombinedOutput()
	code := cmd.ProcessState.ExitCode()
	if err != nil && code < 0 {
		t.Fatalf("octant %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	return out, code
}

// comparable is a certificate.json as a generic tree without what differs between two runs of
// the same cases: the date, the command, the device masks, the per-case times.
func comparable(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	delete(m, "date")
	delete(m, "command")
	// Where a run was (the device mask of its process, its shards') is not what it judged.
	delete(m, "visible_devices")
	delete(m, "shard_devices")
	cases, _ := m["cases"].([]any)
	for _, c := range cases {
		delete(c.(map[string]any), "seconds")
	}
	return m
}

// diffKeys names the top-level fields where a and b differ (the first differing case for
// "cases").
func diffKeys(a, b map[string]any) []string {
	var out []string
	for k := range a {
		if reflect.DeepEqual(a[k], b[k]) {
			continue
		}
		if ca, ok := a[k].([]any); ok && k == "cases" {
			cb, _ := b[k].([]any)
			for i := range max(len(ca), len(cb)) {
				if i >= len(ca) || i >= len(cb) || !reflect.DeepEqual(ca[i], cb[i]) {
					out = append(out, fmt.Sprintf("cases (%d vs %d; first difference at %d)", len(ca), len(cb), i))
					break
				}
			}
			continue
		}
		out = append(out, fmt.Sprintf("%s: %v vs %v", k, a[k], b[k]))
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k+" only in the merged certificate")
		}
	}
	return out
}

// TestShardsMergeEqualUnsharded: a --cases run split into n = 1, 3 and 4 shards, each run as a
// separate octant process, merged by octant merge, is the unsharded run's certificate case for
// case (dates, commands and case times aside), with its verdict: CERTIFIED, although no shard
// alone meets the case floor. Then the faults, on the 4 shards: a missing shard, a shard of
// another commit, a cut shard file, a case dropped from a shard, a shard given twice, and a shard
// with a failing case: each reported, the merged verdict never better than the worst shard.
func TestShardsMergeEqualUnsharded(t *testing.T) {
	lib := emuLib(t)
	bin := buildOctant(t)
	full, code := conformProcess(t, bin, lib)
	if code != 0 {
		t.Fatalf("unsharded run: exit %d, expected 0 (CERTIFIED)", code)
	}
	want := comparable(t, filepath.Join(full, "certificate.json"))
	if want["certified"] != true {
		t.Fatalf("unsharded certificate: %v, expected CERTIFIED", want["verdict"])
	}
	var shards4 []string
	for _, n := range []int{1, 3, 4} {
		var dirs []string
		for i := range n {
			d, code := conformProcess(t, bin, lib, "--shard", fmt.Sprintf("%d/%d", i, n))
			if code != 0 {
				t.Fatalf("shard %d/%d: exit %d, expected 0 (a shard with no failing case)", i, n, code)
			}
			c := comparable(t, filepath.Join(d, "certificate.json"))
			if c["certified"] != false || !strings.Contains(c["verdict"].(string), "partial: shard") {
				t.Errorf("shard %d/%d: verdict %v, expected NOT CERTIFIED (partial: shard …)", i, n, c["verdict"])
			}
			dirs = append(dirs, d)
		}
		out := t.TempDir()
		code, stdout, stderr := runCLI(append([]string{"merge", out}, dirs...)...)
		if code != 0 {
			t.Fatalf("merge of %d shards: exit %d\n%s\n%s", n, code, stdout, stderr)
		}
		got := comparable(t, filepath.Join(out, "certificate.json"))
		if d := diffKeys(want, got); len(d) > 0 {
			t.Errorf("merge of %d shards differs from the unsharded certificate: %s", n, strings.Join(d, "; "))
		}
		if n == 4 {
			shards4 = dirs
		}
	}
	t.Run("faults", func(t *testing.T) { shardFaults(t, shards4, want) })
}

// shardFaults checks the merge's faults on the four shards of the run whose certificate is want.
func shardFaults(t *testing.T, shards []string, want map[string]any) {
	cert := func(d string) string { return filepath.Join(d, "certificate.json") }
	edited := func(t *testing.T, from string, edit func(m map[string]any)) string {
		m := map[string]any{}
		b, err := os.ReadFile(cert(from))
		if err == nil {
			err = json.Unmarshal(b, &m)
		}
		if err != nil {
			t.Fatal(err)
		}
		edit(m)
		b, _ = json.MarshalIndent(m, "", "  ")
		p := filepath.Join(t.TempDir(), "certificate.json")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	merge := func(t *testing.T, args ...string) (int, string, string, map[string]any) {
		out := t.TempDir()
		code, stdout, stderr := runCLI(append([]string{"merge", out}, args...)...)
		if code == 2 {
			return code, stdout, stderr, nil
		}
		return code, stdout, stderr, comparable(t, cert(out))
	}
	wantCases := len(want["cases"].([]any))

	t.Run("missing shard", func(t *testing.T) {
		code, stdout, _, got := merge(t, shards[0], shards[1], shards[3])
		s2 := comparable(t, cert(shards[2]))["cases"].([]any)
		if code != 1 || got["certified"] != false || !reflect.DeepEqual(got["shards_not_run"], []any{"2/4"}) ||
			!strings.Contains(got["verdict"].(string), "shard(s) not run: 2/4") || !strings.Contains(stdout, "shard not run: 2/4") {
			t.Fatalf("exit %d, verdict %v, shards_not_run %v; expected exit 1, NOT CERTIFIED naming shard 2/4 as not run\n%s", code, got["verdict"], got["shards_not_run"], stdout)
		}
		if n := len(got["cases"].([]any)); n != wantCases-len(s2) {
			t.Errorf("%d cases merged, expected %d (the run's %d less shard 2/4's %d)", n, wantCases-len(s2), wantCases, len(s2))
		}
	})
	t.Run("other commit", func(t *testing.T) {
		p := edited(t, shards[1], func(m map[string]any) { m["commit"] = "0000000000000000000000000000000000000000" })
		code, _, stderr, _ := merge(t, shards[0], p, shards[2], shards[3])
		if code != 2 || !strings.Contains(stderr, "shards of different runs: commit") {
			t.Fatalf("exit %d, stderr %q; expected exit 2 naming the commit", code, stderr)
		}
	})
	t.Run("other seed", func(t *testing.T) {
		p := edited(t, shards[1], func(m map[string]any) { m["seed"] = 7 })
		code, _, stderr, _ := merge(t, shards[0], p, shards[2], shards[3])
		if code != 2 || !strings.Contains(stderr, "shards of different runs: seed") {
			t.Fatalf("exit %d, stderr %q; expected exit 2 naming the seed", code, stderr)
		}
	})
	t.Run("cut file", func(t *testing.T) {
		b, err := os.ReadFile(cert(shards[2]))
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(t.TempDir(), "certificate.json")
		if err := os.WriteFile(p, b[:len(b)/2], 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, stderr, _ := merge(t, shards[0], shards[1], p, shards[3])
		if code != 2 || !strings.Contains(stderr, "truncated or not a certificate") || !strings.Contains(stderr, p) {
			t.Fatalf("exit %d, stderr %q; expected exit 2 naming the cut file", code, stderr)
		}
	})
	t.Run("case dropped", func(t *testing.T) {
		p := edited(t, shards[3], func(m map[string]any) { m["cases"] = m["cases"].([]any)[1:] })
		code, _, stderr, _ := merge(t, shards[0], shards[1], shards[2], p)
		if code != 2 || !strings.Contains(stderr, "(edited or cut)") {
			t.Fatalf("exit %d, stderr %q; expected exit 2: a shard holding fewer cases than its part", code, stderr)
		}
	})
	t.Run("shard twice", func(t *testing.T) {
		code, _, stderr, _ := merge(t, shards[0], shards[1], shards[1], shards[3])
		if code != 2 || !strings.Contains(stderr, "shard 1/4 given twice") {
			t.Fatalf("exit %d, stderr %q; expected exit 2: shard 1/4 given twice", code, stderr)
		}
	})
	t.Run("failing shard", func(t *testing.T) {
		var path string
		p := edited(t, shards[3], func(m map[string]any) {
			c := m["cases"].([]any)[0].(map[string]any)
			c["status"], c["message"] = "Fail", "an element outside its bound (edited in)"
			path = c["path"].(string)
		})
		code, _, _, got := merge(t, shards[0], shards[1], shards[2], p)
		if code != 1 || got["certified"] != false || got["status"] != "Fail" || got["verdict"] != "NOT CERTIFIED (failing cases)" {
			t.Fatalf("exit %d, verdict %v, status %v; expected exit 1, NOT CERTIFIED (failing cases)", code, got["verdict"], got["status"])
		}
		i := slices.IndexFunc(got["cases"].([]any), func(c any) bool { return c.(map[string]any)["path"] == path })
		if i < 0 || got["cases"].([]any)[i].(map[string]any)["status"] != "Fail" {
			t.Errorf("case %s: not in the merged certificate as Fail", path)
		}
	})
}
