package worker

import (
	"encoding/json"
	"os/exec"
	"reflect"
	"testing"

	"github.com/octant-kv/octant/kernels"
)

// pyLayout is one struct of py/octant_worker/abi.py as the layout script prints it.
type pyLayout struct {
	Code   uint32           `json:"code"`
	CName  string           `json:"cname"`
	Size   uintptr          `json:"size"`
	Fields [][3]interface{} `json:"fields"` // name, offset, size
}

// layoutScript prints abi.py's layouts: op -> {code, cname, size, fields}.
const layoutScript = `import json, sys
sys.path.insert(0, "py")
from octant_worker import abi
print(json.dumps({l.op: {"code": c, "cname": l.cname, "size": l.size, "fields": l.offsets()} for c, l in abi.OPS.items()}))`

// TestStructLayouts: every field of the Python side's struct layouts lies at the offset and has
// the size of the Go struct's field in the same position (kernels/abi.go, which mirrors
// octave_capi.h), every struct has the Go size, and the op codes are the Go side's: the bridge
// decodes the bytes Go sends verbatim.
func TestStructLayouts(t *testing.T) {
	out, err := exec.Command(DefaultPython, "-c", layoutScript).Output()
	if err != nil {
		t.Fatalf("%s printing abi.py's layouts: %v", DefaultPython, err)
	}
	var py map[string]pyLayout
	if err := json.Unmarshal(out, &py); err != nil {
		t.Fatalf("abi.py's layouts %.200q: %v", out, err)
	}
	for _, c := range []struct {
		op   string
		code uint32
		v    any
	}{
		{"store", opStore, kernels.StoreArgs{}}, {"rotate", opRotate, kernels.RotateArgs{}}, {"decode", opDecode, kernels.DecodeArgs{}},
		{"reduce", opReduce, kernels.ReduceArgs{}}, {"prefill", opPrefill, kernels.PrefillArgs{}}, {"query_maps", opQueryMaps, kernels.QueryMapsArgs{}},
	} {
		l, ok := py[c.op]
		if !ok {
			t.Errorf("abi.py has no layout of %s", c.op)
			continue
		}
		ty := reflect.TypeOf(c.v)
		if l.Code != c.code || l.Size != ty.Size() || len(l.Fields) != ty.NumField() {
			t.Errorf("%s (%s): op code %d, %d bytes, %d fields in abi.py; expected op code %d, %d bytes, %d fields (%v)",
				c.op, l.CName, l.Code, l.Size, len(l.Fields), c.code, ty.Size(), ty.NumField(), ty)
			continue
		}
		for i, f := range l.Fields {
			g := ty.Field(i)
			off, size := uintptr(f[1].(float64)), uintptr(f[2].(float64))
			if off != g.Offset || size != g.Type.Size() {
				t.Errorf("%s.%s: offset %d, %d bytes in abi.py; %v.%s is at %d, %d bytes", l.CName, f[0], off, size, ty, g.Name, g.Offset, g.Type.Size())
			}
		}
	}
}
