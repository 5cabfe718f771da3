package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/octant-kv/octant/internal/settings"
)

// `octant conform --devices 0,1,2,3` on one host without a scheduler: one `octant conform --shard
// i/n` process per device, all at once, each seeing only its device, then `octant merge`.
//
// Layout of OUT (--out):
//
//	OUT/shards/i/          shard i's --out: certificate.json, report.md, junit.xml, regressions/
//	OUT/shards/i/conform.log   the shard process's stdout and stderr
//	OUT/certificate.json, report.md, junit.xml   the merged certificate
//
// A shard directory is emptied before its process starts, so a certificate left by an earlier
// run is never merged as this run's.

// devicesExecutable is the binary the shard processes run: this one. A test sets it to a built
// octant (a test binary is not octant).
var devicesExecutable = os.Executable

// devicesChildArgs may rewrite shard i's arguments before it starts (nil: none); a test uses it
// to make one shard fail.
var devicesChildArgs func(i int, args []string) []string

// parseDevices reads --devices: comma-separated non-negative integer device ids, no duplicates.
func parseDevices(v string) ([]string, error) {
	var ids []string
	seen := map[int]bool{}
	for _, f := range strings.Split(v, ",") {
		f = strings.TrimSpace(f)
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("--devices %q: device id %q: expected comma-separated non-negative integers (0,1,2,3)", v, f)
		}
		if seen[n] {
			return nil, fmt.Errorf("--devices %q: device %d given twice: expected each device once (one shard per device)", v, n)
		}
		seen[n] = true
		ids = append(ids, strconv.Itoa(n))
	}
	return ids, nil
}

// shardRun is one shard process's outcome.
type shardRun struct {
	dir, log string
	code     int // exit status; -1 when killed by a signal or not started
	err      error
	took     time.Duration
}

// runDevices runs shard i/n of conform's flags (fs, less --devices and --out) on device ids[i]
// for every i at once, then merges the shards that wrote a certificate into out. A shard whose
// process exits 2 or dies is not merged: the merged certificate names it as not run.
func runDevices(fs *flag.FlagSet, ids []string, out, cmdline string, stdout, stderr io.Writer) int {
	exe, err := devicesExecutable()
	if err != nil {
		fmt.Fprintf(stderr, "octant conform: --devices: finding this program to run its shards: %v\n", err)
		return 2
	}
	var common []string
	fs.Visit(func(f *flag.Flag) {
		if f.Name != "devices" && f.Name != "out" {
			common = append(common, "--"+f.Name+"="+f.Value.String())
		}
	})
	n := len(ids)
	runs := make([]shardRun, n)
	var mu sync.Mutex // one progress line at a time
	var wg sync.WaitGroup
	for i, id := range ids {
		dir := filepath.Join(out, "shards", strconv.Itoa(i))
		runs[i] = shardRun{dir: dir, log: filepath.Join(dir, "conform.log"), code: -1}
		args := append([]string{"conform"}, common...)
		args = append(args, fmt.Sprintf("--shard=%d/%d", i, n), "--out="+dir)
		if devicesChildArgs != nil {
			args = devicesChildArgs(i, args)
		}
		if err := os.RemoveAll(dir); err != nil {
			fmt.Fprintf(stderr, "octant conform: --devices: emptying %s: %v\n", dir, err)
			return 2
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			fmt.Fprintf(stderr, "octant conform: --devices: %v\n", err)
			return 2
		}
		wg.Add(1)
		go func(i int, id string, r *shardRun) {
			defer wg.Done()
			start := time.Now()
			r.code, r.err = runShardProcess(exe, args, "", visibleEnv(id), r.log, func() {
				mu.Lock()
				fmt.Fprintf(stdout, "devices: shard %d/%d on device %s started (log %s)\n", i, n, id, r.log)
				mu.Unlock()
			})
			r.took = time.Since(start)
			mu.Lock()
			defer mu.Unlock()
			end := fmt.Sprintf("exit %d", r.code)
			if r.err != nil {
				end = r.err.Error()
			}
			fmt.Fprintf(stdout, "devices: shard %d/%d on device %s: %s after %.1fs (log %s)\n", i, n, id, end, r.took.Seconds(), r.log)
			if r.code != 0 {
				fmt.Fprintf(stdout, "devices: shard %d/%d: last lines of %s:\n%s", i, n, r.log, logTail(r.log, 15))
			}
		}(i, id, &runs[i])
	}
	wg.Wait()
	var dirs []string
	for i, r := range runs {
		if r.code != 0 && r.code != 1 {
			fmt.Fprintf(stdout, "devices: shard %d/%d on device %s wrote no certificate to merge (exit %d): not run\n", i, n, ids[i], r.code)
			continue
		}
		if _, err := os.Stat(filepath.Join(r.dir, "certificate.json")); err != nil {
			fmt.Fprintf(stdout, "devices: shard %d/%d on device %s exited %d without %s: not run\n", i, n, ids[i], r.code, filepath.Join(r.dir, "certificate.json"))
			continue
		}
		dirs = append(dirs, r.dir)
	}
	if len(dirs) == 0 {
		fmt.Fprintf(stderr, "octant conform: --devices %s: no shard wrote a certificate (logs under %s): nothing to merge, NOT CERTIFIED\n", strings.Join(ids, ","), filepath.Join(out, "shards"))
		return 2
	}
	return mergeCertificates(out, dirs, cmdline, stdout, stderr)
}

// visibleEnv is the environment that shows a process only device id, as its device 0.
func visibleEnv(id string) []string {
	return []string{settings.CUDAVisibleEnv + "=" + id, settings.HIPVisibleEnv + "=" + id}
}

// runShardProcess runs exe with args in dir ("": this one) with env added to this process's
// environment, its output in logPath, and returns its exit status (-1 and an error when it could
// not start or was killed by a signal). started is called once it runs.
func runShardProcess(exe string, args []string, dir string, env []string, logPath string, started func()) (int, error) {
	log, err := os.Create(logPath)
	if err != nil {
		return -1, err
	}
	defer log.Close()
	cmd := exec.Command(exe, args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, log, log
	cmd.Env = append(os.Environ(), env...)
	fmt.Fprintf(log, "$ %s %s %s\n", strings.Join(env, " "), exe, strings.Join(args, " "))
	if err := cmd.Start(); err != nil {
		return -1, fmt.Errorf("not started: %v", err)
	}
	started()
	err = cmd.Wait()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &ee) && ee.ExitCode() >= 0:
		return ee.ExitCode(), nil
	default:
		return -1, fmt.Errorf("died: %v", err)
	}
}

// logTail is the last n lines of the file at path, each indented, or why it cannot be read.
func logTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "    (" + err.Error() + ")\n"
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	var s strings.Builder
	for _, l := range lines {
		s.WriteString("    " + string(l) + "\n")
	}
	return s.String()
}
