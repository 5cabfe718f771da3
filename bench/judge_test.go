package bench

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/octant-kv/octant/arch"
	"github.com/octant-kv/octant/harness"
	"github.com/octant-kv/octant/internal/settings"
	"github.com/octant-kv/octant/internal/settings/settingstest"
	"github.com/octant-kv/octant/kernels"
	"github.com/octant-kv/octant/oracle"
)

// emuDevice opens OCTANT_LIB's device 0, or this tree's emulator library (make emu) when
// OCTANT_LIB is not set, or skips.
func emuDevice(t *testing.T) *kernels.Device {
	t.Helper()
	lib := settingstest.Get(t).Lib
	if lib == "" {
		lib = "../build/liboctave_emu.so"
		if _, err := os.Stat(lib); err != nil {
			t.Skipf("%s not set and no %s (make emu): %v", settings.LibEnv, lib, err)
		}
	}
	return openDeviceOf(t, lib)
}

// tierNamed is d's tier of that name, or skips.
func tierNamed(t *testing.T, d *kernels.Device, name arch.TierName) kernels.TierDesc {
	t.Helper()
	ts, err := d.Tiers()
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range ts {
		if x.Name == name {
			return x
		}
	}
	t.Skipf("the device offers no tier %q (tiers %v)", name, ts)
	return kernels.TierDesc{}
}

// testConfig is a run of the tiny decode spec, one timed iteration, no HBM copy or L2 flush.
func testConfig(tiers ...kernels.TierDesc) Config {
	return Config{Options: Options{Fmt: oracle.MustFormat(oracle.K3V4, 256, 64), BlockSize: 16, MaxRows: 128, Distinct: 300, Seed: 3, Reps: 1},
		Specs: []Spec{{Name: "tiny", Reqs: 1, Tokens: 2048, QPerReq: 1, KVHeads: 1, G: 6}}, Splits: []int{0}, Tiers: tiers}
}

// TestRunWrongTierHasNoTime: a tier whose output is wrong has no speed. The wrong tier here is the
// device's portable tier as the library describes it (name and declared profile dot4-int8q) but
// running another tier's arithmetic (the mma tier's int8-row K): its output is finite, non-zero
// and even within the contract's distance of exact attention, and more than ten times the
// declared profile's bound from that profile's model. The one judge fails it before it is timed:
// its result says FAILED with the verdict's reason and has no time, and the run's check fails;
// the correct tier beside it is judged, then timed.
func TestRunWrongTierHasNoTime(t *testing.T) {
	d := emuDevice(t)
	good := tierNamed(t, d, "wmma-model")
	wrong := tierNamed(t, d, "portable")
	wrong.Tier = tierNamed(t, d, "mma-model").Tier
	cfg := testConfig(wrong, good)
	cfg.Progress = t.Logf
	rep, err := Run(context.Background(), d, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 2 {
		t.Fatalf("%d results, expected 2 (one per tier): %+v", len(rep.Results), rep.Results)
	}
	w, g := rep.Results[0], rep.Results[1]
	if w.Tier != "portable" || w.Error == "" || w.MedianMS != 0 || w.DeviceMS != 0 || w.StreamMS != 0 || len(w.Timing.SamplesM) != 0 || w.GBps != 0 {
		t.Errorf("the wrong tier: error %q, host median %g ms, device median %g ms, stream %g ms, %d samples, %g GB/s: expected a failed result with no time",
			w.Error, w.MedianMS, w.DeviceMS, w.StreamMS, len(w.Timing.SamplesM), w.GBps)
	}
	if !strings.HasPrefix(w.Error, "FAILED: ") || !strings.Contains(w.Error, "bound") || w.Verdict != "Fail" || !w.ErrorIsCheck {
		t.Errorf("the wrong tier: verdict %q, error %q: expected FAILED with the judge's reason, a failed check", w.Verdict, w.Error)
	}
	if g.Tier != "wmma-model" || g.Error != "" || g.DeviceMS <= 0 || g.Verdict == "Fail" || g.Verdict == "" || g.JudgeS <= 0 {
		t.Errorf("the correct tier: %+v: expected judged (Pass or QualityWarning), then timed", g)
	}
	if env, check := rep.Failed(); env || !check {
		t.Errorf("Failed() = %v, %v: expected a failed check", env, check)
	}
	t.Logf("wrong tier: %s", w.Error)
}

// TestRunJudgeThenTime checks the step between judge and timer with fake judges on the device:
// a tier the judge fails is not timed; a tier whose timed output differs from the output the judge
// saw fails (what was timed is not what was judged); a judge that cannot run fails every tier of
// the setup; a tier the judge returns no verdict for fails.
func TestRunJudgeThenTime(t *testing.T) {
	d := emuDevice(t)
	pt := tierNamed(t, d, "portable")
	other := pt
	other.Name = "portable-again"
	var judged int
	cfg := testConfig(pt, other)
	cfg.Judge = func(d *kernels.Device, c *Case, o Options, tiers []kernels.TierDesc) (Judgement, error) {
		judged++
		j, err := Judge(d, c, o, tiers[:1])
		if err != nil {
			return j, err
		}
		v := j.Verdicts[string(pt.Name)]
		v.Impl, v.Status, v.Err = string(other.Name), harness.Fail, errors.New("a fake Fail")
		j.Verdicts[string(other.Name)] = v
		return j, nil
	}
	rep, err := Run(context.Background(), d, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if judged != 1 || len(rep.Results) != 2 {
		t.Fatalf("judged %d times, %d results: expected one judgement of the setup, 2 results", judged, len(rep.Results))
	}
	if r := rep.Results[0]; r.Error != "" || r.DeviceMS <= 0 || r.Verdict != "Pass" {
		t.Errorf("the tier judged Pass: %+v: expected timed", r)
	}
	if r := rep.Results[1]; !strings.HasPrefix(r.Error, "FAILED: ") || !strings.Contains(r.Error, "a fake Fail") || r.DeviceMS != 0 || len(r.DeviceTiming.SamplesM) != 0 {
		t.Errorf("the tier judged Fail: error %q, device median %g: expected FAILED with the verdict's reason, no time", r.Error, r.DeviceMS)
	}

	// The judged output is not what the timed calls write.
	cfg = testConfig(pt)
	cfg.Judge = func(d *kernels.Device, c *Case, o Options, tiers []kernels.TierDesc) (Judgement, error) {
		j, err := Judge(d, c, o, tiers)
		if err == nil {
			j.Outputs[string(pt.Name)][7] ^= 0x01 // fp16 value 3's high byte
		}
		return j, err
	}
	rep, err = Run(context.Background(), d, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r := rep.Results[0]; !strings.Contains(r.Error, "the timed output differs from the judged output at row 0 head 0 dim 3") || r.DeviceMS != 0 {
		t.Errorf("timed output unlike the judged one: error %q, device median %g", r.Error, r.DeviceMS)
	}

	// A judge that cannot run, and one that leaves a tier out.
	for _, c := range []struct {
		judge JudgeFunc
		want  string
	}{
		{func(*kernels.Device, *Case, Options, []kernels.TierDesc) (Judgement, error) {
			return Judgement{}, errors.New("cannot read the cache")
		}, "judging: cannot read the cache"},
		{func(*kernels.Device, *Case, Options, []kernels.TierDesc) (Judgement, error) {
			return Judgement{Verdicts: map[string]harness.Verdict{}}, nil
		}, "the judge returned no verdict for it"},
	} {
		cfg = testConfig(pt)
		cfg.Judge = c.judge
		if rep, err = Run(context.Background(), d, cfg); err != nil {
			t.Fatal(err)
		}
		if r := rep.Results[0]; !strings.HasPrefix(r.Error, "FAILED: ") || !strings.Contains(r.Error, c.want) || r.DeviceMS != 0 {
			t.Errorf("error %q, device median %g: expected FAILED, %q, no time", r.Error, r.DeviceMS, c.want)
		}
	}
}

// TestCallsAreTheTimedCalls: the judge's calls of a setup are the timed calls: a decode spec of
// two calls gives two DecodeCalls with the same rows, num_splits and query_group; a prefill spec
// one PrefillCall with the chunk's own K and V.
func TestCallsAreTheTimedCalls(t *testing.T) {
	d := emuDevice(t)
	o := testConfig().Options
	c, err := Setup(d, specNamed(t, "tinychunk"), 3, o, func(string, ...any) {})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Free()
	calls, err := c.Calls(o)
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 2 || len(c.Args) != 2 {
		t.Fatalf("%d calls for %d decode calls: expected 2 and 2", len(calls), len(c.Args))
	}
	for i, call := range calls {
		dc := call.(*harness.DecodeCall)
		a := c.Args[i]
		if dc.In.NumQ() != int(a.NumQ) || dc.NumSplits != 3 || dc.QueryGroup != int(a.QueryGroup) || dc.PartialStride != int(a.PartialStride) ||
			dc.In.QToKlen[0] != c.HostQToKlen[c.Rows[i].Lo] {
			t.Errorf("call %d: num_q %d, splits %d, query_group %d, partial stride %d; timed: %d, 3, %d, %d", i, dc.In.NumQ(), dc.NumSplits,
				dc.QueryGroup, dc.PartialStride, a.NumQ, a.QueryGroup, a.PartialStride)
		}
	}
	p, err := Setup(d, specNamed(t, "tinypf"), 0, o, func(string, ...any) {})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Free()
	calls, err = p.Calls(o)
	if err != nil {
		t.Fatal(err)
	}
	pc := calls[0].(*harness.PrefillCall)
	if len(calls) != 1 || pc.In.NumTokens != 136 || pc.In.K[5] != oracle.F16ToF32(p.HostK[5]) || pc.In.V[5] != oracle.F16ToF32(p.HostV[5]) || pc.In.SeqLens[0] != 520 {
		t.Errorf("prefill: %d calls, %d tokens, seq_lens %v", len(calls), pc.In.NumTokens, pc.In.SeqLens)
	}
}

// TestRunWatchdog: a tier's timed calls that outlast TimeoutPerTier are reported with their setup
// (the emulator's calls take milliseconds, far longer than the nanosecond allowed here); a run
// whose context is done stops before its first spec with an error saying so.
func TestRunWatchdog(t *testing.T) {
	d := emuDevice(t)
	cfg := testConfig(tierNamed(t, d, "portable"))
	hung := make(chan string, 4)
	cfg.TimeoutPerTier, cfg.Hung = time.Nanosecond, func(setup string) { hung <- setup }
	if _, err := Run(context.Background(), d, cfg); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-hung:
		if !strings.HasPrefix(s, "spec tiny, num_splits ") || !strings.HasSuffix(s, ", tier portable") {
			t.Errorf("hung setup %q, expected spec tiny's on tier portable", s)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("timed calls longer than TimeoutPerTier were not reported")
	}
	cfg.TimeoutPerTier = time.Hour
	cfg.Hung = func(setup string) { t.Errorf("reported %q under an hour's timeout", setup) }
	if _, err := Run(context.Background(), d, cfg); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rep, err := Run(ctx, d, cfg)
	if err == nil || !strings.Contains(err.Error(), "interrupted after 0 results") || len(rep.Results) != 0 {
		t.Errorf("a cancelled run: %v (%d results), expected it interrupted before its first spec", err, len(rep.Results))
	}
}
