package worker

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/octant-kv/octant/kernels"
)

// TestAdapterDocExample: the worked example of docs/adapters.md is testdata/querymaps_adapter.py,
// byte for byte, so that the page shows an adapter that runs.
func TestAdapterDocExample(t *testing.T) {
	docExample(t, "## A worked example\n", "querymaps_adapter.py")
}

// TestCallablesDocExample: the worked example of docs/adapters.md's "Plain Python callables" is
// testdata/rotate_callables.py, byte for byte (harness's TestCallablesExample runs it).
func TestCallablesDocExample(t *testing.T) {
	docExample(t, "### Worked example: a rotate in torch\n", "rotate_callables.py")
}

// docExample checks that the first python code block after heading in docs/adapters.md is the
// testdata file name.
func docExample(t *testing.T, heading, name string) {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "adapters.md"))
	if err != nil {
		t.Fatal(err)
	}
	file, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), heading)
	if !ok {
		t.Fatalf("docs/adapters.md has no section %q", strings.TrimSpace(heading))
	}
	_, rest, ok = strings.Cut(rest, "```python\n")
	block, _, closed := strings.Cut(rest, "```")
	if !ok || !closed {
		t.Fatalf("docs/adapters.md, %q: no python code block", strings.TrimSpace(heading))
	}
	if block != string(file) {
		t.Errorf("the worked example of docs/adapters.md differs from testdata/%s:\n%s", name, block)
	}
}

// TestExampleAdapter: the worked example computes the query maps of a batch with a padding token
// and an empty request, and declares what it offers.
func TestExampleAdapter(t *testing.T) {
	b := openTest(t, func(o *Options) { o.Adapter = filepath.Join("testdata", "querymaps_adapter.py") })
	d, err := kernels.NewDevice(b)
	if err != nil {
		t.Fatal(err)
	}
	if d.Info.Name != "query maps in Python" {
		t.Errorf("Info.Name %q, expected the declaration's", d.Info.Name)
	}
	qsl, seq := []int32{0, 2, 2, 5}, []int32{10, 3, 7}
	bufs := &kernels.BufferSet{Dev: d}
	defer bufs.Free()
	q := bufs.Input("query_start_loc", kernels.Int32Bytes(qsl))
	s := bufs.Input("seq_lens", kernels.Int32Bytes(seq))
	r := bufs.Output("q_to_req", 4*6, 0xFF)
	k := bufs.Output("q_to_klen", 4*6, 0xFF)
	must(t, bufs.Err(), d.QueryMaps(kernels.QueryMapsArgs{QueryStartLoc: q.Ptr, SeqLens: s.Ptr, QToReq: r.Ptr, QToK: k.Ptr, NumReqs: 3, NumQ: 6}),
		d.Sync(), bufs.Verify("query_maps"))
	rb, err := r.ReadAll()
	must(t, err)
	kb, err := k.ReadAll()
	must(t, err)
	// Tokens 0, 1: request 0 (seq 10, 2 new: klen 9, 10); request 1 is empty; 2..4: request 2
	// (seq 7, 3 new: 5, 6, 7); token 5 is padding (request 3 = num_reqs, klen 0).
	if got, want := kernels.BytesInt32(rb), []int32{0, 0, 2, 2, 2, 3}; !slices.Equal(got, want) {
		t.Errorf("q_to_req %v, expected %v", got, want)
	}
	if got, want := kernels.BytesInt32(kb), []int32{9, 10, 5, 6, 7, 0}; !slices.Equal(got, want) {
		t.Errorf("q_to_klen %v, expected %v", got, want)
	}
}
