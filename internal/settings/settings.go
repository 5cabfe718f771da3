// Package settings is the one place Octant reads its environment. Library packages (harness,
// cases, fuzz, conformance, bench) take every setting as an argument; the callers — the commands
// in cmd/ (as flag defaults) and the test binaries (in TestMain or a test helper) — read them here
// once and pass them down. A malformed value is an error that names the variable, the value and
// what was expected, never a silent default.
package settings

import (
	"slices"

	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/octant-kv/octant/arch"
)

// The environment variables Octant reads.
const (
	// LibEnv names the kernel library the tests and the commands' --lib default to.
	LibEnv = "OCTANT_LIB"
	// TiersEnv restricts the library to the listed tiers (comma-separated names, such as
	// "portable", "wmma-model" or "mfma-model"): to fuzz or test one tier while it is being developed.
	TiersEnv = "OCTANT_TIERS"
	// ReplayCmdEnv replaces the replay command in failure messages (a machine without Go runs
	// the prebuilt binary: OCTANT_REPLAY_CMD="bin/octant replay").
	ReplayCmdEnv = "OCTANT_REPLAY_CMD"
	// RegressionsEnv is the directory failing properties write reproducers to (default:
	// corpus/regressions at the module root), or "off" to write none.
	RegressionsEnv = "OCTANT_REGRESSIONS"
	// DecodeWorkersEnv is how many decode cases TestGPUDecode judges at once (1..64).
	DecodeWorkersEnv = "OCTANT_DECODE_WORKERS"
	// ProgressEnv is how often a long property run reports its count (a Go duration; "off":
	// never).
	ProgressEnv = "OCTANT_PROGRESS"
	// HIPLibEnv names the HIP build (make hip) that a test loads on a machine without an AMD GPU,
	// to check that it loads and refuses to open a device; make test sets it.
	HIPLibEnv = "OCTANT_HIP_LIB"
	// GoldenEnv is the directory of the upstream golden vectors (corpus/golden/upstream), for a
	// test binary run where that directory is not found from the working directory.
	GoldenEnv = "OCTANT_GOLDEN"
	// PythonEnv is the Python interpreter that runs a worker, when LibEnv (or --lib) is a worker
	// spec such as host:ADAPTER.py (a path, or a name looked up in PATH).
	PythonEnv = "OCTANT_PYTHON"
	// WorkerTimeoutEnv is how long a worker may take over one request before it counts as hung
	// and is killed (a Go duration).
	WorkerTimeoutEnv = "OCTANT_WORKER_TIMEOUT"
	// CUDAVisibleEnv and HIPVisibleEnv are the GPU runtimes' device masks: Octant does not
	// interpret them (the runtimes do), it records them in a certificate so that a reviewer sees
	// which device a shard of `octant conform --devices` ran on.
	CUDAVisibleEnv = "CUDA_VISIBLE_DEVICES"
	HIPVisibleEnv  = "HIP_VISIBLE_DEVICES"
)

// Defaults when a variable is unset.
const (
	DefaultProgress      = 30 * time.Second
	DefaultPython        = "python3"
	DefaultWorkerTimeout = 120 * time.Second
)

// Settings are the values of Octant's environment variables.
type Settings struct {
	Lib   string          // LibEnv; "" when unset
	Tiers []arch.TierName // TiersEnv, split at commas; nil when unset
	// ReplayCmd is ReplayCmdEnv; "" when unset (the caller's default applies).
	ReplayCmd string
	// Regressions is RegressionsEnv when RegressionsSet; "off" and "" mean no reproducers.
	Regressions    string
	RegressionsSet bool
	DecodeWorkers  int           // DecodeWorkersEnv; 0 when unset
	Progress       time.Duration // ProgressEnv; DefaultProgress when unset, 0 for "off"
	HIPLib         string        // HIPLibEnv; "" when unset
	Golden         string        // GoldenEnv; "" when unset (the test looks for the directory)
	Python         string        // PythonEnv; DefaultPython when unset
	WorkerTimeout  time.Duration // WorkerTimeoutEnv; DefaultWorkerTimeout when unset
	// VisibleDevices is CUDAVisibleEnv and HIPVisibleEnv as "NAME=value" for each one set,
	// joined by ", "; "" when neither is set.
	VisibleDevices string
}

// FromEnv reads the settings from the process environment.
func FromEnv() (Settings, error) { return Parse(os.LookupEnv) }

// Parse reads the settings through lookup (os.LookupEnv, or a map in a test).
func Parse(lookup func(string) (string, bool)) (Settings, error) {
	get := func(k string) string { v, _ := lookup(k); return v }
	s := Settings{Lib: get(LibEnv), ReplayCmd: get(ReplayCmdEnv), Progress: DefaultProgress,
		HIPLib: get(HIPLibEnv), Golden: get(GoldenEnv), Python: DefaultPython, WorkerTimeout: DefaultWorkerTimeout}
	var vis []string
	for _, k := range []string{CUDAVisibleEnv, HIPVisibleEnv} {
		if v, ok := lookup(k); ok {
			vis = append(vis, k+"="+v)
		}
	}
	s.VisibleDevices = strings.Join(vis, ", ")
	if v := get(PythonEnv); v != "" {
		s.Python = v
	}
	if v := get(WorkerTimeoutEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return Settings{}, fmt.Errorf("%s=%q: expected a positive Go duration (30s, 2m): how long a worker may take over one request", WorkerTimeoutEnv, v)
		}
		s.WorkerTimeout = d
	}
	if v := get(TiersEnv); v != "" {
		s.Tiers = arch.ParseTierNames(v)
		if slices.Contains(s.Tiers, "") {
			return Settings{}, fmt.Errorf("%s=%q: an empty tier name, expected comma-separated tier names", TiersEnv, v)
		}
	}
	s.Regressions, s.RegressionsSet = lookup(RegressionsEnv)
	if v := get(DecodeWorkersEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 64 {
			return Settings{}, fmt.Errorf("%s=%q: expected a number of cases judged at once in 1..64", DecodeWorkersEnv, v)
		}
		s.DecodeWorkers = n
	}
	switch v := get(ProgressEnv); v {
	case "":
	case "off":
		s.Progress = 0
	default:
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return Settings{}, fmt.Errorf("%s=%q: expected a positive Go duration (30s, 2m) or \"off\"", ProgressEnv, v)
		}
		s.Progress = d
	}
	return s, nil
}

// NoReproducers reports whether the settings turn writing reproducers off.
func (s Settings) NoReproducers() bool {
	return s.RegressionsSet && (s.Regressions == "" || s.Regressions == "off")
}
