package settings

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/octant-kv/octant/arch"
)

func lookup(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := env[k]; return v, ok }
}

// TestParse: each variable's value is read as documented; unset variables give the defaults.
func TestParse(t *testing.T) {
	got, err := Parse(lookup(map[string]string{LibEnv: "build/liboctave_emu.so", TiersEnv: "portable, wmma-model",
		ReplayCmdEnv: "bin/octant replay", RegressionsEnv: "off", DecodeWorkersEnv: "8", ProgressEnv: "2m",
		HIPLibEnv: "/opt/octant/liboctave_hip.so", GoldenEnv: "corpus/golden/upstream", PythonEnv: "/usr/bin/python3", WorkerTimeoutEnv: "90s",
		CUDAVisibleEnv: "2", HIPVisibleEnv: "3"}))
	if err != nil {
		t.Fatal(err)
	}
	want := Settings{Lib: "build/liboctave_emu.so", Tiers: []arch.TierName{arch.Portable, arch.WMMA.Model()}, ReplayCmd: "bin/octant replay",
		Regressions: "off", RegressionsSet: true, DecodeWorkers: 8, Progress: 2 * time.Minute,
		HIPLib: "/opt/octant/liboctave_hip.so", Golden: "corpus/golden/upstream", Python: "/usr/bin/python3", WorkerTimeout: 90 * time.Second,
		VisibleDevices: "CUDA_VISIBLE_DEVICES=2, HIP_VISIBLE_DEVICES=3"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Parse (-want +got):\n%s", d)
	}
	if !got.NoReproducers() {
		t.Errorf("%s=off: NoReproducers false", RegressionsEnv)
	}
	def, err := Parse(lookup(nil))
	if err != nil || def.Progress != DefaultProgress || def.DecodeWorkers != 0 || def.RegressionsSet || def.NoReproducers() || def.Tiers != nil ||
		def.Lib != "" || def.HIPLib != "" || def.Golden != "" || def.Python != DefaultPython || def.WorkerTimeout != DefaultWorkerTimeout || def.VisibleDevices != "" {
		t.Errorf("unset: %+v, %v", def, err)
	}
	if p, _ := Parse(lookup(map[string]string{HIPVisibleEnv: ""})); p.VisibleDevices != "HIP_VISIBLE_DEVICES=" {
		t.Errorf("%s set empty (no device visible): VisibleDevices %q, expected it recorded", HIPVisibleEnv, p.VisibleDevices)
	}
	if p, _ := Parse(lookup(map[string]string{ProgressEnv: "off"})); p.Progress != 0 {
		t.Errorf("%s=off: progress %v, expected 0", ProgressEnv, p.Progress)
	}
}

// TestParseRefuses: a malformed value is an error naming the variable and what was expected,
// never a silent default. The path variables have no malformed value: each is taken as written
// (the test or command that opens the path says what it found there).
func TestParseRefuses(t *testing.T) {
	for _, c := range []struct {
		k   string
		got func(Settings) string
	}{
		{LibEnv, func(s Settings) string { return s.Lib }},
		{HIPLibEnv, func(s Settings) string { return s.HIPLib }},
		{GoldenEnv, func(s Settings) string { return s.Golden }},
		{PythonEnv, func(s Settings) string { return s.Python }},
	} {
		for _, v := range []string{"off", "a b,c", "../relative/dir", "/abs/liboctave.so"} {
			s, err := Parse(lookup(map[string]string{c.k: v}))
			if err != nil || c.got(s) != v {
				t.Errorf("%s=%q: %q, %v; expected the value as written and no error", c.k, v, c.got(s), err)
			}
		}
	}
	for _, c := range []struct{ k, v, want string }{
		{DecodeWorkersEnv, "0", "expected a number of cases judged at once in 1..64"},
		{DecodeWorkersEnv, "65", "expected a number of cases judged at once in 1..64"},
		{DecodeWorkersEnv, "eight", "expected a number of cases judged at once in 1..64"},
		{ProgressEnv, "soon", "expected a positive Go duration"},
		{ProgressEnv, "-1s", "expected a positive Go duration"},
		{TiersEnv, "portable,,mma", "an empty tier name"},
		{WorkerTimeoutEnv, "soon", "expected a positive Go duration"},
		{WorkerTimeoutEnv, "0s", "expected a positive Go duration"},
	} {
		_, err := Parse(lookup(map[string]string{c.k: c.v}))
		if err == nil || !strings.Contains(err.Error(), c.k) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s=%q: %v, expected an error naming %s and saying %q", c.k, c.v, err, c.k, c.want)
		}
	}
}
