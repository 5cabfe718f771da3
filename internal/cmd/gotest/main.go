// Command gotest runs `go test -json` and prints, instead of its stream, one line per package as
// it ends ("[ 3/25] ok   github.com/octant-kv/octant/oracle  12.3s  85 passed, 2 skipped"), the
// complete output of every failed test as it fails, every package's own output when the package
// fails (a build error, a panic, a timeout) with the output of the tests it cut short, a line every
// -every saying what is still running and how far the run is, and a summary. Its exit status is
// go test's. `make test`, `make emu-test` and `make gpu-test` use it, so that a step of minutes is
// never silent and a CI log stays short.
//
//	gotest [-go GO] [-every 30s] [-summary FILE] [--] [go test flags] [packages]
//	gotest -total FILE [-exit N] [-since UNIXSECONDS] [-label "make test"]
//
// Its own flags come first; everything from the first other argument (or after "--") goes to go
// test as it is. The package count comes from `go list` of the arguments that are package paths
// ("./...", "./grids/", "../x").
//
// With -summary FILE a run also appends its counts to FILE (one JSON line: the packages that ran
// tests, the tests passed and skipped, the failures, its exit status). -total FILE reads such a
// file and prints the closing verdict of everything that appended to it: a line with the label,
// the packages, the go test runs and the time since -since, then alone on the last line
// "test: N passed, M failed" (the label's last word), the form CI reads; -exit is the exit status
// of the steps that ran (a failure outside go test counts as one). `make test` ends on it.
package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

const usage = `usage: gotest [-go GO] [-every 30s] [-summary FILE] [--] [go test flags] [packages]
       gotest -total FILE [-exit N] [-since UNIXSECONDS] [-label "make test"]`

// options are gotest's own flags.
type options struct {
	goBin   string
	every   time.Duration
	summary string    // -summary: the file a run appends its record to
	total   string    // -total: the file whose records are added up; no go test runs
	exit    int       // -exit: with -total, the exit status of the steps that ran
	since   time.Time // -since: with -total, when the run began
	label   string    // -label: with -total, what the verdict is of
}

func main() {
	o, args, err := parseArgs(os.Args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "gotest: %v\n%s\n", err, usage)
		os.Exit(2)
	}
	if o.total != "" {
		rs, err := readRecords(o.total)
		if err != nil {
			fmt.Fprintf(os.Stderr, "gotest: %v\n", err)
			os.Exit(2)
		}
		os.Exit(total(os.Stdout, o.label, rs, o.exit, time.Since(o.since)))
	}
	start := time.Now()
	code, p := run(o.goBin, o.every, args, os.Stdout, os.Stderr)
	if o.summary != "" && p != nil {
		if err := appendRecord(o.summary, newRecord(args, p, code, time.Since(start))); err != nil {
			fmt.Fprintf(os.Stderr, "gotest: -summary: %v\n", err)
			code = max(code, 2)
		}
	}
	os.Exit(code)
}

// parseArgs takes gotest's own flags ("-x v" or "-x=v", one or two dashes) from the front of args
// and returns the rest, for go test.
func parseArgs(args []string) (o options, rest []string, err error) {
	o = options{goBin: "go", every: 30 * time.Second, label: "make test", since: time.Now()}
	own := map[string]bool{"go": true, "every": true, "summary": true, "total": true, "exit": true, "since": true, "label": true}
	for len(args) > 0 {
		name, val, hasVal := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(args[0], "-"), "-"), "=")
		if args[0] == "--" {
			return o, args[1:], nil
		}
		if !own[name] || !strings.HasPrefix(args[0], "-") {
			break
		}
		args = args[1:]
		if !hasVal {
			if len(args) == 0 {
				return o, nil, fmt.Errorf("-%s needs a value", name)
			}
			val, args = args[0], args[1:]
		}
		switch name {
		case "go":
			o.goBin = val
		case "every":
			if o.every, err = time.ParseDuration(val); err != nil || o.every <= 0 {
				return o, nil, fmt.Errorf("-every %s: expected a positive duration", val)
			}
		case "summary":
			o.summary = val
		case "total":
			o.total = val
		case "exit":
			if o.exit, err = strconv.Atoi(val); err != nil || o.exit < 0 {
				return o, nil, fmt.Errorf("-exit %s: expected an exit status (a number ≥ 0)", val)
			}
		case "since":
			sec, err := strconv.ParseInt(val, 10, 64)
			if err != nil {
				return o, nil, fmt.Errorf("-since %s: expected a time in seconds since 1970 (date +%%s)", val)
			}
			o.since = time.Unix(sec, 0)
		case "label":
			o.label = val
		}
	}
	return o, args, nil
}

// run runs go test -json args and reports through a printer; it returns go test's exit status
// (2 when go cannot be started) and the printer (nil when go test did not start).
func run(goBin string, every time.Duration, args []string, stdout, stderr io.Writer) (int, *printer) {
	total := countPackages(goBin, args)
	p := newPrinter(stdout, total, time.Now())
	cmd := exec.Command(goBin, append([]string{"test", "-json"}, args...)...)
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintf(stderr, "gotest: %v\n", err)
		return 2, nil
	}
	fmt.Fprintf(stdout, "go test %s: %s\n", strings.Join(args, " "), p.totalString())
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "gotest: %v\n", err)
		return 2, nil
	}
	var mu sync.Mutex
	stop := make(chan struct{})
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case now := <-t.C:
				mu.Lock()
				p.heartbeat(now)
				mu.Unlock()
			}
		}
	}()
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		mu.Lock()
		p.line(sc.Text(), time.Now())
		mu.Unlock()
	}
	err = cmd.Wait()
	close(stop)
	mu.Lock()
	defer mu.Unlock()
	p.finish(time.Now())
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return ee.ExitCode(), p
	case err != nil:
		fmt.Fprintf(stderr, "gotest: %v\n", err)
		return 2, p
	case p.failed > 0:
		return 1, p // go test said 0, its events said FAIL: trust the failure
	}
	return 0, p
}

// countPackages is the number of packages `go list` finds for the package arguments of args, or
// 0 when it cannot tell.
func countPackages(goBin string, args []string) int {
	var pkgs []string
	for _, a := range args {
		if a == "." || a == ".." || strings.HasPrefix(a, "./") || strings.HasPrefix(a, "../") {
			pkgs = append(pkgs, a)
		}
	}
	if len(pkgs) == 0 {
		return 0
	}
	out, err := exec.Command(goBin, append([]string{"list"}, pkgs...)...).Output()
	if err != nil {
		return 0
	}
	return len(strings.Fields(string(out)))
}
