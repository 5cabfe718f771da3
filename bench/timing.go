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
	if f == nil || f.b == nil {
		return nil
	}
	half := f.b.Len / 2
	if err := f.d.CopyD2D(f.b.Ptr+uintptr(half), f.b.Ptr, uint64(half)); err != nil {
		return err
	}
	return f.d.Sync()
}

// Free releases the scratch.
func (f *Flusher) Free() {
	if f != nil && f.b != nil {
		f.b.Free()
	}
}

// TimeCase runs warm-up iterations, then reps iterations each timed by the host clock around the
// enqueue and the sync (the L2 flushed before each, untimed, when fl is not nil), then reps
// iterations enqueued back to back with one sync (the "stream" time, per iteration).
func TimeCase(d *kernels.Device, c *Case, reps, warmup int, fl *Flusher) (per Timing, streamMS float64, err error) {
	for range warmup {
		if err := c.Enqueue(d); err != nil {
			return per, 0, err
		}
		if err := d.Sync(); err != nil {
			return per, 0, fmt.Errorf("spec %s: warm-up: %w", c.Spec.Name, err)
		}
	}
	samples := make([]time.Duration, 0, reps)
	for range reps {
		if err := fl.Flush(); err != nil {
			return per, 0, fmt.Errorf("L2 flush: %w", err)
		}
		t0 := time.Now()
		if err := c.Enqueue(d); err != nil {
			return per, 0, err
		}
		if err := d.Sync(); err != nil {
			return per, 0, fmt.Errorf("spec %s: %w", c.Spec.Name, err)
		}
		samples = append(samples, time.Since(t0))
	}
	t0 := time.Now()
	for range reps {
		if err := c.Enqueue(d); err != nil {
			return per, 0, err
		}
	}
	if err := d.Sync(); err != nil {
		return per, 0, fmt.Errorf("spec %s: %w", c.Spec.Name, err)
	}
	streamMS = float64(time.Since(t0).Nanoseconds()) / 1e6 / float64(max(reps, 1))
	return Summarise(samples), streamMS, nil
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
