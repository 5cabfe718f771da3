package mutate

import (
	"encoding/json"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// writeScript writes an executable shell script.
func writeScript(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
}

// fakeRepo makes a stand-in repository root (grids/, fuzz/testdata/fuzz/) in a temporary
// directory and makes it the working directory, with a fake make (makeBody) and fake test binaries
// in bin, make first on PATH. The fake binaries print as Go test binaries do under
// -test.v=test2json (result lines marked with ^V) and append one line per run to calls:
// "binary|physical working directory|OCTANT_LIB|OCTANT_REGRESSIONS|arguments".
//
// grids.test: mutant 1 (reduce) dies in its op's tests by TestReduce/pad, which passes alone on
// the unmutated build (build/liboctave_emu.so); on mutant 4 every test skips; mutant 5's binary
// exits before any test; mutant 6 dies by TestDecodeBroken/len[80000]/scale0.0625, which fails
// alone on the unmutated build too (a test broken on every library); else TestA passes.
// fuzz.test: FuzzStore fails on mutant 7 at a seed and passes alone on the unmutated build; on
// mutant 4 it skips; else every target passes after 7 execs.
func fakeRepo(t *testing.T, makeBody string) (root, bin, calls string) {
	t.Helper()
	dir := t.TempDir()
	root, bin, calls = filepath.Join(dir, "root"), filepath.Join(dir, "bin"), filepath.Join(dir, "calls")
	for _, d := range []string{bin, filepath.Join(root, "grids"), filepath.Join(root, "fuzz", "testdata", "fuzz")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	logCall := `echo "$(basename "$0")|$(pwd -P)|$OCTANT_LIB|$OCTANT_REGRESSIONS|$*" >> '` + calls + "'\n"
	writeScript(t, filepath.Join(bin, "make"), `echo "make|$*" >> '`+calls+"'\n"+makeBody)
	writeScript(t, filepath.Join(bin, "grids.test"), logCall+`case "$OCTANT_LIB $*" in
*_m1.so*-test.run=^TestReduce*) printf '\026=== RUN   TestReduce\n\026=== RUN   TestReduce/pad\n    reduce_test.go:9: padding row written\n\026--- FAIL: TestReduce/pad (0.00s)\n\026--- FAIL: TestReduce (0.00s)\n\026FAIL\n'; exit 1;;
*/liboctave_emu.so*'-test.run=^TestReduce$/^pad$'*) printf '\026=== RUN   TestReduce\n\026=== RUN   TestReduce/pad\n\026--- PASS: TestReduce/pad (0.00s)\n\026--- PASS: TestReduce (0.00s)\n\026PASS\n'; exit 0;;
*_m4.so*) printf '\026=== RUN   TestA\n\026--- SKIP: TestA (0.00s)\n\026PASS\n'; exit 0;;
*_m5.so*) echo "cannot open the library"; exit 1;;
*_m6.so*-test.run=^TestDecode*|*/liboctave_emu.so*'-test.run=^TestDecodeBroken$/^len\[80000\]$/^scale0\.0625$'*)
  printf '\026=== RUN   TestDecodeBroken\n\026=== RUN   TestDecodeBroken/len[80000]\n\026=== RUN   TestDecodeBroken/len[80000]/scale0.0625\n    broken_test.go:3: no input file here\n'
  printf '\026--- FAIL: TestDecodeBroken/len[80000]/scale0.0625 (0.00s)\n\026--- FAIL: TestDecodeBroken/len[80000] (0.00s)\n\026--- FAIL: TestDecodeBroken (0.00s)\n\026FAIL\n'; exit 1;;
esac
printf '\026=== RUN   TestA\n--- FAIL: TestPrinted (0.00s)\n\026--- PASS: TestA (0.00s)\n\026PASS\n'`)
	writeScript(t, filepath.Join(bin, "fuzz.test"), logCall+`case "$OCTANT_LIB $*" in
*_m4.so*) printf '\026=== RUN   FuzzX\n\026--- SKIP: FuzzX (0.00s)\n'; exit 0;;
*_m7.so*'-test.fuzz=^FuzzStore$'*) printf '\026=== RUN   FuzzStore\nfuzz: elapsed: 0s, execs: 3 (3/sec)\n    failure while testing seed corpus entry: FuzzStore/stale\n\026--- FAIL: FuzzStore (0.10s)\n\026FAIL\n'; exit 1;;
*/liboctave_emu.so*'-test.run=^FuzzStore$'*) printf '\026=== RUN   FuzzStore\n\026=== RUN   FuzzStore/stale\n\026--- PASS: FuzzStore/stale (0.00s)\n\026--- PASS: FuzzStore (0.00s)\n\026PASS\n'; exit 0;;
esac
printf '\026=== RUN   FuzzX\nfuzz: elapsed: 0s, execs: 7 (7/sec)\n\026--- PASS: FuzzX (1.00s)\n\026PASS\n'`)
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Chdir(root)
	return root, bin, calls
}

// call is one run of a fake binary (fakeRepo's calls file).
type call struct{ name, dir, lib, regressions, args string }

func readCalls(t *testing.T, path string) []call {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []call
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.SplitN(l, "|", 5)
		for len(f) < 5 {
			f = append(f, "")
		}
		out = append(out, call{f[0], f[1], f[2], f[3], f[4]})
	}
	return out
}

// controlCalls are the runs of binary name on the unmutated build whose arguments hold arg.
func controlCalls(calls []call, name, arg string) []call {
	var out []call
	for _, c := range calls {
		if c.name == name && strings.HasSuffix(c.lib, "/build/liboctave_emu.so") && slices.Contains(strings.Fields(c.args), arg) {
			out = append(out, c)
		}
	}
	return out
}

// TestRunWithFakes runs the whole orchestration with a fake make and fake test binaries
// (fakeRepo), from a stand-in repository root, out and bin given relative to it: mutant 1 dies in
// its op's tests and the kill is confirmed (TestReduce/pad passes alone on the unmutated build);
// mutant 2 survives the grid and the fuzzer; mutant 3 does not build; on mutant 4 every test skips
// (no evidence, not a survival); mutant 5's test binary exits before any test (an error, not a
// kill); mutant 6 fails a test that fails alone on the unmutated build too (unconfirmed, never
// killed); mutant 7 dies by a fuzz target, confirmed by -test.run=^FuzzStore$ in fuzz/; and the
// unmutated build passes. The grid runs in grids/, the fuzzer in fuzz/, with absolute paths in
// the environment, and the unmutated build is built once, as row 0 and the control.
func TestRunWithFakes(t *testing.T) {
	root, _, callsFile := fakeRepo(t, `case "$*" in *MUTANT=3*) echo "error: no such mutant" >&2; exit 2;; esac; echo "make $*"`)
	ms := []Mutant{{ID: 1, Name: "OCT_MUT_REDUCE_PAD", Op: "reduce"}, {ID: 2, Name: "OCT_MUT_DECODE_X", Op: "decode"}, {ID: 3, Name: "OCT_MUT_STORE_Y", Op: "store"},
		{ID: 4, Name: "OCT_MUT_DECODE_SKIPPED", Op: "decode"}, {ID: 5, Name: "OCT_MUT_DECODE_NOSTART", Op: "decode"},
		{ID: 6, Name: "OCT_MUT_DECODE_BROKEN_TEST", Op: "decode"}, {ID: 7, Name: "OCT_MUT_STORE_FUZZ", Op: "store"}}
	cfg := Config{Kind: "emu", Budget: time.Second, Bin: filepath.Join("..", "bin"), Out: "out", Conventional: true, Jobs: 2}
	var stdout, stderr strings.Builder
	rows, err := Run(cfg, Select(ms, nil), &stdout, &stderr)
	if err != nil {
		t.Fatalf("Run: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	t.Log("\n" + stdout.String())
	if len(rows) != 8 {
		t.Fatalf("%d rows, want 8", len(rows))
	}
	const broken = "TestDecodeBroken/len[80000]/scale0.0625"
	for i, want := range []struct {
		ok      bool
		verdict string
	}{
		{true, "killed by grid: TestReduce/pad after "},
		{false, "SURVIVED"},
		{false, "build failed: make emu-mutant MUTANT=3"},
		{false, "NO EVIDENCE: no test passed (8 skipped)"},
		{false, "ERROR: grid: "},
		{false, "UNCONFIRMED: grid: " + broken + ": " + broken + " also fails on the unmutated build (failed there: broken_test.go:3: no input file here)"},
		{true, "killed by fuzz: FuzzStore after "},
		{true, "passes"},
	} {
		if r := rows[i]; r.OK() != want.ok || !strings.HasPrefix(r.Verdict(), want.verdict) {
			t.Errorf("row %d (mutant %d): OK %v, verdict %q; want %v, %q", i, r.ID, r.OK(), r.Verdict(), want.ok, want.verdict)
		}
	}
	for _, i := range []int{0, 6} {
		if v := rows[i].Verdict(); !strings.HasSuffix(v, "(confirmed on the unmutated build)") {
			t.Errorf("mutant %d: verdict %q does not say the kill is confirmed", rows[i].ID, v)
		}
	}
	if rows[0].Fuzz != nil || rows[1].Fuzz == nil || rows[1].Fuzz.Cases != 6*7 || rows[7].Fuzz == nil {
		t.Errorf("fuzz phase: killed mutant %+v, survivor %+v, unmutated %+v; want none, 7 execs for each of the 6 targets, run", rows[0].Fuzz, rows[1].Fuzz, rows[7].Fuzz)
	}
	if rows[0].Grid.Message != "reduce_test.go:9: padding row written" {
		t.Errorf("the kill's message: %q", rows[0].Grid.Message)
	}

	// The control: the killing test alone on the unmutated build, where the phase ran it.
	for _, c := range []struct {
		row          int
		confirmed    bool
		dir, run     string
		withoutFlags []string
	}{
		{0, true, "grids", "-test.run=^TestReduce$/^pad$", nil},
		{5, false, "grids", `-test.run=^TestDecodeBroken$/^len\[80000\]$/^scale0\.0625$`, nil},
		{6, true, "fuzz", "-test.run=^FuzzStore$", []string{"-test.fuzz"}},
	} {
		r := rows[c.row]
		if r.Control == nil {
			t.Errorf("mutant %d: no control run", r.ID)
			continue
		}
		if ctl := r.Control; ctl.Confirmed != c.confirmed || ctl.Dir != c.dir || !slices.Contains(ctl.Args, c.run) || ctl.Run == nil ||
			!filepath.IsAbs(ctl.Lib) || !strings.HasSuffix(ctl.Lib, "/build/liboctave_emu.so") {
			t.Errorf("mutant %d: control %+v; want confirmed %v, in %s, with %s, on the unmutated build's library (absolute)", r.ID, ctl, c.confirmed, c.dir, c.run)
		}
		for _, f := range c.withoutFlags {
			if slices.ContainsFunc(r.Control.Args, func(a string) bool { return strings.HasPrefix(a, f) }) {
				t.Errorf("mutant %d: control args %v hold %s", r.ID, r.Control.Args, f)
			}
		}
	}
	for _, i := range []int{1, 2, 3, 4, 7} {
		if rows[i].Control != nil {
			t.Errorf("mutant %d: control run %+v without a kill to confirm", rows[i].ID, rows[i].Control)
		}
	}

	// What the fake binaries saw: their directory, absolute paths, the exact test.
	calls := readCalls(t, callsFile)
	phys, err := filepath.EvalSymlinks(root)
	if err != nil {
		t.Fatal(err)
	}
	makes := 0
	for _, c := range calls {
		switch c.name {
		case "make":
			if c.dir == "emu" {
				makes++
			}
		case "grids.test", "fuzz.test":
			if want := filepath.Join(phys, strings.TrimSuffix(c.name, ".test")); c.dir != want {
				t.Errorf("%s ran in %s, expected %s (the package's directory): %+v", c.name, c.dir, want, c)
			}
			if !filepath.IsAbs(c.lib) || !filepath.IsAbs(c.regressions) || !strings.HasPrefix(c.regressions, filepath.Join(root, "out", "regressions")+"/") {
				t.Errorf("%s: OCTANT_LIB %q, OCTANT_REGRESSIONS %q: expected absolute paths, the latter under %s", c.name, c.lib, c.regressions, filepath.Join(root, "out", "regressions"))
			}
		default:
			t.Errorf("unexpected call %+v", c)
		}
	}
	if makes != 1 {
		t.Errorf("make emu ran %d times, expected once (row 0 is the control)", makes)
	}
	for _, c := range []struct{ name, arg, regressions string }{
		{"grids.test", "-test.run=^TestReduce$/^pad$", "m1-control"},
		{"grids.test", `-test.run=^TestDecodeBroken$/^len\[80000\]$/^scale0\.0625$`, "m6-control"},
		{"fuzz.test", "-test.run=^FuzzStore$", "m7-control"},
	} {
		got := controlCalls(calls, c.name, c.arg)
		if len(got) != 1 || filepath.Base(got[0].regressions) != c.regressions {
			t.Errorf("%s runs on the unmutated build with %s: %+v; expected one, reproducers to %s", c.name, c.arg, got, c.regressions)
			continue
		}
		args := strings.Fields(got[0].args)
		if c.name == "grids.test" && (!slices.Contains(args, "-test.short") || !slices.Contains(args, "-test.count=1")) {
			t.Errorf("control run %v: expected the grid's -test.short and -test.count=1", args)
		}
	}

	for _, want := range []string{"building 8 emu libraries, 2 at a time", "[8/8] mutant", "FAILED to build", "mutant 0 (unmutated, the control) built",
		"mutant 1 (OCT_MUT_REDUCE_PAD): grid… control… conventional… killed by grid: TestReduce/pad",
		"mutant 2 (OCT_MUT_DECODE_X): grid… fuzz… conventional… SURVIVED", "mutant 5 (OCT_MUT_DECODE_NOSTART): grid… conventional… ERROR: grid: ",
		"mutant 6 (OCT_MUT_DECODE_BROKEN_TEST): grid… control… conventional… UNCONFIRMED: ",
		"mutant 7 (OCT_MUT_STORE_FUZZ): grid… fuzz… control… conventional… killed by fuzz: FuzzStore",
		"mutant 0 (unmutated): grid… fuzz… conventional… passes"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("stdout lacks %q", want)
		}
	}
	md, err := os.ReadFile(filepath.Join(root, "out", "kill-matrix.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"each is confirmed on the unmutated build", "| 1 | OCT_MUT_REDUCE_PAD | grid: TestReduce/pad |", "| 2 | OCT_MUT_DECODE_X | **survived** |",
		"| 0 | unmutated | passes (must) |", "| 4 | OCT_MUT_DECODE_SKIPPED | **no evidence** (no test passed (8 skipped)) |", "| 5 | OCT_MUT_DECODE_NOSTART | **error** (grid: ",
		"| 6 | OCT_MUT_DECODE_BROKEN_TEST | **unconfirmed** (grid: " + broken + ": " + broken + " also fails on the unmutated build", "| 7 | OCT_MUT_STORE_FUZZ | fuzz: FuzzStore |",
		"Killed 2 of 7 mutants", "1 with an error (a phase could not run), 1 with no evidence (no test passed), 1 unconfirmed (the killing test does not pass on the unmutated build)"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("kill-matrix.md lacks %q:\n%s", want, md)
		}
	}
	var j struct{ Rows []*Row }
	if b, err := os.ReadFile(filepath.Join(root, "out", "kill-matrix.json")); err != nil || json.Unmarshal(b, &j) != nil || len(j.Rows) != 8 ||
		j.Rows[0].Control == nil || !j.Rows[0].Control.Confirmed || j.Rows[5].Control == nil || j.Rows[5].Control.Confirmed {
		t.Errorf("kill-matrix.json: %v; expected 8 rows, mutant 1's control confirmed, mutant 6's not", err)
	}
	if log, err := os.ReadFile(filepath.Join(root, "out", "logs", "m3-build.log")); err != nil || !strings.Contains(string(log), "no such mutant") {
		t.Errorf("build log of mutant 3: %q, %v", log, err)
	}
	if log, err := os.ReadFile(filepath.Join(root, "out", "logs", "m6.log")); err != nil || !strings.Contains(string(log), "== control: "+broken+" alone on the unmutated build") {
		t.Errorf("log of mutant 6: %q, %v; expected the control's run after its header", log, err)
	}
}

// TestRunControl: without row 0 the unmutated build is still built, once, as the control, and
// confirms the kill without a row of its own; a control that does not build confirms no kill,
// whether or not row 0 was asked for.
func TestRunControl(t *testing.T) {
	ms := []Mutant{{ID: 1, Name: "OCT_MUT_REDUCE_PAD", Op: "reduce"}}
	cfg := Config{Kind: "emu", Bin: filepath.Join("..", "bin"), Out: "out", Jobs: 2}
	t.Run("no row 0", func(t *testing.T) {
		_, _, callsFile := fakeRepo(t, "")
		var stdout, stderr strings.Builder
		rows, err := Run(cfg, Select(ms, map[int]bool{1: true}), &stdout, &stderr)
		if err != nil {
			t.Fatalf("Run: %v\n%s%s", err, stdout.String(), stderr.String())
		}
		if len(rows) != 1 || !rows[0].OK() || rows[0].Control == nil || !rows[0].Control.Confirmed {
			t.Fatalf("rows %+v; expected mutant 1 alone, its kill confirmed\n%s", rows, stdout.String())
		}
		calls := readCalls(t, callsFile)
		if n := len(slices.DeleteFunc(slices.Clone(calls), func(c call) bool { return c.name != "make" || c.dir != "emu" })); n != 1 {
			t.Errorf("make emu ran %d times, expected once: %+v", n, calls)
		}
		if len(controlCalls(calls, "grids.test", "-test.run=^TestReduce$/^pad$")) != 1 {
			t.Errorf("no control run of TestReduce/pad: %+v", calls)
		}
		if !strings.Contains(stdout.String(), "building 2 emu libraries") || !strings.Contains(stdout.String(), "(unmutated, the control) built") {
			t.Errorf("stdout:\n%s", stdout.String())
		}
		if md, _ := os.ReadFile(filepath.Join("out", "kill-matrix.md")); strings.Contains(string(md), "| 0 |") || !strings.Contains(string(md), "Killed 1 of 1 mutants") {
			t.Errorf("kill-matrix.md: expected mutant 1 killed and no row for the control:\n%s", md)
		}
	})
	t.Run("control does not build", func(t *testing.T) {
		_, _, callsFile := fakeRepo(t, `[ "$*" = emu ] && { echo "error: emu build broken" >&2; exit 2; }; exit 0`)
		var stdout, stderr strings.Builder
		rows, err := Run(cfg, Select(ms, map[int]bool{0: true, 1: true}), &stdout, &stderr)
		if err != nil {
			t.Fatalf("Run: %v\n%s%s", err, stdout.String(), stderr.String())
		}
		if len(rows) != 2 || rows[0].OK() || rows[0].Control == nil || rows[0].Control.Confirmed || rows[0].Control.Run != nil ||
			!strings.HasPrefix(rows[0].Verdict(), "UNCONFIRMED: grid: TestReduce/pad: TestReduce/pad not re-run on the unmutated build, which did not build (make emu: ") {
			t.Errorf("mutant 1: OK %v, verdict %q, control %+v; expected unconfirmed: the control did not build", rows[0].OK(), rows[0].Verdict(), rows[0].Control)
		}
		if !strings.HasPrefix(rows[1].Verdict(), "build failed: make emu") {
			t.Errorf("row 0: verdict %q", rows[1].Verdict())
		}
		for _, c := range readCalls(t, callsFile) {
			if strings.HasSuffix(c.lib, "/build/liboctave_emu.so") {
				t.Errorf("a run on the unmutated build, which did not build: %+v", c)
			}
		}
	})
}

// TestUnconfirmedKill: a row whose phases failed a test but has no control run, or one whose
// control run did not pass the test, is not killed, not OK and never shown as a kill.
func TestUnconfirmedKill(t *testing.T) {
	m := Mutant{ID: 9, Name: "OCT_MUT_X", Op: "decode"}
	for _, r := range []*Row{
		{Mutant: m, Build: "ok", Grid: KillResult{Killed: true, By: "TestLongFirstOrder"}},
		{Mutant: m, Build: "ok", Grid: KillResult{Killed: true, By: "TestLongFirstOrder"},
			Control: &Control{Kill: "grid: TestLongFirstOrder", Detail: "TestLongFirstOrder also fails on the unmutated build"}},
	} {
		if killed, _, _, _ := r.Killed(); killed || r.OK() || !strings.HasPrefix(r.Verdict(), "UNCONFIRMED: grid: TestLongFirstOrder: ") {
			t.Errorf("control %+v: killed %v, OK %v, verdict %q; expected unconfirmed", r.Control, killed, r.OK(), r.Verdict())
		}
	}
}

// TestExactRunPattern: each element of the test's path quoted and anchored, metacharacters of
// subtest names included.
func TestExactRunPattern(t *testing.T) {
	for name, want := range map[string]string{
		"TestDecodeGrid":                   "^TestDecodeGrid$",
		"FuzzStore":                        "^FuzzStore$",
		"TestDecodeGrid/k3v4/bf16/g4/mma":  "^TestDecodeGrid$/^k3v4$/^bf16$/^g4$/^mma$",
		"TestDecodeLong/0/len[80000]/k3v4": `^TestDecodeLong$/^0$/^len\[80000\]$/^k3v4$`,
		"TestPrefillLong/0/q[16]/ctx[16368]/k3v4/f16/g6/scale0.0625/portable": `^TestPrefillLong$/^0$/^q\[16\]$/^ctx\[16368\]$/^k3v4$/^f16$/^g6$/^scale0\.0625$/^portable$`,
		"TestX/a|b/(c)+*?{2}$^#01": `^TestX$/^a\|b$/^\(c\)\+\*\?\{2\}\$\^#01$`,
	} {
		if got := ExactRunPattern(name); got != want {
			t.Errorf("ExactRunPattern(%q) = %q, expected %q", name, got, want)
		}
	}
}

var patternChild = flag.Bool("mutate.patternchild", false, "this run is TestExactRunPatternSelectsOneTest's child: TestPatternChild runs its subtests")

// TestPatternChild has sibling subtests that an unquoted or unanchored pattern of its
// len[80000]/scale0.0625 subtest selects too; it runs only as TestExactRunPatternSelectsOneTest's
// child (-mutate.patternchild).
func TestPatternChild(t *testing.T) {
	if !*patternChild {
		t.Skip("runs only as TestExactRunPatternSelectsOneTest's child (-mutate.patternchild)")
	}
	for _, a := range []string{"len[80000]", "len8", "xlen[80000]", "len[80000]x"} {
		t.Run(a, func(t *testing.T) {
			for _, b := range []string{"scale0.0625", "scale0x0625", "scale0.06250", "scale0.0625#01"} {
				t.Run(b, func(t *testing.T) {})
			}
		})
	}
}

// TestExactRunPatternSelectsOneTest: the testing package's own -test.run matching, given
// ExactRunPattern of a subtest whose path holds metacharacters, runs that subtest and its parents
// only (this package's test binary, run again on TestPatternChild).
func TestExactRunPatternSelectsOneTest(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const want = "TestPatternChild/len[80000]/scale0.0625"
	out, err := exec.Command(exe, "-test.run="+ExactRunPattern(want), "-test.v", "-test.count=1", "-mutate.patternchild").CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var ran []string
	for _, l := range strings.Split(string(out), "\n") {
		if n, ok := strings.CutPrefix(l, "=== RUN   "); ok {
			ran = append(ran, n)
		}
	}
	if !slices.Equal(ran, []string{"TestPatternChild", "TestPatternChild/len[80000]", want}) {
		t.Errorf("-test.run=%s ran %q, expected %s and its parents only\n%s", ExactRunPattern(want), ran, want, out)
	}
}

func TestPlan(t *testing.T) {
	ms := []Mutant{{ID: 1}, {ID: 2}}
	cfg := Config{Kind: "emu", Budget: 75 * time.Second, Out: "build/mutate", Conventional: true, Jobs: 4}
	got := Plan(cfg, Select(ms, nil))
	for _, want := range []string{"3 emu libraries (2 mutants and the unmutated build), built 4 at a time",
		"the -short kernel grid", "the 6 GPU fuzz targets for 15s each", "the conventional suite", "build/mutate/kill-matrix.md"} {
		if !strings.Contains(got, want) {
			t.Errorf("plan %q lacks %q", got, want)
		}
	}
	if want := "a mutant's kill counts only when the killing test, run alone on the unmutated build (the control), passes there"; !strings.Contains(got, want) {
		t.Errorf("plan %q lacks %q", got, want)
	}
	cfg.Budget, cfg.Conventional, cfg.Full = 0, false, true
	if got := Plan(cfg, Select(ms, map[int]bool{2: true})); strings.Contains(got, "fuzz") || strings.Contains(got, "conventional") ||
		!strings.Contains(got, "2 emu libraries (1 mutant and the unmutated build as the control, without a row of its own), built 4") ||
		!strings.Contains(got, "then on each mutant the full kernel grid") || !strings.Contains(got, "alone on the unmutated build (the control)") {
		t.Errorf("plan without fuzzing and the conventional suite, without row 0: %q", got)
	}
	if got := Plan(cfg, Select(ms, map[int]bool{0: true})); !strings.HasPrefix(got, "1 emu library (the unmutated build), built 4") || strings.Contains(got, "control") {
		t.Errorf("plan of the unmutated build alone: %q", got)
	}
}

// The unmutated build fails when the conventional suite fails on it, and the verdict says which
// test, not an empty name.
func TestVerdictUnmutatedConventional(t *testing.T) {
	r := &Row{Mutant: Unmutated, Build: "ok", Grid: KillResult{Passed: 3}, Conventional: &KillResult{Killed: true, By: "TestConventionalDecode"}}
	if r.OK() || r.Verdict() != "FAIL: the unmutated build fails conventional: TestConventionalDecode" {
		t.Errorf("OK %v, verdict %q", r.OK(), r.Verdict())
	}
}

// TestFuzzTargetsAreTheGPUTargets: FuzzTargets names every GPU fuzz target of ./fuzz (a Fuzz
// function whose body is gpuFuzz: it runs on $OCTANT_LIB), the isolation property's FuzzIsolation
// among them, and nothing else, each once.
func TestFuzzTargetsAreTheGPUTargets(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "fuzz", "*_test.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files of ../fuzz: %v", err)
	}
	gpu := regexp.MustCompile(`(?m)^func (Fuzz\w+)\(f \*testing\.F\)\s*\{\s*gpuFuzz\(`)
	var found []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range gpu.FindAllStringSubmatch(string(b), -1) {
			found = append(found, m[1])
		}
	}
	if !slices.Contains(found, "FuzzIsolation") {
		t.Errorf("../fuzz has no GPU fuzz target FuzzIsolation (found %v): the pattern no longer reads its test files", found)
	}
	got := slices.Clone(FuzzTargets)
	slices.Sort(got)
	slices.Sort(found)
	if !slices.Equal(got, found) || len(slices.Compact(slices.Clone(got))) != len(got) {
		t.Errorf("FuzzTargets %v, expected the GPU fuzz targets of ../fuzz, each once: %v", FuzzTargets, found)
	}
}

// TestPhasesRunInPackageDir: from a repository root (grids/ and fuzz/testdata/fuzz/ present), the
// grid phase runs the kernel test binary in grids/ and the fuzz phase the fuzz binary in fuzz/,
// each given by a path relative to the root, as go test runs a package's binary.
func TestPhasesRunInPackageDir(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	for _, d := range []string{filepath.Join(root, "grids"), filepath.Join(root, "fuzz", "testdata", "fuzz"), filepath.Join(root, "bin")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range []string{"grids.test", "fuzz.test"} {
		writeScript(t, filepath.Join(root, "bin", b), `pwd -P > "`+filepath.Join(dir, b)+`.wd"; printf '\026=== RUN   TestA\n\026--- PASS: TestA (0.00s)\n\026PASS\n'`)
	}
	t.Chdir(root)
	if r := GridPhase(filepath.Join("bin", "grids.test"), nil, nil, "reduce", io.Discard); r.Outcome() != "survived" {
		t.Fatalf("grid phase: %+v", r)
	}
	if r := FuzzPhase(filepath.Join("bin", "fuzz.test"), nil, time.Second, "cache", io.Discard); r.Outcome() != "survived" {
		t.Fatalf("fuzz phase: %+v", r)
	}
	phys, _ := filepath.EvalSymlinks(root)
	for b, want := range map[string]string{"grids.test": "grids", "fuzz.test": "fuzz"} {
		got, err := os.ReadFile(filepath.Join(dir, b+".wd"))
		if err != nil || strings.TrimSpace(string(got)) != filepath.Join(phys, want) {
			t.Errorf("%s ran in %q (%v), expected %s", b, got, err, filepath.Join(phys, want))
		}
	}
}

// TestRunThrough: with Config.Through every phase and the control's run get the adapter spec with
// the library's absolute path in place of {lib}, and the kill matrix says what the libraries were
// judged through.
func TestRunThrough(t *testing.T) {
	_, _, callsFile := fakeRepo(t, `echo "make $*"`)
	const spec = "host:/x/adapter.py?lib={lib}&k=v"
	cfg := Config{Kind: "emu", Budget: time.Second, Bin: filepath.Join("..", "bin"), Out: "out", Jobs: 1, Through: spec}
	var stdout, stderr strings.Builder
	rows, err := Run(cfg, Select([]Mutant{{ID: 1, Name: "OCT_MUT_REDUCE_PAD", Op: "reduce"}}, nil), &stdout, &stderr)
	if err != nil {
		t.Fatalf("Run: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	if len(rows) != 2 || !strings.HasPrefix(rows[0].Verdict(), "killed by grid: TestReduce/pad") || rows[0].Control == nil || !rows[0].Control.Confirmed || rows[1].Verdict() != "passes" {
		t.Fatalf("rows %q, %q: expected mutant 1 killed by TestReduce/pad (confirmed on the control), and the unmutated build passing", rows[0].Verdict(), rows[1].Verdict())
	}
	calls := readCalls(t, callsFile)
	var judged int
	for _, c := range calls {
		if c.name == "make" {
			continue
		}
		judged++
		lib, ok := strings.CutPrefix(c.lib, "host:/x/adapter.py?lib=/")
		if !ok || !strings.HasSuffix(lib, ".so&k=v") {
			t.Errorf("%s %s ran with OCTANT_LIB %q; expected %s with an absolute library path", c.name, c.args, c.lib, spec)
		}
	}
	control := 0
	for _, c := range calls {
		if c.name == "grids.test" && strings.HasSuffix(c.lib, "/build/liboctave_emu.so&k=v") && strings.Contains(c.args, "-test.run=^TestReduce$/^pad$") {
			control++
		}
	}
	if judged == 0 || control != 1 {
		t.Errorf("%d judged runs, %d control runs of TestReduce/pad through the spec on the unmutated build; expected some, and 1", judged, control)
	}
	md, err := os.ReadFile(filepath.Join("out", "kill-matrix.md"))
	if err != nil || !strings.Contains(string(md), "emu through "+spec) {
		t.Errorf("kill-matrix.md does not say the libraries were judged through %s (%v)", spec, err)
	}
	if !strings.Contains(Plan(cfg, nil), "judged through "+spec) {
		t.Errorf("Plan %q does not name the spec", Plan(cfg, nil))
	}
}

// TestCheckThrough: a --through spec is a worker spec naming {lib} exactly once.
func TestCheckThrough(t *testing.T) {
	for spec, want := range map[string]string{
		"host:/a.py?lib={lib}":            "",
		"torch:/a.py?ext=/e.so&lib={lib}": "",
		"host:/a.py":                      "exactly once",
		"host:/a.py?lib={lib}&x={lib}":    "exactly once",
		"/build/{lib}":                    "expected a worker spec",
	} {
		err := CheckThrough(spec)
		if (want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), want)) {
			t.Errorf("CheckThrough(%q) = %v; expected %q", spec, err, want)
		}
	}
}
