// Package bench times the decode tiers (and, for a prefill spec, the prefill tiers) of an Octave
// kernel library on a device, each tier over the same inputs: the work behind `octant bench`,
// usable from Go on its own.
//
// # What it times
//
// One iteration of a [Spec] (a batch shape: requests × sequence length, query tokens per request,
// Hkv, Hq) is the decode call(s) of one tier (octave_decode: split-KV attention and the reduce) over
// a packed cache of the whole batch, then octave_sync; a prefill spec ([Spec].Prefill) is one
// octave_prefill call per iteration: each request's query tokens are a chunk with its own fp16
// K/V, after the packed prefix. Specs with more query tokens per
// request than [Options].MaxRows run as several calls of consecutive rows ([Spec.Calls]), enqueued
// back to back: the time is the whole chunk's. The inputs are never zeros: [Options].Distinct random
// slots (fp16 K/V quantized by the oracle) tiled over every block, a block table that is a random
// permutation of the physical blocks, random fp16 queries, head size [HeadSize], sm_scale 1/16 and
// the default sign patterns.
//
// # How (docs/measurements.md, "Decode benchmark")
//
// Each iteration is timed twice over: [Options].Warmup untimed iterations, then [Options].Reps
// iterations timed by the device timer (octave_timer_start/stop, CUDA/HIP events) around the
// call(s), the L2 flush (a device-to-device copy of [Options].FlushBytes, unless [Options].FlushL2
// is false) enqueued just before the start mark so that the device is busy while the host enqueues
// (how scripts/bench_sdpa.py times torch's kernels: the "device" time), and Reps iterations timed by
// the host clock around the call(s) and the sync, each after a flush that was waited for (the
// "host" time, which adds the launch and sync latency). Medians and mins are reported. "Stream"
// is the mean of Reps iterations enqueued back to back with one sync.
// The sync floor (an empty sync) and the HBM bandwidth (octave_copy_d2d of [Config].CopyBytes, read
// and write counted) are measured in the same run. num_splits "auto" is each tier's own
// ([TierAutoSplits]: [AutoSplitsMMA] on the mma tier, [AutoSplits] on the others) and
// query_group "auto" is [AutoQueryGroup].
//
// # What it reports
//
// [Run] returns a [Report]: per spec and num_splits setting a [Result] with the device, host and
// stream times, bytes read (Σ over requests of Hkv × seq_len × slot bytes: each KV head's slots once
// per request), GB/s = bytes / device median, its fraction of the measured HBM bandwidth, and (query head,
// token) scores per second. Before a result is recorded its output is checked (every value finite,
// no row all zero, no canary overwritten), so a broken decode is a failed result, not a fast one.
// A failure of the environment (library, device, out of device memory) is an [EnvError]; any other
// failed result is a failed check ([Report.Failed] tells them apart). [WriteTable] prints the table
// `octant bench` shows; the Report marshals to the JSON of `octant bench --json`.
package bench
