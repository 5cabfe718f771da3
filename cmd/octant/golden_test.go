package main

import (
	"bytes"
	"compress/gzip"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const upstream = "../../corpus/golden/upstream"

func runCLI(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestGoldenUpstream(t *testing.T) {
	code, out, errs := runCLI("golden", "--check", upstream)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	last := regexp.MustCompile(`(?m)^golden: slots (\d+) identical, (\d+) explained, 0 unexplained; attention (\d+) cases, max rel L2 (\S+)$`)
	if !last.MatchString(out) {
		t.Fatalf("final line not found in\n%s", out)
	}
	for _, f := range []string{"slots-octave_k3v3.json.gz", "slots-octave_k3v4.json.gz", "slots-octave_k3v3_compact.json.gz", "attention.json.gz"} {
		if !strings.Contains(out, f) {
			t.Errorf("no table row for %s in\n%s", f, out)
		}
	}
	t.Log("\n" + out)
}

// rewrite copies a golden file into dir after applying edit to its decoded JSON.
func rewrite(t *testing.T, dir, name string, edit func(doc map[string]any)) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(upstream, name))
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.NewDecoder(zr).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	edit(doc)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if err := json.NewEncoder(zw).Encode(doc); err != nil {
		t.Fatal(err)
	}
	zw.Close()
	if err := os.WriteFile(filepath.Join(dir, name), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func editHex(t *testing.T, c map[string]any, key string, f func(b []byte)) {
	b, err := hex.DecodeString(c[key].(string))
	if err != nil {
		t.Fatal(err)
	}
	f(b)
	c[key] = hex.EncodeToString(b)
}

// A slot with one corrupted code (bit 2 of a 4-bit code: never a rounding tie, which moves one
// level) must make the check fail and name the case.
func TestGoldenCatchesCorruptSlot(t *testing.T) {
	dir := t.TempDir()
	rewrite(t, dir, "slots-octave_k3v4.json.gz", func(doc map[string]any) {
		c := doc["cases"].([]any)[0].(map[string]any)
		editHex(t, c, "slot", func(b []byte) { b[0] ^= 0x04 })
	})
	code, out, _ := runCLI("golden", "--check", dir)
	if code != 1 || !strings.Contains(out, "unexplained slot gauss-0") || !strings.Contains(out, "1 unexplained") {
		t.Fatalf("exit %d, output\n%s", code, out)
	}
}

func TestGoldenCatchesAttentionErrors(t *testing.T) {
	dir := t.TempDir()
	rewrite(t, dir, "attention.json.gz", func(doc map[string]any) {
		cases := doc["cases"].([]any)
		// Case attn-0: scale one output value by 1.001 (relative L2 well above 1e-5).
		editHex(t, cases[0].(map[string]any), "out_f32", func(b []byte) { b[3] ^= 0x01 << 1 })
		// Case attn-1: its last query is padding (klen 0); the reference output row is zero, so
		// changing the query must not matter, but a non-zero expected padding row must be caught
		// as a mismatch with the oracle's exact zero.
		editHex(t, cases[1].(map[string]any), "out_f32", func(b []byte) { b[len(b)-1] = 0x3f })
	})
	code, out, _ := runCLI("golden", "--check", dir)
	if code != 1 || !strings.Contains(out, "case attn-0") || !strings.Contains(out, "case attn-1") {
		t.Fatalf("exit %d, output\n%s", code, out)
	}
}

// TestGoldenUsageErrors: exit 2, and the message says what was expected.
func TestGoldenUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"golden"}, "octant golden: expected --check DIR"},
		{[]string{"golden", upstream}, `octant golden: expected --check DIR; got a bare argument "` + upstream + `": did you mean --check ` + upstream + "?"},
		{[]string{"golden", "--check", upstream, "extra"}, `unexpected argument "extra" after --check`},
		{[]string{"golden", "--check", "/nonexistent/dir"}, "/nonexistent/dir"},
		{[]string{"golden", "--check", "."}, "no golden files"},
		{[]string{"nosuchcommand"}, `unknown command "nosuchcommand"`},
	} {
		if code, out, errs := runCLI(c.args...); code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q\n%s", c.args, code, errs, c.want, out)
		}
	}
	if code, _, _ := runCLI("golden", "-h"); code != 0 {
		t.Errorf("golden -h: exit %d", code)
	}
}

// TestGoldenVerboseCounts: -v lists the accepted differences and hazards as "name count" pairs,
// sorted, never as a Go map, each list saying what it counts (codes or scales; quantization
// groups), and the table's slot columns say they count slots.
func TestGoldenVerboseCounts(t *testing.T) {
	code, out, errs := runCLI("golden", "-v", "--check", upstream)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	want := regexp.MustCompile(`(?m)^slots-octave_k3v4\.json\.gz: accepted differences from the exact quantization, counted per code or scale, by rule: code-tie \d+, scale-of-stored-codes \d+; format hazards, counted per quantization group: K0:scale-overflow \d+, `)
	if strings.Contains(out, "map[") || !want.MatchString(out) {
		t.Errorf("-v output:\n%s", out)
	}
	header := regexp.MustCompile(`(?m)^ *file +kind +cases +identical slots +explained slots +unexplained slots +identical % +max rel L2 +padding ok$`)
	if !header.MatchString(out) {
		t.Errorf("the table's header does not say its slot columns count slots:\n%s", out)
	}
	if got := countList(map[string]int{"none": 1, "code-tie": 261}); got != "code-tie 261, none 1" {
		t.Errorf("countList = %q", got)
	}
	if got := countList(nil); got != "none" {
		t.Errorf("countList(nil) = %q", got)
	}
}

// TestGoldenMissingKind: a directory with only slot files, or only attention files, says which
// kind it lacks instead of reporting 0 cases with a max rel L2 of 0.
func TestGoldenMissingKind(t *testing.T) {
	for _, c := range []struct{ file, want string }{
		{"slots-octave_k3v4.json.gz", `(?m)^golden: slots \d+ identical, \d+ explained, 0 unexplained; no attention file$`},
		{"attention.json.gz", `(?m)^golden: no slot file; attention 16 cases, max rel L2 \S+$`},
	} {
		dir := t.TempDir()
		raw, err := os.ReadFile(filepath.Join(upstream, c.file))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, c.file), raw, 0o644)
		code, out, errs := runCLI("golden", "--check", dir)
		if code != 0 || !regexp.MustCompile(c.want).MatchString(out) {
			t.Errorf("%s alone: exit %d, output\n%s%s\nwant a line matching %s", c.file, code, out, errs, c.want)
		}
	}
}
