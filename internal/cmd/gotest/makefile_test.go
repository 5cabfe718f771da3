package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The Makefile's make test is what CI runs: these tests read its recipes (make -n would run the
// recipes that call $(MAKE)) and run the one compile step that takes under a second.

const repoRoot = "../../.."

// recipe is the recipe of target in the Makefile: the tab-indented lines after "target:", with
// continuation lines joined.
func recipe(t *testing.T, target string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(b), "\\\n", " ")
	var out []string
	in := false
	for _, l := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(l, target+":"):
			in = true
		case in && strings.HasPrefix(l, "\t"):
			out = append(out, strings.TrimSpace(l))
		case in:
			if len(out) == 0 {
				t.Fatalf("target %s has no recipe", target)
			}
			return strings.Join(out, "\n")
		}
	}
	if !in {
		t.Fatalf("no target %s in the Makefile", target)
	}
	return strings.Join(out, "\n")
}

// TestMakeTestRecipes: make test ends on gotest -total over every go test run of its steps; the
// steps and make conform call bin/octant, never go run (whose "exit status 1" doubles every
// failing exit); the ISA table goes to build/isa.log; make emu-test runs the GPU, the
// must-not-matter and the isolation properties (-short) on the emulator library, every tier (no
// OCTANT_TIERS), and the binding's tests with the kernel grids (./kernels/ ./grids/, -short);
// make gpu-bins builds the grids' test binary (bin/grids.test, the one octant mutate runs).
func TestMakeTestRecipes(t *testing.T) {
	test := recipe(t, "test")
	if !regexp.MustCompile(`test-steps GOTEST_SUMMARY=\$\(abspath \$\(TEST_SUMMARY\)\); rc=\$\$\?;\s+\$\(GOTEST_BIN\) -total \$\(TEST_SUMMARY\) -exit \$\$rc -since \$\$start -label "make test"$`).MatchString(test) {
		t.Errorf("make test does not end on gotest -total over its steps:\n%s", test)
	}
	steps := recipe(t, "test-steps")
	conform := recipe(t, "conform")
	for name, r := range map[string]string{"test-steps": steps, "conform": conform, "golden": recipe(t, "golden")} {
		if strings.Contains(r, "go run") || strings.Contains(r, "$(GO) run") {
			t.Errorf("%s runs go run:\n%s", name, r)
		}
		if !strings.Contains(r, "bin/octant ") {
			t.Errorf("%s does not call bin/octant:\n%s", name, r)
		}
	}
	for name, r := range map[string]string{"test-steps": steps, "conform": conform} {
		if strings.Contains(r, "$(MAKE) --no-print-directory isa ") || strings.Contains(r, " isa\n") {
			t.Errorf("%s prints the ISA table (make isa) instead of logging it (make isa-log):\n%s", name, r)
		}
	}
	if !strings.Contains(steps, "$(MAKE) --no-print-directory emu-test") {
		t.Errorf("make test's steps do not run make emu-test:\n%s", steps)
	}
	emu := recipe(t, "emu-test")
	gpu := regexp.MustCompile(`(?m)^OCTANT_LIB=\$\(abspath \$\(KBUILD\)/liboctave_emu\.so\) \$\(GOTEST\) -short -count=1 -run '\^\(TestGPU\|TestMustNotMatter\|TestSkipContract\|TestIsolation\)' \./fuzz/$`)
	if !gpu.MatchString(emu) {
		t.Errorf("make emu-test does not run TestGPU*, TestMustNotMatter*, TestSkipContract* and TestIsolation* (-short) on the emulator library:\n%s", emu)
	}
	grids := regexp.MustCompile(`(?m)^OCTANT_LIB=\$\(abspath \$\(KBUILD\)/liboctave_emu\.so\) \$\(GOTEST\) -short -count=1 [^\n]*\./kernels/ \./grids/$`)
	if !grids.MatchString(emu) {
		t.Errorf("make emu-test does not run the binding's tests and the kernel grids (-short ./kernels/ ./grids/) on the emulator library:\n%s", emu)
	}
	if bins := recipe(t, "gpu-bins"); !strings.Contains(bins, "-o bin/grids.test ./grids\n") {
		t.Errorf("make gpu-bins does not build bin/grids.test from ./grids:\n%s", bins)
	}
	if isa := recipe(t, "isa-log"); !strings.Contains(isa, "isa >$(KBUILD)/isa.log") {
		t.Errorf("isa-log does not send make isa's output to build/isa.log:\n%s", isa)
	}
}

// TestMakeEmuCompileLine: an emulator compile step prints one short line ("emu: [17/17]
// csrc/emu/emu.cpp"), not the compiler's command line (a build of one object into a temporary
// directory).
func TestMakeEmuCompileLine(t *testing.T) {
	for _, tool := range []string{"make", "c++"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found", tool)
		}
	}
	dir := t.TempDir()
	cmd := exec.Command("make", "--no-print-directory", "KBUILD="+dir, "KCXX=c++", dir+"/emu/emu/emu.cpp.o")
	cmd.Dir = repoRoot
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !regexp.MustCompile(`^emu: \[\d+/\d+\] csrc/emu/emu\.cpp\n$`).Match(out) {
		t.Errorf("make printed\n%s\nwant one line: emu: [i/n] csrc/emu/emu.cpp", out)
	}
}

// TestMakeToolchainSaysWhat: when a package of the AMD toolchain is missing, the line saying what
// is installed and why goes to stderr before apt-get runs, so that make isa's output going to a
// log (make conform, make test) does not hide it (apt-get and dpkg here are stand-ins: apt-get
// fails, nothing is installed).
func TestMakeToolchainSaysWhat(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make not found")
	}
	bin := t.TempDir()
	for name, script := range map[string]string{"apt-get": "#!/bin/sh\necho stand-in apt-get; exit 1\n", "dpkg": "#!/bin/sh\nexit 1\n"} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("make", "--no-print-directory", "KAPT_PKGS=octant-no-such-package", "kernels-toolchain")
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err == nil {
		t.Fatalf("the stand-in apt-get failed, make did not:\n%s%s", stdout.String(), stderr.String())
	}
	first, _, _ := strings.Cut(stderr.String(), "\n")
	if !strings.HasPrefix(first, "kernels: installing octant-no-such-package with apt-get (Debian's clang-19 builds the AMD code objects") || strings.Contains(stdout.String(), "installing") {
		t.Errorf("stdout:\n%s\nstderr:\n%s\nwant the first line of stderr to say what is installed with apt-get and why", stdout.String(), stderr.String())
	}
}
