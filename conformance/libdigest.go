package conformance

import (
	"strings"

	"github.com/octant-kv/octant/harness"
	"github.com/octant-kv/octant/internal/provenance"
)

// libraryDigest is the SHA-256 a certificate records for l: of the library file, or for a Lib run
// by an adapter (a host: or torch: spec) of the adapter's source file (the spec's path before
// its options).
func libraryDigest(l *harness.Lib) (string, error) {
	if l.Worker == nil {
		return provenance.FileSHA256(l.Path)
	}
	_, rest, _ := strings.Cut(l.Path, ":")
	path, _, _ := strings.Cut(rest, "?")
	return provenance.FileSHA256(path)
}
