package harness

import (
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/octant-kv/octant/kernels"
	"github.com/octant-kv/octant/kernels/worker"
)

// OpenOptions configure OpenWith for a spec that starts a worker (host:, torch:); a library path
// ignores them. The judge reads no environment: the caller passes the interpreter and the timeout
// (internal/settings: OCTANT_PYTHON, OCTANT_WORKER_TIMEOUT).
type OpenOptions struct {
	// Python is the interpreter that runs the worker ("": python3).
	Python string
	// Timeout is how long the worker may take over one request before it counts as hung and is
	// killed (0: worker.DefaultTimeout).
	Timeout time.Duration
	// ArenaBytes is the worker's device memory (0: WorkerArenaBytes).
	ArenaBytes uint64
}

// WorkerArenaBytes is a worker's device memory when OpenOptions leaves it 0: room for the pool a
// fuzz target or the conformance runner keeps (PoolBytes) and for the buffers of the calls judged
// at once beside it, as a C library's allocator has. A host-mode arena is a memory map whose
// pages are taken only when written.
const WorkerArenaBytes = 2*PoolBytes + 1<<30

// The schemes of a spec that runs the kernels in a worker: MODE:ADAPTER.py[?k=v&...], MODE the
// worker's mode (kernels/worker, Options.Mode).
var workerSchemes = []string{"host", "torch"}

// workerSpec is a spec's worker scheme, adapter path and options; ok is false for a spec that is
// a library path.
func workerSpec(spec string) (mode, adapter string, opts map[string]string, ok bool, err error) {
	for _, s := range workerSchemes {
		rest, found := strings.CutPrefix(spec, s+":")
		if !found {
			continue
		}
		adapter, query, _ := strings.Cut(rest, "?")
		if adapter == "" {
			return "", "", nil, true, fmt.Errorf("spec %q: expected %s:ADAPTER.py[?k=v&...], the path of an adapter after %q", spec, s, s+":")
		}
		vals, err := url.ParseQuery(query)
		if err != nil {
			return "", "", nil, true, fmt.Errorf("spec %q: the options %q: %v; expected k=v pairs joined by &", spec, query, err)
		}
		opts = map[string]string{}
		keys := make([]string, 0, len(vals))
		for k := range vals {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if len(vals[k]) != 1 {
				return "", "", nil, true, fmt.Errorf("spec %q: option %q given %d times, expected once", spec, k, len(vals[k]))
			}
			opts[k] = vals[k][0]
		}
		return s, adapter, opts, true, nil
	}
	return "", "", nil, false, nil
}

// torchDevice takes a torch: spec's device option out of opts (the worker's, not the adapter's):
// "cpu", "cuda" or "cuda:N" (HIP builds of torch name their GPUs cuda too), or "" when absent
// (the worker's default: cuda when torch sees one, else cpu).
func torchDevice(spec string, opts map[string]string) (string, error) {
	d, ok := opts["device"]
	if !ok {
		return "", nil
	}
	delete(opts, "device")
	if !torchDevices.MatchString(d) {
		return "", fmt.Errorf("spec %q: device=%q: expected cpu, cuda or cuda:N (the torch device of the worker's arena)", spec, d)
	}
	return d, nil
}

var torchDevices = regexp.MustCompile(`^(cpu|cuda(:[0-9]+)?)$`)

// OpenWith opens what spec names and its device 0, and lists its tiers: a kernel library's path
// (as Open), or host:ADAPTER.py[?k=v&...] (torch:...) for a worker process (kernels/worker) in
// host (torch) mode whose adapter runs the ops, the k=v pairs handed to the adapter's setup
// (docs/adapters.md) but for torch mode's device=, the torch device of the worker's arena. Lib.Path is spec verbatim, so that a reproducer's replay line names it.
func OpenWith(spec string, o OpenOptions) (*Lib, error) {
	mode, adapter, opts, ok, err := workerSpec(spec)
	if err != nil {
		return nil, err
	}
	if !ok {
		return openLibrary(spec)
	}
	if o.ArenaBytes == 0 {
		o.ArenaBytes = WorkerArenaBytes
	}
	device := ""
	if mode == "torch" {
		if device, err = torchDevice(spec, opts); err != nil {
			return nil, err
		}
	}
	b, err := worker.Open(worker.Options{Python: o.Python, Mode: mode, Device: device, Adapter: adapter, AdapterOptions: opts,
		Timeout: o.Timeout, ArenaBytes: o.ArenaBytes})
	if err != nil {
		return nil, err
	}
	d, err := kernels.NewDevice(b)
	if err != nil {
		b.Close()
		return nil, err
	}
	tiers, err := d.Tiers()
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("listing the tiers of %s: %w", spec, err)
	}
	decl, err := ParseDeclaration(b.Declaration())
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("%s: %w", spec, err)
	}
	return &Lib{Path: spec, Worker: b, Dev: d, Tiers: tiers, Decl: decl}, nil
}

// WorkerSpec splits a spec that starts a worker (host:ADAPTER.py?k=v, torch:...) into its mode,
// the adapter's path and its options; ok is false for a library path (and err nil). A malformed
// worker spec is an error saying what was expected.
func WorkerSpec(spec string) (mode, adapter string, opts map[string]string, ok bool, err error) {
	return workerSpec(spec)
}
