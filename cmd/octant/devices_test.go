package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// devicesRun runs `octant conform --devices ids` in this process with the shard tests' flags,
// its shard processes being bin, and returns the exit status and output.
func devicesRun(t *testing.T, bin, lib, ids, out string) (int, string, string) {
	t.Helper()
	prev := devicesExecutable
	devicesExecutable = func() (string, error) { return bin, nil }
	t.Cleanup(func() { devicesExecutable = prev })
	args := append(append([]string{"conform", "--lib", lib}, shardFlags...), "--devices", ids, "--out", out)
	return runCLI(args...)
}

// certField reads one top-level field of a certificate.json.
func certField(t *testing.T, path, key string) any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m[key]
}

// TestDevicesMergeEqualUnsharded: `conform --devices` with 1, 3 and 4 ids runs one shard process
// per id, each seeing only its device, and its merged certificate is the unsharded run's case for
// case, each shard's certificate naming its own device (ids out of order, so shard i's device is
// not i). Then one shard's process fails (a library that does not exist, exit 2) in the same
// --out: the merge names that shard as not run and is NOT CERTIFIED, although the earlier run left
// a good certificate in that shard's directory.
func TestDevicesMergeEqualUnsharded(t *testing.T) {
	lib := emuLib(t)
	bin := buildOctant(t)
	full, code := conformProcess(t, bin, lib)
	if code != 0 {
		t.Fatalf("unsharded run: exit %d, expected 0 (CERTIFIED)", code)
	}
	want := comparable(t, filepath.Join(full, "certificate.json"))
	var out string
	for _, ids := range []string{"5", "2,0,1", "3,1,2,0"} {
		devs := strings.Split(ids, ",")
		n := len(devs)
		out = t.TempDir()
		code, stdout, stderr := devicesRun(t, bin, lib, ids, out)
		if code != 0 {
			t.Fatalf("conform --devices %s: exit %d, expected 0\n%s\n%s", ids, code, stdout, stderr)
		}
		if d := diffKeys(want, comparable(t, filepath.Join(out, "certificate.json"))); len(d) > 0 {
			t.Errorf("--devices %s: merged certificate differs from the unsharded one: %s", ids, strings.Join(d, "; "))
		}
		var wantDevs []any
		for i, dev := range devs {
			mask := fmt.Sprintf("CUDA_VISIBLE_DEVICES=%s, HIP_VISIBLE_DEVICES=%s", dev, dev)
			dir := filepath.Join(out, "shards", fmt.Sprint(i))
			if got := certField(t, filepath.Join(dir, "certificate.json"), "visible_devices"); got != mask {
				t.Errorf("--devices %s: shard %d/%d: visible_devices %v, expected %q", ids, i, n, got, mask)
			}
			for _, line := range []string{
				fmt.Sprintf("devices: shard %d/%d on device %s started (log %s)", i, n, dev, filepath.Join(dir, "conform.log")),
				fmt.Sprintf("devices: shard %d/%d on device %s: exit 0 after", i, n, dev),
			} {
				if !strings.Contains(stdout, line) {
					t.Errorf("--devices %s: no progress line %q in\n%s", ids, line, stdout)
				}
			}
			wantDevs = append(wantDevs, fmt.Sprintf("%d/%d: %s", i, n, mask))
		}
		if got := certField(t, filepath.Join(out, "certificate.json"), "shard_devices"); !reflect.DeepEqual(got, wantDevs) {
			t.Errorf("--devices %s: merged shard_devices %v, expected %v", ids, got, wantDevs)
		}
	}

	t.Run("failing shard process", func(t *testing.T) {
		devicesChildArgs = func(i int, args []string) []string {
			if i != 1 {
				return args
			}
			return append(slices.Clone(args), "--lib="+filepath.Join(t.TempDir(), "no-such-lib.so"))
		}
		t.Cleanup(func() { devicesChildArgs = nil })
		code, stdout, stderr := devicesRun(t, bin, lib, "0,1,2,3", out)
		cert := filepath.Join(out, "certificate.json")
		if code != 1 || certField(t, cert, "certified") != false || !reflect.DeepEqual(certField(t, cert, "shards_not_run"), []any{"1/4"}) ||
			!strings.Contains(stdout, "shard not run: 1/4") {
			t.Fatalf("exit %d, shards_not_run %v; expected exit 1, NOT CERTIFIED naming shard 1/4 as not run\n%s\n%s", code, certField(t, cert, "shards_not_run"), stdout, stderr)
		}
		for _, want := range []string{"devices: shard 1/4 on device 1: exit 2 after", "no-such-lib.so", "wrote no certificate to merge (exit 2): not run"} {
			if !strings.Contains(stdout, want) {
				t.Errorf("no %q (the failing shard's exit and log tail) in\n%s", want, stdout)
			}
		}
	})
}

// TestDevicesUsage: --devices refuses empty, duplicate and non-integer ids, a run without
// --cases and a run with --shard, each with a usage error (exit 2) naming what was expected.
func TestDevicesUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--cases", "2", "--devices", ""}, `device id ""`},
		{[]string{"--cases", "2", "--devices", "0,,1"}, `device id ""`},
		{[]string{"--cases", "2", "--devices", "0,1,0"}, "device 0 given twice"},
		{[]string{"--cases", "2", "--devices", "0,gpu1"}, `device id "gpu1"`},
		{[]string{"--cases", "2", "--devices", "-1"}, `device id "-1"`},
		{[]string{"--cases", "2", "--devices", "1.5"}, `device id "1.5"`},
		{[]string{"--devices", "0,1"}, "expected --cases N beside it"},
		{[]string{"--cases", "2", "--shard", "0/2", "--devices", "0,1"}, "no --shard"},
	} {
		code, _, stderr := runCLI(append([]string{"conform", "--lib", "x.so", "--out", t.TempDir()}, c.args...)...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("conform %s: exit %d, stderr %q; expected exit 2 with %q", strings.Join(c.args, " "), code, stderr, c.want)
		}
	}
}
