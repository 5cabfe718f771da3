package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/octant-kv/octant/arch"
	"github.com/octant-kv/octant/cases"
	"github.com/octant-kv/octant/harness"
	"github.com/octant-kv/octant/internal/settings"
	"github.com/octant-kv/octant/internal/settings/settingstest"
)

// TestReplayDirectory: a directory stands for the reproducer files under it (*.json, recursively,
// sorted), and replay says how many it found; an empty one is an error naming it.
func TestReplayDirectory(t *testing.T) {
	raw, err := os.ReadFile("../../corpus/regressions/slot/example-roundtrip.json")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755)
	for _, p := range []string{"c.json", "a/b/x.json"} {
		os.WriteFile(filepath.Join(dir, p), raw, 0o644)
	}
	os.WriteFile(filepath.Join(dir, "README.md"), []byte("not a reproducer"), 0o644)
	code, out, errs := runCLI("replay", dir)
	want := dir + ": 2 reproducer file(s)\nok   " + filepath.Join(dir, "a", "b", "x.json") + " (oracle)\nok   " + filepath.Join(dir, "c.json") + " (oracle)\n" +
		"replay: 2 ok, 0 failing, 0 unreadable\n"
	if code != 0 || out != want {
		t.Errorf("exit %d, stdout\n%s\nstderr %s\nwant exit 0 and\n%s", code, out, errs, want)
	}

	empty := t.TempDir()
	os.WriteFile(filepath.Join(empty, "notes.txt"), []byte("x"), 0o644)
	code, out, errs = runCLI("replay", empty)
	if code != 2 || out != "" || !strings.Contains(errs, empty+": a directory without reproducer files") {
		t.Errorf("empty directory: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	code, _, errs = runCLI("replay")
	if code != 2 || !strings.HasPrefix(errs, "octant replay: expected reproducer files or directories") {
		t.Errorf("no arguments: exit %d, stderr %q", code, errs)
	}
	code, out, errs = runCLI("replay", dir, "--lib", "x.so")
	if code != 2 || out != "" || !strings.Contains(errs, "--lib: flags go before the files") {
		t.Errorf("a flag after the files: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

// TestReplayCorpus replays the repository's corpus by its directory, as `make test` could.
func TestReplayCorpus(t *testing.T) {
	code, out, errs := runCLI("replay", "../../corpus/regressions")
	if code != 0 || !strings.HasPrefix(out, "../../corpus/regressions: ") || strings.Count(out, "\nok   ") < 1 {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
}

// writeReproducer writes a copy of corpus/regressions/<rel> into dir as name, with the text old
// replaced by new (old "" copies it as it is).
func writeReproducer(t *testing.T, dir, name, rel, old, new string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("../../corpus/regressions", rel))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if old != "" {
		if !strings.Contains(s, old) {
			t.Fatalf("%s has no %q", rel, old)
		}
		s = strings.Replace(s, old, new, 1)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestReplayBadFiles: a reproducer that cannot be replayed (a block_size of 0, an unknown cache
// format or property) is a file error naming the field, its value and what was expected, with
// exit status 2; it does not stop the files after it, and the summary counts each kind.
func TestReplayBadFiles(t *testing.T) {
	dir := t.TempDir()
	bs0 := writeReproducer(t, dir, "a-block-size-0.json", "decode/gpu-decode-b1a7861dc8df.json", `"block_size": 16`, `"block_size": 0`)
	format := writeReproducer(t, dir, "b-format.json", "store/gpu-store-0ee9818235bc.json", `"format": "octave_k3v3"`, `"format": "octave_k9v9"`)
	prop := writeReproducer(t, dir, "c-property.json", "slot/example-roundtrip.json", `"property": "slot-roundtrip"`, `"property": "slot-rundtrip"`)
	good := writeReproducer(t, dir, "d-good.json", "slot/example-roundtrip.json", "", "")
	code, out, errs := runCLI("replay", dir)
	for _, want := range []string{
		"octant replay: " + bs0 + ": case.spec.cache.block_size = 0, expected 1..1024",
		"octant replay: " + format + `: case.cache.format = "octave_k9v9", expected one of octave_k3v3, octave_k3v4, octave_k3v3_compact`,
		"octant replay: " + prop + `: property = "slot-rundtrip", expected one of`,
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr does not say %q:\n%s", want, errs)
		}
	}
	if code != 2 || !strings.Contains(out, "ok   "+good) || !strings.HasSuffix(out, "replay: 1 ok, 0 failing, 3 unreadable\n") || strings.Contains(out, "FAIL") {
		t.Errorf("exit %d (expected 2), stdout:\n%s\nstderr:\n%s", code, out, errs)
	}
}

// TestReplaySaysWhatRan: an ok line says what ran: the oracle alone for a GPU reproducer without
// --lib, the library's implementations with it; an isolation reproducer (property iso-decode)
// replays the same way, on every decode tier of the library.
func TestReplaySaysWhatRan(t *testing.T) {
	store := "../../corpus/regressions/store/gpu-store-0ee9818235bc.json"
	slot := "../../corpus/regressions/slot/example-roundtrip.json"
	iso := "../../corpus/regressions/decode/iso-decode-89c41f295741.json"
	code, out, errs := runCLI("replay", store, slot, iso)
	want := "ok   " + store + " (oracle only: no --lib)\nok   " + slot + " (oracle)\nok   " + iso + " (oracle only: no --lib)\nreplay: 3 ok, 0 failing, 0 unreadable\n"
	if code != 0 || out != want {
		t.Errorf("exit %d, stdout\n%s\nstderr %s\nexpected exit 0 and\n%s", code, out, errs, want)
	}
	lib := settingstest.Get(t).Lib
	if lib == "" {
		t.Skipf("%s not set: the line with a library is not checked", settings.LibEnv)
	}
	l, err := harness.Open(lib)
	if err != nil {
		t.Fatal(err)
	}
	impls, err := harness.Impls(l, arch.Decode)
	l.Close()
	if err != nil {
		t.Fatal(err)
	}
	var tiers []string
	for _, im := range impls {
		tiers = append(tiers, im.Name)
	}
	code, out, errs = runCLI("replay", "--lib", lib, store, iso)
	if code != 0 || !strings.Contains(out, "ok   "+store+" (oracle; the library's store: portable on "+lib+")\n") ||
		!strings.Contains(out, "ok   "+iso+" (oracle; tiers "+strings.Join(tiers, ", ")+" on "+lib+")\n") {
		t.Errorf("with --lib: exit %d, stdout\n%s\nstderr %s", code, out, errs)
	}
}

// TestReplayIsolationFieldError: an isolation reproducer with a cut out of its range is a file
// error naming the field, its value and what was expected (exit 2), never a failing case.
func TestReplayIsolationFieldError(t *testing.T) {
	dir := t.TempDir()
	bad := writeReproducer(t, dir, "iso-cut.json", "decode/iso-decode-89c41f295741.json", `"cuts": [
      14,`, `"cuts": [
      -3,`)
	code, out, errs := runCLI("replay", bad)
	if want := "octant replay: " + bad + ": case.cuts[0] = -3, expected a position in 0..128 (max_blocks 8 × block_size 16"; code != 2 || !strings.Contains(errs, want) ||
		!strings.HasSuffix(out, "replay: 0 ok, 0 failing, 1 unreadable\n") {
		t.Errorf("exit %d (expected 2), stdout:\n%s\nstderr:\n%s\nexpected stderr to say %q", code, out, errs, want)
	}
}

// TestReplayExitStatus: 1 when a reproducer still fails and every file was read, 2 when a file
// could not be (whatever else failed), and `octant replay -h` says so.
func TestReplayExitStatus(t *testing.T) {
	dir := t.TempDir()
	failing := writeReproducer(t, dir, "a-failing.json", "slot/example-roundtrip.json", "", "")
	writeReproducer(t, dir, "b-good.json", "slot/example-roundtrip.json", "", "")
	defer func(r func(*cases.Replayable, *harness.Lib) error) { runReproducer = r }(runReproducer)
	runReproducer = func(x *cases.Replayable, l *harness.Lib) error {
		if x.Path == failing {
			return errors.New(x.Path + ": slot-roundtrip: a synthetic failure")
		}
		return x.Run(l)
	}
	code, out, errs := runCLI("replay", dir)
	if code != 1 || !strings.Contains(out, "FAIL "+failing+": slot-roundtrip: a synthetic failure\n") || !strings.HasSuffix(out, "replay: 1 ok, 1 failing, 0 unreadable\n") {
		t.Errorf("one failing: exit %d (expected 1), stdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	writeReproducer(t, dir, "c-bad.json", "slot/example-roundtrip.json", `"format": "octave_k3v4"`, `"format": "k3v4"`)
	code, out, errs = runCLI("replay", dir)
	if code != 2 || !strings.HasSuffix(out, "replay: 1 ok, 1 failing, 1 unreadable\n") || !strings.Contains(errs, `c-bad.json: case.format = "k3v4", expected one of`) {
		t.Errorf("one failing, one unreadable: exit %d (expected 2), stdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	code, _, errs = runCLI("replay", "-h")
	if code != 0 || !strings.Contains(errs, "Exit status: 2 if any file is unreadable or invalid (or the library cannot be opened), else 1 if\nany reproducer still fails, else 4 if any was outside the declared domain (nothing failed, but\nnot every reproducer ran), else 0.") {
		t.Errorf("replay -h: exit %d, usage:\n%s", code, errs)
	}
}

// TestReplayOutsideDomain: through an adapter whose declaration leaves prefill out (capi.py on the
// CPU emulator, narrowed: kernels/worker/testdata/narrow_adapter.py), a prefill reproducer is not
// run: its line says it is outside the declared domain and why, the count line counts it, and the
// exit status is 4; a store reproducer beside it runs and passes.
func TestReplayOutsideDomain(t *testing.T) {
	emu, _ := filepath.Abs("../../build/liboctave_emu.so")
	if _, err := os.Stat(emu); err != nil {
		t.Skip("build/liboctave_emu.so missing: make emu")
	}
	adapter, _ := filepath.Abs("../../kernels/worker/testdata/narrow_adapter.py")
	spec := "host:" + adapter + "?lib=" + emu + "&drop=prefill"
	pre, store := "../../corpus/regressions/prefill/gpu-prefill-64b78e0f71a0.json", "../../corpus/regressions/store/gpu-store-0ee9818235bc.json"
	code, out, errs := runCLI("replay", "--lib", spec, pre, store)
	for _, want := range []string{
		"out  " + pre + ": outside declared domain: prefill not declared (not run on " + spec + ")\n",
		"ok   " + store + " (",
		"replay: 1 ok, 0 failing, 0 unreadable, 1 outside the declared domain\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s\nstderr:\n%s", want, out, errs)
		}
	}
	if code != 4 {
		t.Errorf("exit %d, expected 4 (nothing failed, one reproducer outside the domain)", code)
	}
}
