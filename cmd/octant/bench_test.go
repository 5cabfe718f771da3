package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/octant-kv/octant/bench"
	"github.com/octant-kv/octant/internal/settings/settingstest"
	"github.com/octant-kv/octant/kernels"
)

// TestBenchUsageErrors checks the errors that need no library: exit status 2 and a clear message.
func TestBenchUsageErrors(t *testing.T) {
	t.Setenv("OCTANT_LIB", "")
	notLib := filepath.Join(t.TempDir(), "liboctave_fake.so")
	os.WriteFile(notLib, []byte("not an ELF file"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bench"}, "--lib is required"},
		{[]string{"bench", "--lib", "/nonexistent/liboctave_cuda.so"}, "/nonexistent/liboctave_cuda.so"},
		{[]string{"bench", "--lib", notLib}, "loading"},
		{[]string{"bench", "--lib", notLib, "--specs", "q1s1m"}, `unknown spec "q1s1m"`},
		{[]string{"bench", "--lib", notLib, "--splits", "2000"}, "--splits"},
		{[]string{"bench", "--lib", notLib, "--fmt", "octave_k2v2"}, "--fmt"},
		{[]string{"bench", "--lib", notLib, "--reps", "0"}, "--reps"},
		{[]string{"bench", "--lib", notLib, "--query-group", "5"}, "--query-group"},
		{[]string{"bench", "--lib", notLib, "--copy-bytes", "lots"}, "--copy-bytes"},
		{[]string{"bench", "--lib", notLib, "extra"}, "unexpected argument"},
		{[]string{"bench", "--no-such-flag"}, "flag provided but not defined"},
	} {
		code, out, errs := runCLI(c.args...)
		if code != 2 || !strings.Contains(errs, c.want) || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q", c.args, code, out, errs, c.want)
		}
	}
	code, _, errs := runCLI("bench", "-h")
	if code != 0 || !strings.Contains(errs, "16 decode calls of 128") || !strings.Contains(errs, "num_splits auto") {
		t.Errorf("-h: exit %d\n%s", code, errs)
	}
	if _, out, _ := runCLI("help"); !strings.Contains(out, "bench") {
		t.Errorf("bench missing from the command list:\n%s", out)
	}
}

// TestBenchNoDevice runs against the HIP library of this tree when it was built and loads (it
// needs libamdhip64) on a machine without an AMD GPU: exit 2 and "no device".
func TestBenchNoDevice(t *testing.T) {
	p := "../../build/liboctave_hip.so"
	l, err := kernels.Open(p)
	if err != nil {
		t.Skipf("no loadable %s: %v", p, err)
	}
	d, err := l.OpenDevice(0)
	if err == nil {
		d.Close()
		l.Close()
		t.Skip("this machine has a HIP device")
	}
	l.Close()
	code, _, errs := runCLI("bench", "--lib", p, "--specs", "tiny")
	if code != 2 || !strings.Contains(errs, "no device") {
		t.Errorf("exit %d\n%s", code, errs)
	}
}

// TestBenchCLI runs the command on the library of OCTANT_LIB with the small test specs.
func TestBenchCLI(t *testing.T) {
	lib := settingstest.LibOrSkip(t)
	jsonPath := filepath.Join(t.TempDir(), "bench.json")
	code, out, errs := runCLI("bench", "--lib", lib, "--specs", "tiny,tinymulti", "--splits", "auto,3", "--reps", "3", "--warmup", "1",
		"--copy-bytes", "16MiB", "--copy-reps", "2", "--flush-bytes", "4MiB", "--json", jsonPath)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	t.Log("\n" + out)
	for _, want := range []string{"device ms", "host ms", "GB/s", "% HBM", "HBM (octave_copy_d2d of 16.0 MiB"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errs, "bench: tiny: tier portable: num_splits") || !strings.Contains(errs, "bench: tiny: judged in") {
		t.Errorf("no progress on stderr:\n%s", errs)
	}
	raw, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var rep bench.Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	lb, _ := os.ReadFile(lib)
	sum := sha256.Sum256(lb)
	if rep.Library["sha256"] != hex.EncodeToString(sum[:]) || rep.Library["path"] != lib || rep.Date == "" || rep.Device["name"] == "" {
		t.Errorf("report header: %+v %+v %q", rep.Library, rep.Device, rep.Date)
	}
	if rep.HBM == nil || rep.HBMGBps <= 0 || rep.HBM.MovedBytes != 2*(16<<20) {
		t.Errorf("HBM: %+v", rep.HBM)
	}
	nt := len(rep.Settings["tiers"].([]any))
	if nt < 1 || len(rep.Results) != 4*nt {
		t.Fatalf("%d results, want 4 x %d (2 specs x 2 split settings x the device's decode tiers)", len(rep.Results), nt)
	}
	for i, r := range rep.Results {
		if want := rep.Settings["tiers"].([]any)[i%nt]; string(r.Tier) != want {
			t.Errorf("result %d: tier %q, want %q", i, r.Tier, want)
		}
	}
	for _, r := range rep.Results {
		if r.Verdict == "" || r.Verdict == "Fail" || r.JudgeS <= 0 {
			t.Errorf("result %s %s: verdict %q, judged in %g s: expected judged (Pass or QualityWarning) before it was timed", r.Spec, r.Tier, r.Verdict, r.JudgeS)
		}
		if r.Error != "" || r.MedianMS <= 0 || r.MinMS <= 0 || r.MinMS > r.MedianMS || r.DeviceMS <= 0 || r.DeviceMinMS > r.DeviceMS || r.StreamMS <= 0 || r.GBps <= 0 || r.Fraction <= 0 ||
			len(r.Timing.SamplesM) != 3 || r.Splits < 1 || r.Bytes != int64(r.Reqs*r.KVHeads*r.Tokens*248) {
			t.Errorf("result %+v", r)
		}
	}
	if rep.Results[nt].Splits != 3 || rep.Results[nt].SplitsAuto || !rep.Results[0].SplitsAuto {
		t.Errorf("split settings: %+v", rep.Results[:nt+1])
	}

	// A prefill spec runs on the tiers that offer prefill, one call per iteration, and checks its output.
	code, out, errs = runCLI("bench", "--lib", lib, "--specs", "tinypf", "--reps", "1", "--warmup", "0", "--copy-bytes", "0", "--flush-l2=false")
	if code != 0 || !strings.Contains(out, "tinypf    portable") || !strings.Contains(errs, "tinypf: tier portable: one prefill call of 136 query tokens") {
		t.Errorf("--specs tinypf: exit %d\n%s\n%s", code, out, errs)
	}

	// One tier by name; a name the device does not offer is a usage error naming those it does.
	code, out, errs = runCLI("bench", "--lib", lib, "--specs", "tiny", "--tiers", "portable", "--reps", "1", "--warmup", "0", "--copy-bytes", "0")
	if code != 0 || !strings.Contains(out, "portable") || strings.Count(out, "tiny") != 1 {
		t.Errorf("--tiers portable: exit %d\n%s\n%s", code, out, errs)
	}
	code, _, errs = runCLI("bench", "--lib", lib, "--specs", "tiny", "--tiers", "portable,tensor")
	if code != 2 || !strings.Contains(errs, `tier "tensor": expected all or one of the tiers the device offers (portable`) {
		t.Errorf("--tiers tensor: exit %d\n%s", code, errs)
	}
}

// TestBenchWrongKernelHasNoSpeed: a library whose decode is wrong (mutant 15, corpus/mutants.md:
// query head hq reads KV head hq % Hkv instead of hq / G; finite, non-zero output) gets no time:
// each setup is judged before it is timed, the table and the JSON say "FAILED: " and the judge's
// reason where the times would be, and the command exits 1.
func TestBenchWrongKernelHasNoSpeed(t *testing.T) {
	const lib = "../../build/mutants/liboctave_emu_m15.so"
	if _, err := os.Stat(lib); err != nil {
		t.Skipf("%s not built (make emu-mutant MUTANT=15, about a minute): %v", lib, err)
	}
	jsonPath := filepath.Join(t.TempDir(), "bench.json")
	code, out, errs := runCLI("bench", "--lib", lib, "--specs", "tinymulti", "--tiers", "portable", "--reps", "1", "--warmup", "0",
		"--copy-bytes", "0", "--flush-l2=false", "--json", jsonPath)
	if code != 1 {
		t.Errorf("exit %d, expected 1 (a failed check)\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if !strings.Contains(out, "FAILED: ") || strings.Contains(out, "device median") {
		t.Errorf("the table lacks FAILED and its reason:\n%s", out)
	}
	raw, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var rep bench.Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 1 {
		t.Fatalf("%d results, expected 1", len(rep.Results))
	}
	r := rep.Results[0]
	if !strings.HasPrefix(r.Error, "FAILED: ") || r.MedianMS != 0 || r.DeviceMS != 0 || r.StreamMS != 0 || r.GBps != 0 || len(r.Timing.SamplesM) != 0 {
		t.Errorf("result: error %q, host median %g ms, device median %g ms, stream %g ms, %g GB/s: expected FAILED and no time", r.Error, r.MedianMS, r.DeviceMS, r.StreamMS, r.GBps)
	}
	if strings.Contains(string(raw), "device_median_ms") {
		t.Errorf("the JSON gives the failed result a device time:\n%s", raw)
	}
	t.Log("\n" + out)
}
