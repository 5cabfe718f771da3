package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/octant-kv/octant/internal/settings"
)

// `octant fuzz --devices 0,1 --target FuzzDecode --fuzztime 10m --out DIR`: one coverage-guided Go
// fuzzer per GPU, each an independent run of the fuzz test binary, then their corpora merged.
//
// Layout of DIR (--out):
//
//	DIR/fuzz.test                  the fuzz test binary (go test -c -fuzz=.), unless --test-bin
//	DIR/shard-i/pkg/testdata/      a copy of the package's testdata: the fuzzer's working
//	                               directory, where Go reads the seed corpus and writes a failing
//	                               input (testdata/fuzz/FuzzX/<hash>, relative to the working
//	                               directory), so that the fuzzers never write the same files
//	DIR/shard-i/cache/FuzzX/       the fuzzer's interesting inputs (-test.fuzzcachedir)
//	DIR/shard-i/failures/FuzzX/    the failing inputs it wrote (copied out of pkg/testdata)
//	DIR/shard-i/regressions/       their reproducers (OCTANT_REGRESSIONS)
//	DIR/shard-i/fuzz.log           the fuzzer's output
//	DIR/shard-i/corpus.json        what ran and where its corpus is (octant merge --kind corpus)
//	DIR/corpus/FuzzX/              the merged corpus: every shard's cache and failures
//
// A shard directory is emptied before its fuzzer starts.

var fuzzTargetName = regexp.MustCompile(`^Fuzz[A-Za-z0-9_]*$`)

// runFuzz runs one fuzzer per device and merges their corpora.
func runFuzz(args []string, stdout, stderr io.Writer) int {
	env, err := settings.FromEnv()
	if err != nil {
		fmt.Fprintf(stderr, "octant fuzz: %v\n", err)
		return 2
	}
	fs := flag.NewFlagSet("fuzz", flag.ContinueOnError)
	fs.SetOutput(stderr)
	devices := fs.String("devices", "", "comma-separated GPU ids (0,1): one fuzzer per device, each seeing only its device (required)")
	target := fs.String("target", "", "the fuzz target (FuzzDecode, FuzzPrefill, ...; required)")
	fuzztime := fs.String("fuzztime", "10m", "each fuzzer's time (a Go duration) or executions (Nx), as go test -fuzztime")
	minimize := fs.String("minimize", "10x", "each new input's minimization, as go test -fuzzminimizetime (mk/fuzz.mk says why not Go's 60s)")
	lib := fs.String("lib", env.Lib, "kernel library the GPU targets judge (default $"+settings.LibEnv+"; the CPU targets need none)")
	pkg := fs.String("pkg", "./fuzz", "the fuzz targets' package directory (its testdata is the seed corpus)")
	testBin := fs.String("test-bin", "", "a prebuilt fuzz test binary of --pkg (make bin builds bin/fuzz.test); default: go test -c -fuzz=. into --out")
	out := fs.String("out", "build/fuzz", "directory for the shards and the merged corpus")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: octant fuzz --devices 0,1,... --target FuzzX [--fuzztime 10m] [--minimize 10x] [--lib PATH] [--pkg ./fuzz] [--test-bin PATH] [--out DIR]\n\nRuns one coverage-guided Go fuzzer of the target per device at once (-parallel 1 each, its own\nworking copy of the package's testdata and its own fuzz cache), then merges their corpora into\nDIR/corpus (docs/fuzz.md, \"One fuzzer per GPU\"). Exit 0 when no fuzzer failed, 1 when one found\na failing input or did not finish, 2 usage or environment error.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "octant fuzz: unexpected arguments %q\n", fs.Args())
		return 2
	}
	ids, err := parseDevices(*devices)
	if err != nil {
		fmt.Fprintf(stderr, "octant fuzz: %v\n", err)
		return 2
	}
	if !fuzzTargetName.MatchString(*target) {
		fmt.Fprintf(stderr, "octant fuzz: --target %q: expected one fuzz target's name (FuzzDecode)\n", *target)
		return 2
	}
	var childEnv []string
	if *lib != "" {
		abs, err := filepath.Abs(*lib)
		if err == nil {
			_, err = os.Stat(abs)
		}
		if err != nil {
			fmt.Fprintf(stderr, "octant fuzz: --lib %s: %v\n", *lib, err)
			return 2
		}
		childEnv = append(childEnv, settings.LibEnv+"="+abs) // the fuzzers run in other directories
	}
	outAbs, err := filepath.Abs(*out)
	if err != nil {
		fmt.Fprintf(stderr, "octant fuzz: %v\n", err)
		return 2
	}
	bin := *testBin
	if bin == "" {
		bin = filepath.Join(outAbs, "fuzz.test")
		if err := os.MkdirAll(outAbs, 0o755); err != nil {
			fmt.Fprintf(stderr, "octant fuzz: %v\n", err)
			return 2
		}
		fmt.Fprintf(stdout, "fuzz: go test -c -fuzz=. -o %s %s\n", bin, *pkg)
		if b, err := exec.Command("go", "test", "-c", "-fuzz=.", "-o", bin, *pkg).CombinedOutput(); err != nil {
			fmt.Fprintf(stderr, "octant fuzz: building the fuzz test binary of %s: %v\n%s(or give a prebuilt one: --test-bin bin/fuzz.test)\n", *pkg, err, b)
			return 2
		}
	} else if bin, err = filepath.Abs(bin); err != nil {
		fmt.Fprintf(stderr, "octant fuzz: %v\n", err)
		return 2
	}
	n := len(ids)
	shardDirs := make([]string, n)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, id := range ids {
		root := filepath.Join(outAbs, "shard-"+strconv.Itoa(i))
		shardDirs[i] = root
		seeds, err := prepareFuzzShard(root, *pkg, *target)
		if err != nil {
			fmt.Fprintf(stderr, "octant fuzz: shard %d/%d: %v\n", i, n, err)
			return 2
		}
		fargs := []string{"-test.run=^$", "-test.fuzz=^" + *target + "$", "-test.fuzztime=" + *fuzztime,
			"-test.fuzzminimizetime=" + *minimize, "-test.parallel=1", "-test.fuzzcachedir=" + filepath.Join(root, "cache")}
		cenv := append(append(visibleEnv(id), childEnv...), settings.RegressionsEnv+"="+filepath.Join(root, "regressions"))
		m := fuzzShardManifest{Target: *target, Index: i, Count: n, VisibleDevices: strings.Join(visibleEnv(id), ", "), FuzzTime: *fuzztime,
			Corpus: []string{"cache", "failures"}, Regressions: "regressions"}
		wg.Add(1)
		go func() {
			defer wg.Done()
			log := filepath.Join(root, "fuzz.log")
			start := time.Now()
			code, err := runShardProcess(bin, fargs, filepath.Join(root, "pkg"), cenv, log, func() {
				mu.Lock()
				fmt.Fprintf(stdout, "fuzz: shard %d/%d (%s) on device %s started (log %s)\n", i, n, *target, id, log)
				mu.Unlock()
			})
			m.Exit = code
			failures, ferr := collectFuzzFailures(root, *target, seeds)
			m.Failures = failures
			merr := writeFuzzManifest(root, m)
			mu.Lock()
			defer mu.Unlock()
			end := fmt.Sprintf("exit %d", code)
			if err != nil {
				end = err.Error()
			}
			fmt.Fprintf(stdout, "fuzz: shard %d/%d (%s) on device %s: %s after %.1fs, %d failing input(s) (log %s)\n", i, n, *target, id, end, time.Since(start).Seconds(), len(failures), log)
			for _, e := range []error{ferr, merr} {
				if e != nil {
					fmt.Fprintf(stdout, "fuzz: shard %d/%d: %v\n", i, n, e)
				}
			}
			if code != 0 {
				fmt.Fprintf(stdout, "fuzz: shard %d/%d: last lines of %s:\n%s", i, n, log, logTail(log, 15))
			}
		}()
	}
	wg.Wait()
	return mergeCorpora(filepath.Join(outAbs, "corpus"), shardDirs, "octant fuzz "+strings.Join(args, " "), stdout, stderr)
}

// prepareFuzzShard empties root and copies pkg's testdata into root/pkg/testdata, the shard
// fuzzer's working directory; it returns the names of the target's seed corpus files.
func prepareFuzzShard(root, pkg, target string) (map[string]bool, error) {
	if err := os.RemoveAll(root); err != nil {
		return nil, err
	}
	work := filepath.Join(root, "pkg")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, err
	}
	src := filepath.Join(pkg, "testdata")
	if st, err := os.Stat(src); err == nil && st.IsDir() {
		if err := os.CopyFS(filepath.Join(work, "testdata"), os.DirFS(src)); err != nil {
			return nil, fmt.Errorf("copying %s: %v", src, err)
		}
	} else if !os.IsNotExist(err) {
		return nil, fmt.Errorf("%s: expected the package's testdata directory, found %v", src, statWhat(st, err))
	}
	seeds := map[string]bool{}
	files, _ := os.ReadDir(filepath.Join(work, "testdata", "fuzz", target))
	for _, f := range files {
		seeds[f.Name()] = true
	}
	return seeds, nil
}

// collectFuzzFailures copies the inputs the fuzzer wrote into its testdata (those not among the
// seeds) to root/failures/target and returns their paths relative to root.
func collectFuzzFailures(root, target string, seeds map[string]bool) ([]string, error) {
	dir := filepath.Join(root, "pkg", "testdata", "fuzz", target)
	files, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	var out []string
	for _, f := range files {
		if seeds[f.Name()] || f.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, f.Name()))
		if err != nil {
			return out, err
		}
		rel := filepath.Join("failures", target, f.Name())
		if err := os.MkdirAll(filepath.Join(root, "failures", target), 0o755); err != nil {
			return out, err
		}
		if err := os.WriteFile(filepath.Join(root, rel), b, 0o644); err != nil {
			return out, err
		}
		out = append(out, rel)
	}
	return out, nil
}

func writeFuzzManifest(root string, m fuzzShardManifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(root, corpusManifestName), append(b, '\n'), 0o644)
}
