package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/octant-kv/octant/arch"
	"github.com/octant-kv/octant/bench"
	"github.com/octant-kv/octant/harness"
	"github.com/octant-kv/octant/internal/provenance"
	"github.com/octant-kv/octant/internal/settings"
	"github.com/octant-kv/octant/kernels"
	"github.com/octant-kv/octant/oracle"
)

func benchUsage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintf(w, `usage: octant bench --lib PATH [--specs LIST] [--reps N] [--warmup N] [--splits N|auto[,...]] [--json FILE] [flags]

Times the decode tiers (octave_decode: split-KV attention + reduce) and, for a prefill spec, the
prefill tiers (octave_prefill) of a kernel library on a device, each tier over the same inputs
(--tiers), for these batch shapes (fp16 query, block size 16, LBHNC cache, default sign patterns,
sm_scale 1/16, G = Hq/Hkv = 6; "100k" is 100000 tokens, "2k" is 2048 queries):

`)
	var hidden []string
	for _, s := range bench.Specs {
		if s.Hidden {
			hidden = append(hidden, s.Name)
		} else {
			fmt.Fprintf(w, "  %-9s %s\n", s.Name, strings.ReplaceAll(s.Summary, "\n", "\n            "))
		}
	}
	fmt.Fprintf(w, `
  q2ks100k: decode takes at most 128 query tokens per request (docs/contract.md §3.3; longer chunks go to
  prefill in vLLM), so one iteration is ⌈2048/--max-rows⌉ = 16 decode calls of 128 consecutive
  rows, enqueued back to back, then one sync; its time is the whole chunk's. Each call reads the
  request's K/V again: the spec is compute-bound and its GB/s is an effective figure.
  Test shapes: %s.

Cache: --distinct random slots (fp16 K/V quantized by the oracle) tiled over every block, never
zeros; the block table is a random permutation; queries are random fp16.
Timing: --warmup iterations, then three measurements of --reps iterations each:
  device ms: the device timer (octave_timer_start/stop: CUDA/HIP events) around the call(s), with
    the L2 flush (a d2d copy of --flush-bytes) enqueued just before the start mark so the device is
    busy while the calls are enqueued: how scripts/bench_sdpa.py times fp16 SDPA, so this is the
    column to set beside it; median and min reported;
  host ms: the host clock around the call(s) and octave_sync, after a flush that was waited for:
    adds the host's launch and sync latency (median reported, min in --json);
  stream ms: the mean of --reps iterations enqueued back to back with one sync (caches warm).
  Without the flush (--flush-l2=false) the device idles while the host enqueues, and the device
  timer counts that too.
bytes = Σ over requests of Hkv × seq_len × slot bytes (each KV head's slots once per request: the
kernel reads them once for all G query heads); GB/s = bytes / device median; HBM = device-to-device copy
bandwidth measured in the same run (octave_copy_d2d of --copy-bytes, read + write counted);
%%HBM = GB/s / HBM. Gqk/s = (query head, token) scores per second.
num_splits auto = clamp(⌈16·SMs / W⌉, 1, min(1024, ⌊kv_max/T⌋)), W = ⌈rows per call /
  query_group⌉ · Hkv workgroups per split, T = 768 tokens, 384 when query_group · G > 8; on the
  mma tier the numerator is 8·SMs, W also counts the workgroups a chunk's passes take side by
  side (× ⌈query_group · G / 24⌉ when query_group · G > 8), T is 768 always, and ⌈kv_max/768⌉
  splits are taken instead when that many splits of W workgroups fit on the SMs at once; for
  k3v4 when query_group · G ≤ 8 (its decode kernel there runs one workgroup per SM) the count k
  of the best k·W / (SMs · waves) − 0.03·(waves − 1), waves = ⌈k·W / SMs⌉ (big: 4, one wave) (so
  each tier is timed at its own count, the spec set up once per count);
query_group auto = min(4, query tokens per request).
A prefill spec passes --splits as octave_prefill's num_splits: auto is 0 (the tier chooses: the
mma tier splits the prefix when its grid leaves SMs idle), N (1..64) asks the mma tier for N
(more than 64 fails the prefill specs with NUM_SPLITS).
Judged before timed: each setup (spec × num_splits) is judged once on every tier timed over it
by package harness, the one judge (the declared profile's bound of the oracle's model, exact
attention, canaries, the same bits twice), before it is timed. A tier judged Fail is not timed:
its row says "FAILED: " and the verdict's reason where the times would be. A timed tier's output
must be the judged output, bit for bit. The oracle's side runs on the host and grows with query
rows × tokens: seconds for q1s100k and q4s100k, about 130 CPU seconds and 26 GB of host memory
for big, about an hour of CPU time each for q2ks100k and q2ks100k-pf (minutes on 16 cores);
"judged in" on stderr says what it took (docs/performance.md, "Judged before timed").
Progress goes to stderr, the table to stdout, all numbers to --json FILE.

Exit status: 0 success; 1 a tier judged Fail, a decode call failed, or its timed output was not
the judged output; 2 usage or environment error (library missing or invalid, no device, out of
device memory); 3 a tier's timed calls hung in the library (--timeout-per-tier); 130 interrupted.

flags:
`, strings.Join(hidden, ", "))
	fs.PrintDefaults()
}

// runBench parses the flags, opens the library and its device, and runs package bench.
func runBench(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	env, err := settings.FromEnv()
	if err != nil {
		fmt.Fprintln(stderr, "octant bench:", err)
		return 2
	}
	lib := fs.String("lib", env.Lib, "kernel library (liboctave_cuda.so, liboctave_hip.so, liboctave_emu.so); default $"+settings.LibEnv)
	device := fs.Int("device", 0, "device index")
	specList := fs.String("specs", bench.DefaultSpecs, "comma-separated specs")
	reps := fs.Int("reps", 50, "timed iterations per spec")
	tierTimeout := fs.Duration("timeout-per-tier", 10*time.Minute, "watchdog: timed calls of one tier still running after this hang in the library: bench exits 3 (0: no watchdog)")
	warmup := fs.Int("warmup", 5, "untimed iterations before timing")
	splitList := fs.String("splits", "auto", "num_splits: auto, N (1..1024), or a comma-separated list to sweep")
	qg := fs.Int("query-group", 0, "query_group 1..4; 0 = auto (min(4, query tokens per request))")
	maxRows := fs.Int("max-rows", 128, "query rows of one request per decode call (0 = all in one call)")
	fmtName := fs.String("fmt", "octave_k3v4", "cache format: octave_k3v4, octave_k3v3, octave_k3v3_compact (or 4, 3, 19)")
	blockSize := fs.Int("block-size", 16, "tokens per cache block")
	distinct := fs.Int("distinct", 4096, "distinct random slots quantized on the host and tiled over the cache")
	seed := fs.Uint64("seed", 1, "random seed (cache, block table, queries)")
	copyBytesS := fs.String("copy-bytes", "4GiB", "size of the d2d copy that measures HBM bandwidth (0 = skip)")
	copyReps := fs.Int("copy-reps", 20, "timed d2d copies")
	flushL2 := fs.Bool("flush-l2", true, "flush the L2 (an untimed d2d copy) before each timed iteration")
	flushBytesS := fs.String("flush-bytes", "256MiB", "scratch size of the L2 flush")
	jsonPath := fs.String("json", "", "write all numbers as JSON to FILE")
	tierList := fs.String("tiers", "all", "tiers to time: all (every tier the device offers; each spec runs on those offering its op) or a comma-separated list of tier names")
	fs.Usage = func() { benchUsage(stderr, fs) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "octant bench: "+format+"\n", a...)
		fmt.Fprintln(stderr, "run 'octant bench -h' for the flags")
		return 2
	}
	if fs.NArg() != 0 {
		return usageErr("unexpected argument %q", fs.Arg(0))
	}
	specs, err := bench.ParseSpecs(*specList)
	if err != nil {
		return usageErr("%v", err)
	}
	splits, err := bench.ParseSplits(*splitList)
	if err != nil {
		return usageErr("%v", err)
	}
	id, err := oracle.ParseFormatID(*fmtName)
	if err != nil {
		return usageErr("--fmt: %v", err)
	}
	f, err := oracle.KernelFormat(id)
	if err != nil {
		return usageErr("--fmt: %v", err)
	}
	copyBytes, err := bench.ParseByteSize(*copyBytesS)
	if err != nil {
		return usageErr("--copy-bytes: %v", err)
	}
	flushBytes, err := bench.ParseByteSize(*flushBytesS)
	if err != nil {
		return usageErr("--flush-bytes: %v", err)
	}
	switch {
	case *reps < 1:
		return usageErr("--reps %d: need at least 1", *reps)
	case *warmup < 0:
		return usageErr("--warmup %d: need at least 0", *warmup)
	case *qg < 0 || *qg > 4:
		return usageErr("--query-group %d: expected 0 (auto) or 1..4", *qg)
	case *maxRows < 0:
		return usageErr("--max-rows %d: expected ≥ 0", *maxRows)
	case *blockSize < 1:
		return usageErr("--block-size %d: expected ≥ 1", *blockSize)
	case *distinct < 1:
		return usageErr("--distinct %d: expected ≥ 1", *distinct)
	case *copyReps < 1:
		return usageErr("--copy-reps %d: need at least 1", *copyReps)
	case *lib == "":
		return usageErr("--lib is required (or set OCTANT_LIB): a kernel library built with make cuda, make hip or make emu")
	}
	if _, _, _, isSpec, _ := harness.WorkerSpec(*lib); isSpec {
		return usageErr("--lib %s: a worker spec; octant bench times a kernel library's device timers (octave_timer_start/stop) and takes the library's path, not an adapter (docs/adapters.md: a worker has no device timer)", *lib)
	}
	progress := func(format string, a ...any) { fmt.Fprintf(stderr, "bench: "+format+"\n", a...) }

	l, err := kernels.Open(*lib)
	if err != nil {
		fmt.Fprintf(stderr, "octant bench: %v\n", err)
		return 2
	}
	defer l.Close()
	libSum, err := provenance.FileSHA256(*lib)
	if err != nil {
		fmt.Fprintf(stderr, "octant bench: %v\n", err)
		return 2
	}
	d, err := l.OpenDevice(*device)
	if err != nil {
		if errors.Is(err, kernels.ErrNoDevice) {
			fmt.Fprintf(stderr, "octant bench: no device: %v\n", err)
		} else {
			fmt.Fprintf(stderr, "octant bench: opening device %d: %v\n", *device, err)
		}
		return 2
	}
	defer d.Close()
	info := d.Info
	tiers, err := benchTiers(d, *tierList)
	if err != nil {
		fmt.Fprintf(stderr, "octant bench: --tiers: %v\n", err)
		return 2
	}
	progress("library %s (sha256 %s…; %s)", *lib, libSum[:16], l.BuildInfo())
	progress("device %d: %s (%s, %s, %d SMs/CUs, %s)", *device, info.Name, info.Arch, info.Runtime, info.ComputeUnits, bench.HumanBytes(int64(info.TotalMemory)))

	// An interrupt stops the run between setups (interruptContext: a judge or timing still running
	// after the grace, or a second interrupt, ends the process at once).
	ctx, release := interruptContext(stderr, "bench", interruptGrace)
	defer release()
	rep, err := bench.Run(ctx, d, bench.Config{
		Options: bench.Options{Fmt: f, BlockSize: *blockSize, QueryGroup: *qg, MaxRows: *maxRows, Distinct: *distinct,
			Seed: *seed, Reps: *reps, Warmup: *warmup, FlushL2: *flushL2, FlushBytes: flushBytes},
		Specs: specs, Splits: splits, Tiers: tiers, CopyBytes: copyBytes, CopyReps: *copyReps, Device: *device,
		Progress:       progress,
		Failed:         func(err error) { fmt.Fprintf(stderr, "octant bench: %v\n", err) },
		TimeoutPerTier: *tierTimeout,
		Hung:           func(setup string) { os.Exit(reportBenchHung(stderr, setup, *tierTimeout)) },
	})
	if err != nil {
		fmt.Fprintf(stderr, "octant bench: %v\n", err)
		if ctx.Err() != nil {
			return 130
		}
		return 2
	}
	rep.Version, rep.GoRevision = Version, provenance.Revision()
	rep.Library = map[string]any{"path": *lib, "sha256": libSum, "build_info": l.BuildInfo(), "abi_version": kernels.ABIVersion}
	bench.WriteTable(stdout, rep)
	if *jsonPath != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err == nil {
			err = os.WriteFile(*jsonPath, append(b, '\n'), 0o644)
		}
		if err != nil {
			fmt.Fprintf(stderr, "octant bench: writing %s: %v\n", *jsonPath, err)
			return 2
		}
		progress("wrote %s", *jsonPath)
	}
	switch env, check := rep.Failed(); {
	case env:
		return 2
	case check:
		return 1
	}
	return 0
}

// benchTiers resolves --tiers against the tiers device d offers for decode or prefill: "all" is
// every one of them, otherwise each name must be one of them.
func benchTiers(d *kernels.Device, list string) ([]kernels.TierDesc, error) {
	all, err := d.Tiers()
	if err != nil {
		return nil, err
	}
	var offered []kernels.TierDesc
	var names []string
	for _, t := range all {
		if t.Offers(arch.Decode) || t.Offers(arch.Prefill) {
			offered = append(offered, t)
			names = append(names, string(t.Name))
		}
	}
	if strings.TrimSpace(list) == "all" {
		if len(offered) == 0 {
			return nil, fmt.Errorf("the device offers no decode or prefill tier")
		}
		return offered, nil
	}
	var out []kernels.TierDesc
	for _, n := range arch.ParseTierNames(list) {
		i := slices.IndexFunc(offered, func(t kernels.TierDesc) bool { return t.Name == n })
		if i < 0 {
			return nil, fmt.Errorf("tier %q: expected all or one of the tiers the device offers (%s)", n, strings.Join(names, ", "))
		}
		out = append(out, offered[i])
	}
	return out, nil
}

// reportBenchHung says which setup's timed calls hung in the library and returns bench's exit
// status for it: the library cannot be interrupted from Go, so the process ends.
func reportBenchHung(w io.Writer, setup string, after time.Duration) int {
	fmt.Fprintf(w, "octant bench: %s: the timed calls have not returned from the library after %v: they hang\n", setup, after)
	return 3
}
