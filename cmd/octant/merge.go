package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/octant-kv/octant/conformance"
)

// runMerge combines shard certificates (octant conform --cases N --shard i/n) into the certificate
// of the unsharded run (conformance.Merge) and writes it like conform does.
func runMerge(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("merge", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: octant merge OUT SHARD_DIR...\n\nCombines the certificates (SHARD_DIR/certificate.json, or the file itself) of the shards of one\n`octant conform --cases N --shard i/n` run into the certificate of the unsharded run, written to\nOUT (certificate.json, report.md, junit.xml). Shards of different runs are refused; a shard not\ngiven is reported as not run (NOT CERTIFIED). Exit 0 certified, 1 not certified, 2 usage error or\nan unreadable, cut or mismatched shard (docs/conformance.md, \"Shards and merge\").")
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() < 2 {
		fmt.Fprintf(stderr, "octant merge: expected OUT and at least one SHARD_DIR, found %d argument(s)\n", fs.NArg())
		fs.Usage()
		return 2
	}
	out := fs.Arg(0)
	var files []conformance.ShardFile
	for _, d := range fs.Args()[1:] {
		path := d
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			path = filepath.Join(d, "certificate.json")
		}
		c, err := conformance.ReadCertificate(path)
		if err != nil {
			fmt.Fprintf(stderr, "octant merge: shard %s: %v\n", d, err)
			return 2
		}
		files = append(files, conformance.ShardFile{Name: path, Cert: c})
	}
	cert, err := conformance.Merge(files, "octant merge "+strings.Join(args, " "))
	if err != nil {
		fmt.Fprintf(stderr, "octant %v\n", err)
		return 2
	}
	return writeCertificate("merge", cert, out, stdout, stderr)
}
