package cases

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/octant-kv/octant/harness"
	"github.com/octant-kv/octant/kernels"
)

// A Python reproducer is a failing call through an adapter written so that it replays without Go
// (docs/adapters.md, "A Python reproducer"): NAME.py beside the JSON reproducer NAME.json, and
// its data NAME.pydata.gz. The script runs the recorded call in its own process through the
// worker's sources (kernels/worker/py/octant_worker/repro.py).

// PythonDataFormat is the data file's format (repro.py's FORMAT).
const PythonDataFormat = 1

// PythonSourcesDir is the directory holding the worker's Python package in this module's source
// tree (kernels/worker/py), or "" when the module root or the directory cannot be found.
func PythonSourcesDir() string {
	root, err := ModuleRoot()
	if err != nil {
		return ""
	}
	d := filepath.Join(root, "kernels", "worker", "py")
	if _, err := os.Stat(filepath.Join(d, "octant_worker", "repro.py")); err != nil {
		return ""
	}
	return d
}

// WritePythonReproducer records the failing verdicts' first implementation of call on l (a Lib
// opened from an adapter spec: l.Worker set) and writes its Python reproducer beside the JSON
// reproducer at jsonPath: it returns the script's path, or "" with no error when l runs no
// adapter or no verdict failed (nothing to write).
func WritePythonReproducer(l *harness.Lib, call harness.Call, vs []harness.Verdict, jsonPath string) (string, error) {
	if l == nil || l.Worker == nil || call == nil {
		return "", nil
	}
	var failed *harness.Verdict
	for i := range vs {
		if vs[i].Failed() {
			failed = &vs[i]
			break
		}
	}
	if failed == nil {
		return "", nil
	}
	rec, err := harness.Record(l, call, failed.Impl)
	if err != nil {
		return "", err
	}
	msg := failed.Err.Error()
	return WritePython(jsonPath, rec, l.Path, PythonSourcesDir(), msg)
}

// WritePython writes the Python reproducer of rec beside jsonPath (NAME.json: NAME.py and
// NAME.pydata.gz) and returns the script's path. spec is the adapter spec the script runs against
// by default, sources the directory holding octant_worker (the script's --sources, or
// OCTANT_WORKER_PY, override it), message the judge's failure.
func WritePython(jsonPath string, rec *harness.Recording, spec, sources, message string) (string, error) {
	base := strings.TrimSuffix(jsonPath, filepath.Ext(jsonPath))
	data, err := pythonData(rec, spec, message)
	if err != nil {
		return "", err
	}
	dataPath := base + ".pydata.gz"
	if err := os.WriteFile(dataPath, data, 0o644); err != nil {
		return "", err
	}
	script := base + ".py"
	if err := os.WriteFile(script, []byte(pythonScript(rec, spec, sources, filepath.Base(dataPath), filepath.Base(jsonPath), message)), 0o755); err != nil {
		return "", err
	}
	return script, nil
}

// pythonData is the data file: gzip'd JSON, bytes as base64, float arrays as base64 of
// little-endian float64 (NaN and ±Inf included), a mask as a string of 0 and 1.
func pythonData(rec *harness.Recording, spec, message string) ([]byte, error) {
	e := rec.Expect
	type buf struct {
		Name  string `json:"name"`
		Addr  uint64 `json:"addr"`
		Data  []byte `json:"data"`
		Input bool   `json:"input"`
	}
	type slot struct {
		Offset    int    `json:"offset"`
		DataBytes int    `json:"data_bytes"`
		SlotBytes int    `json:"slot_bytes"`
		Name      string `json:"name"`
	}
	bufs := make([]buf, len(rec.Buffers))
	for i, b := range rec.Buffers {
		bufs[i] = buf{b.Name, b.Addr, b.Data, b.Input}
	}
	slots := make([]slot, len(e.Slots))
	for i, s := range e.Slots {
		slots[i] = slot{s.Offset, s.DataBytes, s.SlotBytes, s.Name}
	}
	judged := make([]byte, len(e.Judged))
	for i, j := range e.Judged {
		judged[i] = '0'
		if j {
			judged[i] = '1'
		}
	}
	want := make([]byte, 2*len(e.Want))
	for i, w := range e.Want {
		binary.LittleEndian.PutUint16(want[2*i:], w)
	}
	doc := map[string]any{
		"format": PythonDataFormat, "op": rec.Op, "impl": rec.Impl, "spec": spec, "message": message,
		"struct": rec.Struct, "buffers": bufs, "repeat": rec.Repeat,
		"expect": map[string]any{
			"kind": e.Kind, "buffer": e.Buffer, "dtype": string(e.Dtype),
			"rows": e.Rows, "row_elems": e.RowElems, "stride": e.Stride, "heads": e.Heads, "head_stride": e.HeadStride,
			"model": kernels.Float64Bytes(e.Model), "bound": kernels.Float64Bytes(e.Bound), "exact": kernels.Float64Bytes(e.Exact),
			"judged": string(judged), "zero_rows": e.ZeroRows, "overflow": jsonFloat(e.Overflow), "nan_fails": e.NaNFails,
			"contract_rel_l2": e.ContractRelL2, "round_u": e.RoundU, "round_abs": e.RoundAbs,
			"profile": e.Profile, "bound_why": e.BoundWhy, "want": want, "want_cache": e.WantCache, "slots": slots,
		},
	}
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	enc := json.NewEncoder(zw)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("encoding the Python reproducer's data: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// jsonFloat is x, or 0 for a value JSON cannot hold (the overflow threshold of a dtype that has
// none: no overflow rule).
func jsonFloat(x float64) float64 {
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return 0
	}
	return x
}

// pythonScript is the script: a docstring saying what failed and how to run it, the recorded
// spec and sources, and a call of octant_worker.repro.main on the data file beside it.
func pythonScript(rec *harness.Recording, spec, sources, dataFile, jsonFile, message string) string {
	first, _, _ := strings.Cut(message, "\n")
	doc := fmt.Sprintf(`Octant's Python reproducer: %s on implementation %s of
    %s
failed (the JSON reproducer %s replays it with octant replay):
    %s

It replays the call in this process, without Go: it loads the adapter as Octant's worker does, places
the recorded buffers in an arena between canaries, runs the op and judges the output as Octant's judge
did, against the oracle's values recorded in %s (docs/adapters.md, "A Python reproducer").

    python3 %s [--spec MODE:ADAPTER.py[?k=v&...]] [--sources DIR] [-q]

Run it with the adapter's interpreter. --spec replays against another adapter (default: the one
above); --sources (or OCTANT_WORKER_PY) is the directory holding Octant's octant_worker package
(kernels/worker/py in Octant's source tree; default: the one recorded below). Exit status: 0 the call
passes (the failure no longer reproduces), 1 it fails (printed), 2 the replay cannot run.`,
		rec.Op, rec.Impl, spec, jsonFile, first, dataFile, strings.TrimSuffix(dataFile, ".pydata.gz")+".py")
	return fmt.Sprintf(`#!/usr/bin/env python3
r"""%s
"""
import os
import sys

SPEC = %s
SOURCES = %s
DATA = %s


def sources(argv):
    for i, a in enumerate(argv):
        if a == "--sources" and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith("--sources="):
            return a[len("--sources="):]
    return os.environ.get("OCTANT_WORKER_PY") or SOURCES


if __name__ == "__main__":
    src = sources(sys.argv[1:])
    if not src or not os.path.isfile(os.path.join(src, "octant_worker", "repro.py")):
        sys.stderr.write("cannot replay: no octant_worker package in %%r: pass --sources DIR (or set OCTANT_WORKER_PY) "
                         "to the directory holding it (kernels/worker/py in Octant's source tree)\n" %% (src,))
        sys.exit(2)
    sys.path.insert(0, src)
    from octant_worker import repro

    args = sys.argv[1:]
    if not any(a == "--spec" or a.startswith("--spec=") for a in args):
        args = ["--spec", SPEC] + args
    sys.exit(repro.main(os.path.join(os.path.dirname(os.path.abspath(__file__)), DATA), args))
`, strings.ReplaceAll(doc, `"""`, `'''`), pyString(spec), pyString(sources), pyString(dataFile))
}

// pyString is s as a Python string literal (a JSON string is one).
func pyString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
