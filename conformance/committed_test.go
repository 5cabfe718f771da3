package conformance

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/octant-kv/octant/cases"
	"github.com/octant-kv/octant/internal/provenance"
	"github.com/octant-kv/octant/kernels"
)

// TestCommittedCertificatesCurrent: every certificate committed under corpus/certificates was
// made from this tree as it is: the same kernel sources (comments aside), the same ABI (runtime
// and model certificates), the same case generator, from a clean tree. A change to any of them
// makes a certificate stale, and this test fails until it is regenerated (docs/conformance.md,
// "Committed certificates").
func TestCommittedCertificatesCurrent(t *testing.T) {
	digest, err := provenance.KernelSourceDigest("../csrc")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("../corpus/certificates/*/certificate.json")
	if len(files) == 0 {
		t.Fatal("no certificate under corpus/certificates")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var c Certificate
		if err := json.Unmarshal(b, &c); err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if c.KernelSources != digest {
			t.Errorf("%s: kernel sources %q, the tree's are %s: stale (the kernels changed since it was made); regenerate it", f, c.KernelSources, digest)
		}
		if c.CaseGen != cases.CaseGenVersion {
			t.Errorf("%s: case generator %q, the tree's is %q: stale; regenerate it", f, c.CaseGen, cases.CaseGenVersion)
		}
		if c.Mode != ModeStatic && c.ABI != kernels.ABIVersion {
			t.Errorf("%s: ABI %d, the tree's is %d: stale; regenerate it", f, c.ABI, kernels.ABIVersion)
		}
		if c.Dirty {
			t.Errorf("%s: made from a dirty tree (commit %s with uncommitted changes): regenerate it from a clean one", f, c.Commit)
		}
		if c.Schema != SchemaVersion || c.VerdictLine == "" {
			t.Errorf("%s: schema %d without a verdict line, the tree writes schema %d with one: regenerate it", f, c.Schema, SchemaVersion)
		}
	}
}
