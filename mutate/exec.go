package mutate

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// KillResult is what one phase did to a library.
type KillResult struct {
	Killed  bool          `json:"killed"`
	By      string        `json:"by,omitempty"`      // the first failing test or fuzz target
	After   time.Duration `json:"after_ns"`          // time from the phase's start to the first failure (or the whole phase)
	Cases   int           `json:"cases"`             // tests started (grid) or fuzzer execs (fuzz) until then
	Message string        `json:"message,omitempty"` // the failure line
	Error   string        `json:"error,omitempty"`   // the phase could not run
}

var (
	failLine = regexp.MustCompile(`^\s*--- FAIL: (\S+)`)
	// A failure message streams before its "--- FAIL" line, which parallel subtests only print
	// when their parent ends: the kernel tests' failures end with their reproduce line, rapid's
	// start with "[rapid] failed". The test is the one go test last named: "=== NAME" says whose
	// output follows when parallel subtests interleave (else the last started or continued).
	failMsg   = regexp.MustCompile(`\[seed \d+; reproduce: |\[rapid\] failed`)
	contLine  = regexp.MustCompile(`^=== (?:RUN|CONT|NAME)\s+(\S+)`)
	runLine   = regexp.MustCompile(`^=== RUN\s`)
	execsLine = regexp.MustCompile(`execs: (\d+)`)
	propLine  = regexp.MustCompile(`(gpu-[a-z]+: .*)`)
)

// killGrace is how long a run goes on after its first failure line before it is killed.
const killGrace = 250 * time.Millisecond

// RunUntilFail runs the program name with args and env (added to this process's environment),
// streaming its output to log, and stops it at the first failure or when the budget ends (0: no
// limit). A failure is a "--- FAIL: name" line (the deepest name wins when several close at once),
// a streamed failure message (a kernel test's reproduce line, rapid's "[rapid] failed": the test
// last started or continued is named), or a non-zero exit without either (a crash: the program is
// named). Stopping at the budget is not a kill. It counts "=== RUN" lines and fuzzer execs as cases.
// It runs in dir ("": the current directory).
func RunUntilFail(dir, name string, args, env []string, budget time.Duration, log io.Writer) KillResult {
	ctx := context.Background()
	var cancel context.CancelFunc = func() {}
	if budget > 0 {
		ctx, cancel = context.WithTimeout(ctx, budget)
	}
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
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
		return KillResult{Error: err.Error()}
	}
	res := KillResult{}
	last := name
	guessed := false // res.By is the last test started, not yet a "--- FAIL" line's name
	// A kill a moment after the first failure line, not at once: the lines that follow it (the
	// failing subtest's "--- FAIL", the message) are often already written and name the culprit.
	// Once the process is waited for, its group id may be reused: the timer then does nothing.
	var once sync.Once
	var mu sync.Mutex
	waited := false
	stopSoon := func() {
		once.Do(func() {
			time.AfterFunc(killGrace, func() {
				mu.Lock()
				defer mu.Unlock()
				if !waited {
					kill()
				}
			})
		})
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			line := sc.Text()
			io.WriteString(log, line+"\n")
			if runLine.MatchString(line) {
				res.Cases++
			}
			if m := execsLine.FindStringSubmatch(line); m != nil {
				res.Cases, _ = strconv.Atoi(m[1])
			}
			if m := propLine.FindStringSubmatch(line); m != nil && res.Message == "" {
				res.Message = m[1]
			}
			if m := contLine.FindStringSubmatch(line); m != nil {
				last = m[1]
			}
			if failMsg.MatchString(line) && !res.Killed {
				res.Killed, res.By, res.After = true, last, time.Since(start)
				guessed = true
				stopSoon()
			}
			if m := failLine.FindStringSubmatch(line); m != nil {
				switch {
				case !res.Killed:
					res.Killed, res.By, res.After = true, m[1], time.Since(start)
					stopSoon()
				case guessed:
					// The name taken at the streamed message was the last test started or
					// continued, which among parallel subtests need not be the failing one: the
					// "--- FAIL" lines, when they come within the grace, name it.
					res.By, guessed = m[1], false
				case strings.HasPrefix(m[1], res.By+"/"):
					res.By = m[1] // a parent's line comes first: name the failing subtest
				}
			}
		}
	}()
	err := cmd.Wait()
	mu.Lock()
	waited = true
	mu.Unlock()
	pw.Close()
	<-done
	if !res.Killed {
		res.After = time.Since(start)
		if err != nil && ctx.Err() == nil {
			// A failure without a "--- FAIL" line (a crash, a fuzz failure report): killed too.
			res.Killed, res.By = true, name
		}
	}
	return res
}
