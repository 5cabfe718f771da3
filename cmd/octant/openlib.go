package main

import (
	"github.com/octant-kv/octant/harness"
	"github.com/octant-kv/octant/internal/settings"
)

// openLib opens a --lib value: a kernel library's path, or a worker spec (host:ADAPTER.py?k=v),
// whose interpreter and timeout come from the environment (settings: OCTANT_PYTHON,
// OCTANT_WORKER_TIMEOUT).
func openLib(spec string) (*harness.Lib, error) {
	s, err := settings.FromEnv()
	if err != nil {
		return nil, err
	}
	return harness.OpenWith(spec, harness.OpenOptions{Python: s.Python, Timeout: s.WorkerTimeout})
}
