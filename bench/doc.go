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
// # How (docs/performance.md, "Method")
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
// token) scores per second.
//
// # Judged before timed
//
// A wrong kernel has no speed. Each setup is judged once, before any tier is timed over it, by
// package harness, the one judge ([Judge]: harness.CheckAll over the same calls, [Case.Calls]: the
// same query rows, num_splits, query_group and inputs, the cache read back from the device): every
// element within the tier's declared profile's bound of the oracle's model, the output within the
// contract's distance of exact attention, canaries, inputs and gaps intact, the same bits twice.
// A tier judged Fail is a failed result, "FAILED: " and the verdict's reason, with no time. A tier
// judged Pass or QualityWarning is timed; its timed output must then be the judged output bit for
// bit, its canaries intact and every value finite with no row all zero (CheckOutput). [Result]
// records the verdict and the judge's wall time.
//
// The oracle's side runs on the host and grows with query rows × tokens: measured on a 2-core dev
// VM (CPU seconds, k3v4), per query row of 6 query heads over 100k tokens about 0.7 s per declared
// profile and 0.19 s for exact attention (decode), about the same per chunk token for a prefill. So
// q1s100k and q4s100k judge in seconds, big in about 130 CPU seconds (and about 26 GB of host
// memory per profile: every slot the call reads, decoded), while q2ks100k (2048 rows, once per
// num_splits group) and q2ks100k-pf take about an hour of CPU time each, more than 8 minutes even
// on 16 cores for one tier (docs/performance.md, "Judged before timed").
//
// A failure of the environment (library, device, out of device memory) is an [EnvError]; any
// other failed result is a failed check ([Report.Failed] tells them apart). [WriteTable] prints the
// table `octant bench` shows; the Report marshals to the JSON of `octant bench --json`.
package bench
