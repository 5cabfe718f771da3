// Command gotest runs `go test -json` and prints, instead of its stream, one line per package as
// it ends ("[ 3/25] ok   github.com/octant-kv/octant/oracle  12.3s  85 passed, 2 skipped"), the
// complete output of every failed test as it fails, every package's own output when the package
// fails (a build error, a panic, a timeout) with the output of the tests it cut short, a line every
// -every saying what is still running and how far the run is, and a summary. Its exit status is
// go test's. `make test`, `make emu-test` and `make gpu-test` use it, so that a step of minutes is
// never silent and a CI log stays short.
//
//	go run ./internal/cmd/gotest [-go GO] [-every 30s] [--] [go test flags] [packages]
//
// Its own flags come first; everything from the first other argument (or after "--") goes to go
// test as it is. The package count comes from `go list` of the arguments that are package paths
// ("./...", "./kernels/", "../x").
package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

const usage = "usage: gotest [-go GO] [-every 30s] [--] [go test flags] [packages]"

func main() {
	goBin, every, args, err := parseArgs(os.Args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "gotest: %v\n%s\n", err, usage)
		os.Exit(2)
	}
	os.Exit(run(goBin, every, args, os.Stdout, os.Stderr))
}

// parseArgs takes gotest's own flags (-go, -every; "-x v" or "-x=v") from the front of args and
// returns the rest, for go test.
func parseArgs(args []string) (goBin string, every time.Duration, rest []string, err error) {
	goBin, every = "go", 30*time.Second
	for len(args) > 0 {
		name, val, hasVal := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(args[0], "-"), "-"), "=")
		if args[0] == "--" {
			return goBin, every, args[1:], nil
		}
		if name != "go" && name != "every" || !strings.HasPrefix(args[0], "-") {
			break
		}
		args = args[1:]
		if !hasVal {
			if len(args) == 0 {
				return "", 0, nil, fmt.Errorf("-%s needs a value", name)
			}
			val, args = args[0], args[1:]
		}
		if name == "go" {
			goBin = val
		} else if every, err = time.ParseDuration(val); err != nil || every <= 0 {
			return "", 0, nil, fmt.Errorf("-every %s: expected a positive duration", val)
		}
	}
	return goBin, every, args, nil
}

// run runs go test -json args and reports through a printer; it returns go test's exit status
// (2 when go cannot be started).
func run(goBin string, every time.Duration, args []string, stdout, stderr io.Writer) int {
	total := countPackages(goBin, args)
	p := newPrinter(stdout, total, time.Now())
	cmd := exec.Command(goBin, append([]string{"test", "-json"}, args...)...)
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintf(stderr, "gotest: %v\n", err)
		return 2
	}
	fmt.Fprintf(stdout, "go test %s: %s\n", strings.Join(args, " "), p.totalString())
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "gotest: %v\n", err)
		return 2
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
		return ee.ExitCode()
	case err != nil:
		fmt.Fprintf(stderr, "gotest: %v\n", err)
		return 2
	case p.failed > 0:
		return 1 // go test said 0, its events said FAIL: trust the failure
	}
	return 0
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
