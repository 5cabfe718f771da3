package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/octant-kv/octant/arch"
	"github.com/octant-kv/octant/kernels"
)

// Config is one run: the specs, the num_splits settings to time each at, the per-case options
// and the HBM measurement.
type Config struct {
	Options
	Specs  []Spec
	Splits []int // num_splits settings (0: auto); every spec is timed at each
	// Tiers are the decode tiers to time, each over the same inputs (one Setup per spec and
	// num_splits setting), each judged over them first; empty: the device's portable tier alone.
	Tiers     []kernels.TierDesc
	CopyBytes int64 // size of the d2d copy that measures HBM bandwidth; 0: not measured
	CopyReps  int   // timed copies
	Device    int   // the device's index, recorded in the report

	// Progress, when not nil, receives a line for each step (what is allocated, timed, measured).
	Progress func(format string, a ...any)
	// Failed, when not nil, receives each failure as it happens; the report records it too.
	Failed func(err error)
	// Judge judges each setup on the tiers about to be timed over it; nil: Judge (package
	// harness). A tier whose verdict is Fail is not timed.
	Judge JudgeFunc
	// TimeoutPerTier arms a watchdog around each tier's timed calls (0: none): calls still
	// running after it are hung inside the library, which Go cannot interrupt; Hung is then called
	// from the watchdog's goroutine with the setup (spec, num_splits, tier) and decides what
	// happens (the command reports it and exits non-zero).
	TimeoutPerTier time.Duration
	Hung           func(setup string)
}

// Result is one row of the report: one spec at one num_splits setting.
type Result struct {
	Spec         string        `json:"spec"`
	Tier         arch.TierName `json:"tier"`
	Summary      string        `json:"summary"`
	Reqs         int           `json:"num_reqs"`
	Tokens       int           `json:"seq_len"`
	QPerReq      int           `json:"queries_per_req"`
	NumQ         int           `json:"num_q"`
	KVHeads      int           `json:"num_kv_heads"`
	QHeads       int           `json:"num_q_heads"`
	G            int           `json:"gqa_group"`
	Splits       int           `json:"num_splits"`
	SplitsAuto   bool          `json:"num_splits_auto"`
	QueryGroup   int           `json:"query_group"`
	Calls        int           `json:"decode_calls_per_iter"`
	NumBlocks    int           `json:"num_blocks"`
	CacheBytes   int64         `json:"cache_bytes"`
	Bytes        int64         `json:"bytes_read"`
	FP16Bytes    int64         `json:"fp16_kv_bytes"`
	QKPairs      int64         `json:"qk_pairs"`
	Timing       Timing        `json:"timing,omitzero"` // the host clock around the call(s) and the sync
	MedianMS     float64       `json:"median_ms,omitzero"`
	MinMS        float64       `json:"min_ms,omitzero"`
	DeviceTiming Timing        `json:"device_timing,omitzero"` // the device timer (events) around the call(s)
	DeviceMS     float64       `json:"device_median_ms,omitzero"`
	DeviceMinMS  float64       `json:"device_min_ms,omitzero"`
	StreamMS     float64       `json:"stream_ms,omitzero"`
	GBps         float64       `json:"gbps,omitzero"`
	StreamGBps   float64       `json:"stream_gbps,omitzero"`
	Fraction     float64       `json:"hbm_fraction,omitzero"`
	GQKps        float64       `json:"gqk_per_s,omitzero"`
	// Verdict is the one judge's status for this setup on this tier (Pass, QualityWarning, Fail;
	// harness.Verdict), judged before it was timed; VerdictNote its line (the worst ratio to the
	// bound, the distance from exact attention, or the warning). JudgeS is the wall time of
	// judging the setup: every call of an iteration on every tier timed over it, at once.
	Verdict     string  `json:"verdict,omitempty"`
	VerdictNote string  `json:"verdict_note,omitempty"`
	JudgeS      float64 `json:"judge_s,omitempty"`
	// Error is "FAILED: " and the reason: the verdict's message when the judge failed the tier,
	// else what failed (the setup, a timed call, the output check, the environment). A failed
	// result has no time.
	Error        string `json:"error,omitempty"`
	ErrorIsEnv   bool   `json:"-"`
	ErrorIsCheck bool   `json:"-"`
}

// Report is a run's results with what they were measured on: the JSON document of
// `octant bench --json`. Run fills all but Version, GoRevision and Library, which the caller knows.
type Report struct {
	Tool        string         `json:"tool"`
	Version     string         `json:"version"`
	Date        string         `json:"date"`
	GoRevision  string         `json:"go_vcs_revision,omitempty"`
	Library     map[string]any `json:"library"`
	Device      map[string]any `json:"device"`
	Settings    map[string]any `json:"settings"`
	HBM         *CopyResult    `json:"hbm,omitempty"`
	HBMGBps     float64        `json:"hbm_gbps"`
	SyncFloorMS float64        `json:"sync_floor_ms"`
	Results     []Result       `json:"results"`
	HBMError    string         `json:"-"` // the HBM measurement failed (an environment error)
}

// Failed says whether the environment failed (library, device, device memory: the HBM measurement
// or a result) and whether a check failed (a decode call, or its output, of some result).
func (r *Report) Failed() (env, check bool) {
	env = r.HBMError != ""
	for _, x := range r.Results {
		env = env || x.ErrorIsEnv
		check = check || x.ErrorIsCheck
	}
	return env, check
}

// Run times every spec of cfg at every num_splits setting on d, after the sync floor and the HBM
// bandwidth. A spec that fails is recorded in its Result and the run goes on; the error is for
// what stops the run before any spec (the sync, the L2 flush scratch), or an interruption: when
// ctx is done the run stops before the next spec and returns the results so far with an error.
func Run(ctx context.Context, d *kernels.Device, cfg Config) (*Report, error) {
	progress := cfg.Progress
	if progress == nil {
		progress = func(string, ...any) {}
	}
	failed := cfg.Failed
	if failed == nil {
		failed = func(error) {}
	}
	if len(cfg.Tiers) == 0 {
		pt, err := portableTier(d)
		if err != nil {
			return nil, err
		}
		cfg.Tiers = []kernels.TierDesc{pt}
	}
	info, f := d.Info, cfg.Fmt
	rep := &Report{Tool: "octant bench", Date: time.Now().UTC().Format(time.RFC3339),
		Device: map[string]any{"index": cfg.Device, "name": info.Name, "arch": info.Arch, "runtime": info.Runtime,
			"compute_units": info.ComputeUnits, "total_memory": info.TotalMemory},
		Settings: map[string]any{"fmt": f.Name(), "fmt_id": int(f.ID), "slot_bytes": f.SlotBytes(), "block_size": cfg.BlockSize,
			"layout": "LBHNC", "dtype": "fp16", "signs": "default (docs/format.md §2), K and V", "sm_scale": 1.0 / 16,
			"tiers": tierNames(cfg.Tiers), "reps": cfg.Reps, "warmup": cfg.Warmup, "flush_l2": cfg.FlushL2, "flush_bytes": cfg.FlushBytes,
			"max_rows": cfg.MaxRows, "query_group": cfg.QueryGroup, "splits": FormatSplits(cfg.Splits), "distinct_slots": cfg.Distinct, "seed": cfg.Seed,
			"timing": "host wall clock around the decode call(s) + octave_sync; stream = mean of reps iterations enqueued back to back, one sync"},
	}
	var err error
	if rep.SyncFloorMS, err = SyncFloor(d, 20); err != nil {
		return nil, fmt.Errorf("sync: %w", err)
	}
	if cfg.CopyBytes > 0 {
		progress("HBM: timing octave_copy_d2d of %s, %d reps", HumanBytes(cfg.CopyBytes), cfg.CopyReps)
		cr, err := MeasureCopy(d, cfg.CopyBytes, cfg.CopyReps, 3)
		if err != nil {
			rep.HBMError = err.Error()
			failed(err)
		} else {
			if cr.Note != "" {
				progress("HBM: %s", cr.Note)
			}
			progress("HBM: %s copied (read+write %s) in %.3f ms median → %.1f GB/s", HumanBytes(cr.Bytes), HumanBytes(cr.MovedBytes), cr.MedianMS, cr.GBps)
			rep.HBM, rep.HBMGBps = &cr, cr.GBps
		}
	}
	var fl *Flusher
	if cfg.FlushL2 && cfg.FlushBytes >= 2 {
		if fl, err = NewFlusher(d, cfg.FlushBytes); err != nil {
			return nil, err
		}
		defer fl.Free()
	}
	for _, s := range cfg.Specs {
		for _, ns := range cfg.Splits {
			if err := ctx.Err(); err != nil {
				return rep, fmt.Errorf("interrupted after %d results: %w", len(rep.Results), err)
			}
			rs, errs := runOne(d, s, ns, cfg, fl, rep.HBMGBps, func(format string, a ...any) { progress(s.Name+": "+format, a...) })
			for _, err := range errs {
				failed(err)
			}
			rep.Results = append(rep.Results, rs...)
		}
	}
	return rep, nil
}

// portableTier is d's portable tier as the device lists it (with the profiles it declares, which
// the judge holds it to).
func portableTier(d *kernels.Device) (kernels.TierDesc, error) {
	ts, err := d.Tiers()
	if err != nil {
		return kernels.TierDesc{}, fmt.Errorf("listing the device's tiers: %w", err)
	}
	for _, t := range ts {
		if t.Tier == kernels.TierPortable {
			return t, nil
		}
	}
	return kernels.TierDesc{}, fmt.Errorf("the device lists tiers %v: expected a portable tier (Config.Tiers empty)", ts)
}

// tierNames lists the names of tiers.
func tierNames(ts []kernels.TierDesc) []string {
	var out []string
	for _, t := range ts {
		out = append(out, string(t.Name))
	}
	return out
}

// runOne sets up spec s at num_splits ns, then times and checks each tier of cfg over those
// inputs: one result per tier. With ns 0 (auto) on a decode spec each tier gets its own rule's
// count (TierAutoSplits), and the spec is set up once per distinct count. A failure is in its
// result and returned; a failed setup fails the results of the tiers it was for.
func runOne(d *kernels.Device, s Spec, ns int, cfg Config, fl *Flusher, hbmGBps float64, sp func(string, ...any)) ([]Result, []error) {
	slot := cfg.Fmt.SlotBytes()
	base := Result{Spec: s.Name, Summary: strings.ReplaceAll(s.Summary, "\n", " "), Reqs: s.Reqs, Tokens: s.Tokens, QPerReq: s.QPerReq,
		NumQ: s.NumQ(), KVHeads: s.KVHeads, QHeads: s.Hq(), G: s.G, SplitsAuto: ns == 0,
		CacheBytes: s.CacheBytes(slot, cfg.BlockSize), Bytes: s.ReadBytes(slot),
		FP16Bytes: s.FP16Bytes(), QKPairs: s.QKPairs(), Calls: len(s.Calls(cfg.MaxRows))}
	sp("%s", s.Shape())
	op := arch.Decode
	if s.Prefill {
		op = arch.Prefill
	}
	// The tiers that offer the op, grouped by the num_splits each is timed at, in tier order.
	type group struct {
		ns    int
		tiers []kernels.TierDesc
	}
	var groups []group
	for _, t := range cfg.Tiers {
		if !t.Offers(op) {
			sp("tier %s: no %s on this tier, skipped", t.Name, op)
			continue
		}
		n := ns
		if n == 0 && !s.Prefill {
			n = TierAutoSplits(t.Tier, s, cfg.Options, d.Info.ComputeUnits)
		}
		i := slices.IndexFunc(groups, func(g group) bool { return g.ns == n })
		if i < 0 {
			groups, i = append(groups, group{ns: n}), len(groups)
		}
		groups[i].tiers = append(groups[i].tiers, t)
	}
	var out []Result
	var errs []error
	for _, g := range groups {
		rs, es := runTiers(d, s, g.ns, g.tiers, base, cfg, fl, hbmGBps, sp)
		out, errs = append(out, rs...), append(errs, es...)
	}
	return out, errs
}

// runTiers sets up spec s at num_splits ns once, judges every tier of tiers over that setup
// (cfg.Judge, else Judge), then times each tier the judge did not fail: a tier whose verdict is
// Fail is a failed result with the verdict's message and no time. After timing, the timed output
// must be the judged output, bit for bit, and the canaries intact.
func runTiers(d *kernels.Device, s Spec, ns int, tiers []kernels.TierDesc, base Result, cfg Config, fl *Flusher, hbmGBps float64,
	sp func(string, ...any)) ([]Result, []error) {
	var out []Result
	var errs []error
	fail := func(r Result, err error) {
		out, errs = append(out, failResult(r, err)), append(errs, err)
	}
	c, err := Setup(d, s, ns, cfg.Options, sp)
	if err != nil {
		for _, t := range tiers {
			r := base
			r.Tier = t.Name
			fail(r, err)
		}
		return out, errs
	}
	defer c.Free()
	base.Splits, base.QueryGroup, base.NumBlocks = c.Splits, c.QueryGroup, c.NumBlocks
	judge := cfg.Judge
	if judge == nil {
		judge = Judge
	}
	sp("judging on %s (package harness: the declared profile's bound, exact attention, canaries, the same bits twice; the oracle on the host)…",
		strings.Join(tierNames(tiers), ", "))
	j, err := judge(d, c, cfg.Options, tiers)
	if err != nil {
		for _, t := range tiers {
			r := base
			r.Tier = t.Name
			fail(r, fmt.Errorf("tier %s: judging: %w", t.Name, err))
		}
		return out, errs
	}
	sp("judged in %.1f s", j.Took.Seconds())
	base.JudgeS = j.Took.Seconds()
	for _, t := range tiers {
		r := base
		r.Tier = t.Name
		v := j.verdictOf(t)
		r.Verdict = v.Status.String()
		if v.Failed() {
			sp("tier %s: judged Fail, not timed: %v", t.Name, v.Err)
			fail(r, fmt.Errorf("spec %s, tier %s: judged Fail, not timed: %w", s.Name, t.Name, v.Err))
			continue
		}
		r.VerdictNote = v.String()
		sp("tier %s: %s", t.Name, r.VerdictNote)
		if err := c.SetTier(t.Tier); err != nil {
			fail(r, EnvError{fmt.Errorf("spec %s, tier %s: clearing the output: %w", s.Name, t.Name, err)})
			continue
		}
		if s.Prefill {
			sp("tier %s: one prefill call of %d query tokens per iteration; %d warm-up, %d timed", t.Name, s.NumQ(), cfg.Warmup, cfg.Reps)
		} else {
			sp("tier %s: num_splits %d, query_group %d, %d decode call(s) per iteration; %d warm-up, %d timed",
				t.Name, c.Splits, c.QueryGroup, len(c.Args), cfg.Warmup, cfg.Reps)
		}
		var dog *time.Timer
		if cfg.TimeoutPerTier > 0 && cfg.Hung != nil {
			setup := fmt.Sprintf("spec %s, num_splits %d, tier %s", s.Name, c.Splits, t.Name)
			dog = time.AfterFunc(cfg.TimeoutPerTier, func() { cfg.Hung(setup) })
		}
		tm, err := TimeCase(d, c, cfg.Reps, cfg.Warmup, fl)
		if dog != nil {
			dog.Stop()
		}
		if err == nil {
			err = c.CheckOutput()
		}
		if err == nil {
			var timed []uint16
			if timed, err = c.ReadOut(); err == nil {
				err = sameOutput(s, timed, j.Outputs[string(t.Name)])
			}
		}
		if err != nil {
			fail(r, fmt.Errorf("tier %s: %w", t.Name, err))
			continue
		}
		r.Timing, r.MedianMS, r.MinMS, r.StreamMS = tm.Host, tm.Host.MedianMS, tm.Host.MinMS, tm.StreamMS
		r.DeviceTiming, r.DeviceMS, r.DeviceMinMS = tm.Device, tm.Device.MedianMS, tm.Device.MinMS
		r.GBps = float64(r.Bytes) / (r.DeviceMS * 1e6)
		r.StreamGBps = float64(r.Bytes) / (r.StreamMS * 1e6)
		r.GQKps = float64(r.QKPairs) / (r.DeviceMS * 1e6)
		if hbmGBps > 0 {
			r.Fraction = r.GBps / hbmGBps
		}
		sp("tier %s: device median %.4f ms (min %.4f), host median %.4f ms (min %.4f), stream %.4f ms; %s GB/s",
			t.Name, r.DeviceMS, r.DeviceMinMS, r.MedianMS, r.MinMS, r.StreamMS, NumStr(r.GBps))
		out = append(out, r)
	}
	return out, errs
}

// failResult records err in r ("FAILED: " and the reason), as an environment error or a failed
// check.
func failResult(r Result, err error) Result {
	r.Error = "FAILED: " + err.Error()
	var ee EnvError
	if errors.As(err, &ee) {
		r.ErrorIsEnv = true
	} else {
		r.ErrorIsCheck = true
	}
	return r
}
