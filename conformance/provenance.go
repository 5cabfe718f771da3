package conformance

import (
	"fmt"
	"os"
	"sort"

	"github.com/octant-kv/octant/harness"
	"github.com/octant-kv/octant/internal/provenance"
)

// Adapter is what a certificate of kernels run through a worker's adapter (a --lib spec such as
// host:/abs/capi.py?lib=/abs/liboctave_emu.so, docs/adapters.md) records of them: the spec as
// given, the adapter file and its SHA-256, and the SHA-256 of every option value that names an
// existing file (capi.py's lib=, a vLLM extension's path): the files that make up what ran.
type Adapter struct {
	Spec   string `json:"spec"`
	Mode   string `json:"mode"`
	File   string `json:"file"`
	SHA256 string `json:"sha256"`
	// Options are the spec's options as given (k=v).
	Options map[string]string `json:"options,omitempty"`
	// OptionFiles are the options whose value is an existing file, with its SHA-256.
	OptionFiles []OptionFile `json:"option_files,omitempty"`
}

// OptionFile is one option of the spec that names a file.
type OptionFile struct {
	Option string `json:"option"`
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

// identify returns what the certificate records of what l opened: a library's SHA-256, or for a
// worker spec the adapter file's SHA-256 and its Adapter record.
func identify(l *harness.Lib) (sum string, a *Adapter, err error) {
	mode, file, opts, ok, err := harness.WorkerSpec(l.Path)
	if err != nil {
		return "", nil, err
	}
	if !ok {
		sum, err = provenance.FileSHA256(l.Path)
		return sum, nil, err
	}
	sum, err = provenance.FileSHA256(file)
	if err != nil {
		return "", nil, fmt.Errorf("hashing the adapter of %s: %w", l.Path, err)
	}
	a = &Adapter{Spec: l.Path, Mode: mode, File: file, SHA256: sum, Options: opts}
	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if st, err := os.Stat(opts[k]); err != nil || !st.Mode().IsRegular() {
			continue
		}
		s, err := provenance.FileSHA256(opts[k])
		if err != nil {
			return "", nil, fmt.Errorf("hashing option %s=%s of %s: %w", k, opts[k], l.Path, err)
		}
		a.OptionFiles = append(a.OptionFiles, OptionFile{Option: k, Path: opts[k], SHA256: s})
	}
	return sum, a, nil
}
