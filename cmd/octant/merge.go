package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/octant-kv/octant/conformance"
)

// mergeKind is one kind of shard result `octant merge` combines: the file that marks a shard
// directory of that kind, and the function that merges the shards into OUT.
type mergeKind struct {
	marker string // a file in every shard directory of this kind; "" when the kind has none
	about  string // one line for the usage text
	merge  func(out string, shards []string, cmdline string, stdout, stderr io.Writer) int
}

// mergeKinds are the kinds `octant merge --kind` takes. Without --kind, the kind is the one whose
// marker the first shard directory holds.
var mergeKinds = map[string]mergeKind{
	"certificate": {"certificate.json", "shard certificates of one `octant conform --cases N --shard i/n` run", mergeCertificates},
	"campaign":    {"campaign.json", "shard campaigns of one `octant props --shard i/n` seeded property campaign", mergeCampaignShards},
	"matrix":      {"kill-matrix.json", "shard kill matrices of one `octant mutate --shard i/n` run", mergeMatrices},
	"corpus":      {corpusManifestName, "Go fuzz corpora (FuzzX/ directories), or the shards of one `octant fuzz --devices` run", mergeCorpora},
}

// runMerge combines the shard results of one sharded run into the result of the unsharded run.
func runMerge(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("merge", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kind := fs.String("kind", "", "what the shards hold: "+strings.Join(mergeKindNames(), ", ")+"; default: the kind whose file the first SHARD_DIR holds")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: octant merge [--kind KIND] OUT SHARD_DIR...\n\nCombines the shards of one sharded run into the result of the unsharded run, written to OUT.\nShards of different runs are refused; a shard not given is reported as not run, never as\npassed. Exit 0 when the merged result passes (certified, every mutant killed, ...), 1 when it\ndoes not, 2 usage error or an unreadable, cut or mismatched shard (docs/conformance.md, \"Shards\nand merge\"). Kinds:")
		for _, n := range mergeKindNames() {
			k := mergeKinds[n]
			marker := ""
			if k.marker != "" {
				marker = " (SHARD_DIR/" + k.marker + ")"
			}
			fmt.Fprintf(stderr, "  %-12s %s%s\n", n, k.about, marker)
		}
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
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
	name := *kind
	if name == "" {
		if _, err := os.Stat(fs.Arg(1)); err != nil {
			fmt.Fprintf(stderr, "octant merge: shard %s: not found (%v)\n", fs.Arg(1), err)
			return 2
		}
		name = detectMergeKind(fs.Arg(1))
		if name == "" {
			fmt.Fprintf(stderr, "octant merge: shard %s holds none of the files that name a kind (%s): say which with --kind\n", fs.Arg(1), strings.Join(mergeMarkers(), ", "))
			return 2
		}
	}
	k, ok := mergeKinds[name]
	if !ok {
		fmt.Fprintf(stderr, "octant merge: --kind %q: expected one of %s\n", name, strings.Join(mergeKindNames(), ", "))
		return 2
	}
	return k.merge(fs.Arg(0), fs.Args()[1:], "octant merge "+strings.Join(args, " "), stdout, stderr)
}

// detectMergeKind is the kind whose marker file path (a directory, or the marker file itself)
// holds or is; "" when none.
func detectMergeKind(path string) string {
	for _, n := range mergeKindNames() {
		m := mergeKinds[n].marker
		if m == "" {
			continue
		}
		if filepath.Base(path) == m {
			return n
		}
		if _, err := os.Stat(filepath.Join(path, m)); err == nil {
			return n
		}
	}
	return ""
}

func mergeKindNames() []string {
	names := make([]string, 0, len(mergeKinds))
	for n := range mergeKinds {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func mergeMarkers() []string {
	var ms []string
	for _, n := range mergeKindNames() {
		if m := mergeKinds[n].marker; m != "" {
			ms = append(ms, m)
		}
	}
	return ms
}

// mergeCertificates combines shard certificates (octant conform --cases N --shard i/n) into the
// certificate of the unsharded run (conformance.Merge) and writes it like conform does.
func mergeCertificates(out string, shards []string, cmdline string, stdout, stderr io.Writer) int {
	var files []conformance.ShardFile
	for _, d := range shards {
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
	cert, err := conformance.Merge(files, cmdline)
	if err != nil {
		fmt.Fprintf(stderr, "octant %v\n", err)
		return 2
	}
	return writeCertificate("merge", cert, out, stdout, stderr)
}
