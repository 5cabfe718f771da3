package pyref

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/octant-kv/octant/internal/settings"
)

var judges = flag.Bool("pyref.judges", false, "run the judges on the pure-Python adapter (make pyref-test; a few minutes)")

// The judges run on the clean adapter: the store, rotate, reduce, query-map and decode grids
// (-short; make bridge-test's grids without prefill, which the adapter does not declare); the
// GPU fuzz targets' rapid runs and seed corpora for store, rotate, reduce and decode, with the
// decode isolation property and the must-not-matter properties of those ops.
const (
	cleanGrids = "TestStore|TestRotate|TestReduce|TestQueryMaps|TestDecodeGrid"
	cleanFuzz  = "TestGPUStore|TestGPURotate|TestGPUReduce|TestGPUDecode|FuzzStore|FuzzRotate|FuzzDecode|FuzzReduce|" +
		"TestIsolationDecode|TestMustNotMatterStore|TestMustNotMatterReduce|TestMustNotMatterDecode"
)

// env is what the subprocesses run with.
type env struct {
	root    string // the module's root
	adapter string // the adapter's absolute path
	python  string // an interpreter with numpy
	bins    string // the prebuilt binaries
}

var (
	envOnce sync.Once
	envVal  env
	envErr  error
	envSkip string
	tmpDir  string
)

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if tmpDir != "" {
		os.RemoveAll(tmpDir)
	}
	os.Exit(code)
}

// setup skips without -pyref.judges or without an interpreter that has numpy, and otherwise
// builds the grids and fuzz test binaries and the command line once.
func setup(t *testing.T) env {
	t.Helper()
	if !*judges {
		t.Skip("the judges on the pure-Python adapter run with -pyref.judges (make pyref-test)")
	}
	envOnce.Do(func() {
		envVal, envSkip, envErr = build()
	})
	if envErr != nil {
		t.Fatal(envErr)
	}
	if envSkip != "" {
		t.Skip(envSkip)
	}
	return envVal
}

func build() (env, string, error) {
	var e env
	var err error
	if e.root, err = filepath.Abs("../.."); err != nil {
		return e, "", err
	}
	if e.adapter, err = filepath.Abs("testdata/pyref_adapter.py"); err != nil {
		return e, "", err
	}
	s, err := settings.FromEnv()
	if err != nil {
		return e, "", err
	}
	var tried []string
	for _, py := range []string{s.Python, "/usr/bin/python3"} {
		out, err := exec.Command(py, "-c", "import numpy").CombinedOutput()
		if err == nil {
			e.python = py
			break
		}
		tried = append(tried, fmt.Sprintf("%s: %v %s", py, err, strings.TrimSpace(lastLine(string(out)))))
	}
	if e.python == "" {
		return e, fmt.Sprintf("no Python interpreter with numpy for the pure-Python adapter (%s=%s, then /usr/bin/python3): %s; install python3-numpy or set %s",
			settings.PythonEnv, s.Python, strings.Join(tried, "; "), settings.PythonEnv), nil
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return e, "", fmt.Errorf("the go command, to build the judges' binaries: %w", err)
	}
	if tmpDir, err = os.MkdirTemp("", "pyref-judges-"); err != nil {
		return e, "", err
	}
	e.bins = tmpDir
	for _, b := range [][]string{
		{"test", "-c", "-o", filepath.Join(e.bins, "grids.test"), "./grids"},
		{"test", "-c", "-o", filepath.Join(e.bins, "fuzz.test"), "./fuzz"},
		{"build", "-o", filepath.Join(e.bins, "octant"), "./cmd/octant"},
	} {
		cmd := exec.Command(goBin, b...)
		cmd.Dir = e.root
		if out, err := cmd.CombinedOutput(); err != nil {
			return e, "", fmt.Errorf("go %s: %v\n%s", strings.Join(b, " "), err, out)
		}
	}
	return e, "", nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// spec is the adapter's spec, with a defect when one is named.
func (e env) spec(defect string) string {
	s := "host:" + e.adapter
	if defect != "" {
		s += "?defect=" + defect
	}
	return s
}

// run runs a prebuilt binary in dir (relative to the module's root) with OCTANT_LIB = spec and
// the adapter's interpreter; the inherited OCTANT_* settings are dropped so that none narrows
// what runs. It returns the output and the exit status.
func (e env) run(t *testing.T, spec, bin, dir string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(filepath.Join(e.bins, bin), args...)
	cmd.Dir = filepath.Join(e.root, dir)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OCTANT_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, settings.LibEnv+"="+spec, settings.PythonEnv+"="+e.python, settings.RegressionsEnv+"=off")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s %s: %v", bin, strings.Join(args, " "), err)
	}
	t.Logf("%s %s (OCTANT_LIB=%s): exit %d in %v", bin, strings.Join(args, " "), spec, code, time.Since(start).Round(time.Millisecond))
	return string(out), code
}

// goTest runs the test binary of pkg (grids or fuzz) in its package's directory: -short, -v,
// the tests matching pattern.
func (e env) goTest(t *testing.T, spec, pkg, pattern string) (string, int) {
	t.Helper()
	return e.run(t, spec, pkg+".test", pkg, "-test.short", "-test.v", "-test.count=1", "-test.run", pattern)
}

// passed lists the top-level tests a go test -v output reports as passed.
func passed(out string) map[string]bool {
	m := map[string]bool{}
	for _, g := range regexp.MustCompile(`(?m)^--- PASS: (\w+) `).FindAllStringSubmatch(out, -1) {
		m[g[1]] = true
	}
	return m
}

// failures is the output's failure lines (the judges' verdicts, not the passes), for messages.
func failures(out string, n int) string {
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "--- FAIL") || strings.Contains(l, "× the bound") || strings.Contains(l, "refused") ||
			strings.Contains(l, "raised") || strings.Contains(l, "not exactly zero") || strings.Contains(l, "fallback") {
			keep = append(keep, l)
		}
		if len(keep) == n {
			break
		}
	}
	if len(keep) == 0 {
		return lastLines(out, n)
	}
	return strings.Join(keep, "\n")
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// requirePassed fails t unless the run exited 0 and every test of names passed (not skipped: a
// judge without OCTANT_LIB skips, which must not pass for a verdict).
func requirePassed(t *testing.T, what, out string, code int, names []string) {
	t.Helper()
	p := passed(out)
	var missing []string
	for _, n := range names {
		if !p[n] {
			missing = append(missing, n)
		}
	}
	if code != 0 || len(missing) > 0 {
		t.Errorf("%s on the clean adapter: exit %d, expected 0 with %s passed; not passed: %v\n%s", what, code, strings.Join(names, ", "), missing, failures(out, 20))
	}
}

// TestCleanGrids: the kernel grids (-short) pass on the clean adapter.
func TestCleanGrids(t *testing.T) {
	e := setup(t)
	out, code := e.goTest(t, e.spec(""), "grids", cleanGrids)
	requirePassed(t, "the grids "+cleanGrids, out, code, []string{"TestStoreGrid", "TestStoreWorkedExample", "TestStoreEdgeValues", "TestStoreGolden",
		"TestStoreErrors", "TestRotate", "TestReduce", "TestReduceRotateErrors", "TestQueryMaps", "TestDecodeGrid"})
	// Both decode tiers were judged, not one.
	for _, tier := range []string{"decode portable: Pass", "decode wmma-model: Pass"} {
		if !strings.Contains(out, tier) {
			t.Errorf("the decode grid on the clean adapter: no %q verdict; expected both declared tiers judged", tier)
		}
	}
}

// TestCleanFuzz: the GPU fuzz targets' rapid runs and seed corpora, the decode isolation property
// and the must-not-matter properties pass on the clean adapter.
func TestCleanFuzz(t *testing.T) {
	e := setup(t)
	out, code := e.goTest(t, e.spec(""), "fuzz", cleanFuzz)
	requirePassed(t, "the fuzz targets "+cleanFuzz, out, code, strings.Split(cleanFuzz, "|"))
}

// defectCase is a planted defect, the judge that must fail on it, and what its messages must
// (want) and must not (notWant) say.
type defectCase struct {
	defect, pkg, pattern string
	want, notWant        []string
}

// Failure lines of the decode judges name the tier as "decode: TIER: ..." (a pass is "decode:
// decode TIER: Pass").
var defects = []defectCase{
	// The scale is off by one fp16 ulp where RNE rounds up: the store's slot acceptance names
	// the scale and the exact value.
	{"scale-rounding", "grids", "TestStoreGrid",
		[]string{"stored slot refused by docs/format.md §10", " scale 0x", ", exact 0x"}, nil},
	// One token past klen: the grids poison the slots past each request, so the extra key shows
	// as an element outside the profile's bound.
	{"causal-off-by-one", "grids", "TestDecodeGrid",
		[]string{"decode: portable: (profile dot4-int8q): row ", "× the bound (bound: the dot4-int8q profile's"}, nil},
	// Another KV head's keys and values: far outside the bound and the contract.
	{"gqa-mapping", "grids", "TestDecodeGrid",
		[]string{"decode: portable: (profile dot4-int8q): row ", "× the bound", "outside the contract's 0.02"}, nil},
	// The merge reads the workspace's NaN fill where an empty split or padding row wrote nothing.
	{"stale-workspace", "grids", "TestDecodeGrid",
		[]string{"is not exactly zero", "rows that attend to nothing are written as exact zeros"}, nil},
	// The adapter says which tier ran: the worker refuses the call.
	{"tier-fallback", "grids", "TestDecodeGrid",
		[]string{"OCTAVE_ERR_UNSUPPORTED_TIER", "asked wmma-model, the adapter reports portable ran (silent fallback)"},
		[]string{"decode: portable: "}},
	// It says nothing: only the asked tier's profile bound sees dot4-int8q arithmetic in its place.
	{"tier-fallback-silent", "grids", "TestDecodeGrid",
		[]string{"decode: wmma-model: (profile wmma-f16q): row ", "× the bound (bound: the wmma-f16q profile's"},
		[]string{"decode: portable: ", "silent fallback"}},
	// Block sizes 7 and 48 are valid (docs/contract.md §7): the exception is the op's failure.
	{"raise-on-valid", "grids", "TestStoreGrid",
		[]string{"OCTAVE_ERR_RUNTIME", "the adapter raised ValueError", "is not a power of two"}, nil},
}

// TestDefectsCaught: every planted defect fails its judge, with a message that names it.
func TestDefectsCaught(t *testing.T) {
	e := setup(t)
	for _, d := range defects {
		t.Run(d.defect, func(t *testing.T) {
			out, code := e.goTest(t, e.spec(d.defect), d.pkg, d.pattern)
			if code == 0 {
				t.Fatalf("defect %s: %s -run %s exited 0, expected a failure\n%s", d.defect, d.pkg, d.pattern, lastLines(out, 20))
			}
			if !strings.Contains(out, "--- FAIL: "+d.pattern) {
				t.Fatalf("defect %s: exit %d but %s did not fail (a build or setup error?)\n%s", d.defect, code, d.pattern, lastLines(out, 20))
			}
			for _, w := range d.want {
				if !strings.Contains(out, w) {
					t.Errorf("defect %s: %s failed without saying %q\n%s", d.defect, d.pattern, w, failures(out, 12))
				}
			}
			for _, w := range d.notWant {
				if strings.Contains(out, w) {
					t.Errorf("defect %s: %s says %q, which this defect does not explain\n%s", d.defect, d.pattern, w, failures(out, 12))
				}
			}
		})
	}
}

// TestDefectsDeclared: the test covers every defect the adapter offers, and the adapter refuses
// an unknown one at setup with a message that lists them.
func TestDefectsDeclared(t *testing.T) {
	e := setup(t)
	out, err := exec.Command(e.python, "-c", "import ast, sys; m = ast.parse(open(sys.argv[1]).read())\n"+
		"for n in m.body:\n"+
		"    if isinstance(n, ast.Assign) and getattr(n.targets[0], 'id', '') == 'DEFECTS':\n"+
		"        print(' '.join(sorted(ast.literal_eval(n.value))))", e.adapter).Output()
	if err != nil {
		t.Fatalf("reading DEFECTS from %s: %v", e.adapter, err)
	}
	var names []string
	for _, d := range defects {
		names = append(names, d.defect)
	}
	got := strings.Fields(string(out))
	if strings.Join(got, " ") != strings.Join(sortedCopy(names), " ") {
		t.Errorf("the adapter's DEFECTS are %v, the test covers %v: expected the same names", got, sortedCopy(names))
	}
	res, code := e.goTest(t, e.spec("no-such-defect"), "grids", "TestRotate$")
	if code == 0 || !strings.Contains(res, "defect='no-such-defect', expected one of") {
		t.Errorf("defect=no-such-defect: exit %d, expected the open to fail naming the defects\n%s", code, lastLines(res, 10))
	}
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

// TestConformCertified: `octant conform` through the clean adapter's spec certifies it on the
// domain it declares: a narrowed certificate (its title says so) that lists prefill as not
// declared. A tree whose conform takes no worker spec (it hashes the library file the spec names
// no file of) skips, saying so.
func TestConformCertified(t *testing.T) {
	e := setup(t)
	dir := t.TempDir()
	out, code := e.run(t, e.spec(""), "octant", ".", "conform", "--lib", e.spec(""), "--budget", "20s", "--out", dir)
	report, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatalf("octant conform exit %d and no report: %v\n%s", code, err, lastLines(out, 30))
	}
	title := strings.SplitN(string(report), "\n", 2)[0]
	if code != 0 || !strings.Contains(title, "CERTIFIED ON A NARROWED DOMAIN (not declared: prefill") {
		t.Errorf("octant conform of the clean adapter: exit %d, title %q; expected exit 0 and CERTIFIED ON A NARROWED DOMAIN (not declared: prefill...)\n%s", code, title, lastLines(out, 30))
	}
	for _, op := range []string{"store", "rotate", "decode", "reduce"} {
		if regexp.MustCompile(`(?m)^` + op + `\s+Fail`).MatchString(out) {
			t.Errorf("octant conform of the clean adapter: %s failed\n%s", op, lastLines(out, 30))
		}
	}
}
