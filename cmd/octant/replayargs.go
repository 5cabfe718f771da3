package main

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// reproducerPaths expands replay's arguments: a file stays as it is; a directory becomes the
// reproducer files under it (*.json, recursively, sorted), and w is told how many were found. A
// directory without any is an error that names it, and so is a flag after the files (Go's flag
// parsing stops at the first file, so it would be taken for one).
func reproducerPaths(args []string, w io.Writer) ([]string, error) {
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			return nil, fmt.Errorf("%s: flags go before the files (octant replay --lib PATH FILE|DIR...)", a)
		}
	}
	var out []string
	for _, a := range args {
		st, err := os.Stat(a)
		if err != nil || !st.IsDir() {
			out = append(out, a) // a file, or a path the replay itself reports as unreadable
			continue
		}
		var found []string
		err = filepath.WalkDir(a, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".json") {
				found = append(found, p)
			}
			return err
		})
		if err != nil {
			return nil, err
		}
		if len(found) == 0 {
			return nil, fmt.Errorf("%s: a directory without reproducer files (*.json, searched recursively)", a)
		}
		sort.Strings(found)
		fmt.Fprintf(w, "%s: %d reproducer file(s)\n", a, len(found))
		out = append(out, found...)
	}
	return out, nil
}
