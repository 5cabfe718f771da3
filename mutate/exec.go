package mutate

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"
)

// KillResult is what one phase did to a library, from the test binaries' structured results
// (test2json events: Event): killed by a failed test; else an error (the phase could not run, or a
// binary failed with no test failing or running); else a survival when some test passed
// (Passed > 0), and no evidence when none did (every test skipped, or none ran).
type KillResult struct {
	Killed  bool          `json:"killed"`
	By      string        `json:"by,omitempty"`      // the first failing test or fuzz target
	After   time.Duration `json:"after_ns"`          // time from the phase's start to the first failure (or the whole phase)
	Cases   int           `json:"cases"`             // tests started (grid) or fuzzer execs (fuzz) until then
	Passed  int           `json:"passed"`            // tests that passed and have no subtest: the evidence of a survival
	Skipped int           `json:"skipped"`           // tests that skipped
	Message string        `json:"message,omitempty"` // the failing test's first output line
	Error   string        `json:"error,omitempty"`   // the phase could not run: neither a kill nor a survival
}

// Outcome is the result in words: "killed", "error", "no evidence" (nothing passed: every test
// skipped, or none ran) or "survived".
func (k KillResult) Outcome() string {
	switch {
	case k.Killed:
		return "killed"
	case k.Error != "":
		return "error"
	case k.Passed == 0:
		return "no evidence"
	}
	return "survived"
}

// add accumulates a later run of the same phase into k (its counts and time; its kill or error
// when k has none).
func (k *KillResult) add(r KillResult) {
	after := k.After + r.After
	cases, passed, skipped := k.Cases+r.Cases, k.Passed+r.Passed, k.Skipped+r.Skipped
	if !k.Killed && k.Error == "" {
		*k = r
	}
	k.After, k.Cases, k.Passed, k.Skipped = after, cases, passed, skipped
}

var execsLine = regexp.MustCompile(`execs: (\d+)`)

// killGrace is how long a run goes on after its first failure line before it is killed.
const killGrace = 250 * time.Millisecond

// RunUntilFail runs the Go test binary name with args and -test.v=test2json, and env (added to
// this process's environment), streaming its output to log, and stops it at the first failed test
// or when the budget ends (0: no limit). The binary's framing lines become test events (framer,
// as `go test -json` has them), and only they decide (tally): a failed test is a kill (the first
// one to fail names it: a subtest reports before its parent), a crash while a test runs fails that
// test, a non-zero exit with no test running is an error, and a run where nothing passed is no
// evidence. Stopping at the budget is not a kill. It counts started tests and fuzzer execs as
// cases. It runs in dir ("": the current directory), with PWD naming it.
func RunUntilFail(dir, name string, args, env []string, budget time.Duration, log io.Writer) KillResult {
	res, _ := runTests(dir, name, args, env, budget, log)
	return res
}

// runTests is RunUntilFail that also returns the names of the tests that passed (parents
// included), so that a control run can say whether the one test it ran passed.
func runTests(dir, name string, args, env []string, budget time.Duration, log io.Writer) (KillResult, []string) {
	ctx := context.Background()
	var cancel context.CancelFunc = func() {}
	if budget > 0 {
		ctx, cancel = context.WithTimeout(ctx, budget)
	}
	defer cancel()
	cmd := exec.CommandContext(ctx, name, append(append([]string(nil), args...), "-test.v=test2json")...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if dir != "" {
		// exec sets PWD to Dir only when Env is nil; a stale PWD would name the caller's directory.
		if abs, err := filepath.Abs(dir); err == nil {
			cmd.Env = append(cmd.Env, "PWD="+abs)
		}
	}
	// Its own process group, killed as a whole (a test binary's children, a shell's), and Wait
	// returns soon after even if something still holds the output pipe.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	kill := func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.Cancel = kill
	cmd.WaitDelay = 2 * time.Second
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return KillResult{Error: err.Error()}, nil
	}
	t := newTally(start)
	// A kill a moment after the first failure, not at once: the output that follows it (the
	// parents' results, the rest of a message) is often already written. Once the process is
	// waited for, its group id may be reused: the timer then does nothing.
	var once sync.Once
	var mu sync.Mutex
	waited, killedEarly := false, false
	stopSoon := func() {
		once.Do(func() {
			time.AfterFunc(killGrace, func() {
				mu.Lock()
				defer mu.Unlock()
				if !waited {
					killedEarly = true
					kill()
				}
			})
		})
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f := &framer{emit: func(e Event) {
			if t.add(e) {
				stopSoon()
			}
		}}
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			io.WriteString(log, strings.ReplaceAll(sc.Text(), string(framingMarker), "")+"\n")
			f.line(sc.Text())
		}
	}()
	err := cmd.Wait()
	mu.Lock()
	waited = true
	mu.Unlock()
	pw.Close()
	<-done
	return t.finish(name, err, ctx.Err() != nil || killedEarly), t.passed
}
