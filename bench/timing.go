package bench

import (
	"fmt"
	"slices"
	"time"

	"github.com/octant-kv/octant/kernels"
)

// Timing summarises timed samples.
type Timing struct {
	MedianMS float64   `json:"median_ms"`
	MinMS    float64   `json:"min_ms"`
	SamplesM []float64 `json:"samples_ms"`
}

// Summarise returns the median and min of samples, in milliseconds, and the samples themselves.
func Summarise(samples []time.Duration) Timing {
	ms := make([]float64, len(samples))
	for i, s := range samples {
		ms[i] = float64(s.Nanoseconds()) / 1e6
	}
	st := Timing{SamplesM: ms}
	if len(ms) == 0 {
		return st
	}
	sorted := slices.Clone(ms)
	slices.Sort(sorted)
	n := len(sorted)
	st.MinMS = sorted[0]
	if n%2 == 1 {
		st.MedianMS = sorted[n/2]
	} else {
		st.MedianMS = (sorted[n/2-1] + sorted[n/2]) / 2
	}
	return st
}

// Flusher evicts the GPU caches between timed calls by copying one half of a scratch buffer onto
// the other. A nil Flusher flushes nothing.
type Flusher struct {
	d *kernels.Device
	b *kernels.Buffer
}

// NewFlusher allocates the scratch of n bytes on d.
func NewFlusher(d *kernels.Device, n int64) (*Flusher, error) {
	b, err := d.Alloc(int(n), 0x33)
	if err != nil {
		d.Sync()
		d.Sync()
		return nil, EnvError{fmt.Errorf("cannot allocate the L2 flush scratch of %d bytes (%s): %v", n, HumanBytes(n), err)}
	}
	return &Flusher{d: d, b: b}, nil
}

// Flush copies half of the scratch onto the other half and syncs.
func (f *Flusher) Flush() error {
	if err := f.Enqueue(); err != nil || f == nil {
		return err
	}
	return f.d.Sync()
}

// Enqueue enqueues the copy of Flush and returns without waiting for it: the device then stays
// busy while the host enqueues what follows, as with the framework's flush before its events.
func (f *Flusher) Enqueue() error {
	if f == nil || f.b == nil {
		return nil
	}
	half := f.b.Len / 2
	return f.d.CopyD2D(f.b.Ptr+uintptr(half), f.b.Ptr, uint64(half))
}

// Free releases the scratch.
func (f *Flusher) Free() {
	if f != nil && f.b != nil {
		f.b.Free()
	}
}

// Times are what one case measured: host, device and stream.
type Times struct {
	Host     Timing  // the host clock around the enqueue and the sync
	Device   Timing  // the device timer (events) around the enqueue
	StreamMS float64 // reps enqueued back to back with one sync, per iteration
}

// TimeCase runs warm-up iterations, then reps iterations each timed by the host clock around the
// enqueue and the sync (the L2 flushed before each, untimed, when fl is not nil), then reps
// iterations each timed by the device timer (octave_timer_start/stop: CUDA/HIP events) around the
// enqueue, the flush enqueued just before the start mark so that the device is busy while the
// host enqueues (as scripts/bench_sdpa.py times torch's kernels), then reps iterations enqueued
// back to back with one sync (the "stream" time, per iteration).
func TimeCase(d *kernels.Device, c *Case, reps, warmup int, fl *Flusher) (Times, error) {
	var t Times
	per, err := timeHost(d, c, reps, warmup, fl)
	if err != nil {
		return t, err
	}
	dev, err := timeDevice(d, c, reps, fl)
	if err != nil {
		return t, err
	}
	stream, err := timeStream(d, c, reps)
	if err != nil {
		return t, err
	}
	return Times{Host: per, Device: dev, StreamMS: stream}, nil
}

// timeDevice times reps iterations with the device timer, each after an enqueued (not awaited)
// flush.
func timeDevice(d *kernels.Device, c *Case, reps int, fl *Flusher) (Timing, error) {
	samples := make([]time.Duration, 0, reps)
	for range reps {
		if err := fl.Enqueue(); err != nil {
			return Timing{}, fmt.Errorf("L2 flush: %w", err)
		}
		if err := d.TimerStart(); err != nil {
			return Timing{}, err
		}
		if err := c.Enqueue(d); err != nil {
			if _, serr := d.TimerStop(); serr != nil {
				return Timing{}, fmt.Errorf("%w (and stopping the timer: %v)", err, serr)
			}
			return Timing{}, err
		}
		el, err := d.TimerStop()
		if err != nil {
			return Timing{}, fmt.Errorf("spec %s: %w", c.Spec.Name, err)
		}
		samples = append(samples, el)
	}
	return Summarise(samples), nil
}

// timeHost runs the warm-up, then times reps iterations by the host clock, each after a flush.
func timeHost(d *kernels.Device, c *Case, reps, warmup int, fl *Flusher) (per Timing, err error) {
	for range warmup {
		if err := c.Enqueue(d); err != nil {
			return per, err
		}
		if err := d.Sync(); err != nil {
			return per, fmt.Errorf("spec %s: warm-up: %w", c.Spec.Name, err)
		}
	}
	samples := make([]time.Duration, 0, reps)
	for range reps {
		if err := fl.Flush(); err != nil {
			return per, fmt.Errorf("L2 flush: %w", err)
		}
		t0 := time.Now()
		if err := c.Enqueue(d); err != nil {
			return per, err
		}
		if err := d.Sync(); err != nil {
			return per, fmt.Errorf("spec %s: %w", c.Spec.Name, err)
		}
		samples = append(samples, time.Since(t0))
	}
	return Summarise(samples), nil
}

// timeStream is the mean time per iteration of reps iterations enqueued back to back.
func timeStream(d *kernels.Device, c *Case, reps int) (float64, error) {
	t0 := time.Now()
	for range reps {
		if err := c.Enqueue(d); err != nil {
			return 0, err
		}
	}
	if err := d.Sync(); err != nil {
		return 0, fmt.Errorf("spec %s: %w", c.Spec.Name, err)
	}
	return float64(time.Since(t0).Nanoseconds()) / 1e6 / float64(max(reps, 1)), nil
}

// CopyResult is the device-to-device copy bandwidth measurement.
type CopyResult struct {
	Bytes      int64   `json:"copy_bytes"`
	MovedBytes int64   `json:"moved_bytes"` // read + write
	MedianMS   float64 `json:"median_ms"`
	MinMS      float64 `json:"min_ms"`
	GBps       float64 `json:"gbps"` // moved bytes / median time, 1e9 B/s
	Note       string  `json:"note,omitempty"`
}

// MeasureCopy times octave_copy_d2d of n bytes (halving n down to 64 MiB when it cannot be
// allocated), read + write counted.
func MeasureCopy(d *kernels.Device, n int64, reps, warmup int) (CopyResult, error) {
	var res CopyResult
	var src, dst *kernels.Buffer
	for {
		var err error
		src, err = d.Alloc(int(n), 0x5A)
		if err == nil {
			dst, err = d.Alloc(int(n), 0)
			if err != nil {
				src.Free()
			}
		}
		if err == nil {
			break
		}
		d.Sync()
		d.Sync()
		if n/2 < 64<<20 {
			return res, EnvError{fmt.Errorf("copy bandwidth: cannot allocate two buffers of %d bytes (%s): %w", n, HumanBytes(n), err)}
		}
		res.Note = fmt.Sprintf("two buffers of %s could not be allocated; used %s", HumanBytes(n), HumanBytes(n/2))
		n /= 2
	}
	defer src.Free()
	defer dst.Free()
	samples := make([]time.Duration, 0, reps)
	for i := range warmup + reps {
		t0 := time.Now()
		if err := d.CopyD2D(dst.Ptr, src.Ptr, uint64(n)); err != nil {
			return res, err
		}
		if err := d.Sync(); err != nil {
			return res, err
		}
		if i >= warmup {
			samples = append(samples, time.Since(t0))
		}
	}
	st := Summarise(samples)
	res.Bytes, res.MovedBytes, res.MedianMS, res.MinMS = n, 2*n, st.MedianMS, st.MinMS
	if st.MedianMS > 0 {
		res.GBps = float64(res.MovedBytes) / (st.MedianMS * 1e6)
	}
	return res, nil
}

// SyncFloor is the median host time of a sync with nothing queued.
func SyncFloor(d *kernels.Device, reps int) (float64, error) {
	samples := make([]time.Duration, 0, reps)
	for range reps {
		t0 := time.Now()
		if err := d.Sync(); err != nil {
			return 0, err
		}
		samples = append(samples, time.Since(t0))
	}
	return Summarise(samples).MedianMS, nil
}
