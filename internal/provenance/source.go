package provenance

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ModuleRoot finds the directory of Octant's go.mod, walking up from the working directory.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.Contains(b, []byte("module github.com/octant-kv/octant")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod of module github.com/octant-kv/octant above the working directory")
		}
		dir = parent
	}
}

// sourceExts are the kernel sources' file name endings.
var sourceExts = []string{".hip", ".h", ".cpp", ".cuh", ".hpp", ".c"}

// KernelSourceDigest is the hex SHA-256 of the kernel sources under dir (csrc: *.hip, *.h,
// *.cpp, ...) with their comments stripped and blank lines and trailing spaces dropped
// (StripComments): what a certificate's kernels were built from, so that a comment edit keeps a
// certificate current and any change to code does not. Files are taken in path order, each as
// its slash-separated path relative to dir, a newline, and its stripped text.
func KernelSourceDigest(dir string) (string, error) {
	var paths []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && slices.Contains(sourceExts, filepath.Ext(p)) {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	if len(paths) == 0 {
		return "", fmt.Errorf("no kernel sources (%s) under %s", strings.Join(sourceExts, " "), dir)
	}
	slices.Sort(paths)
	h := sha256.New()
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return "", err
		}
		rel, _ := filepath.Rel(dir, p)
		fmt.Fprintf(h, "%s\n%s", filepath.ToSlash(rel), StripComments(b))
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// StripComments returns C/C++ source src without its comments (// to the end of the line, /* to
// */, outside string and character literals), each line without trailing white space, and
// without blank lines.
func StripComments(src []byte) []byte {
	var out bytes.Buffer
	const (
		code = iota
		line
		block
		str
		chr
	)
	state := code
	for i := 0; i < len(src); i++ {
		c := src[i]
		next := byte(0)
		if i+1 < len(src) {
			next = src[i+1]
		}
		switch state {
		case code:
			switch {
			case c == '/' && next == '/':
				state, i = line, i+1
			case c == '/' && next == '*':
				state, i = block, i+1
				out.WriteByte(' ')
			default:
				if c == '"' {
					state = str
				} else if c == '\'' {
					state = chr
				}
				out.WriteByte(c)
			}
		case line:
			if c == '\n' {
				state = code
				out.WriteByte(c)
			}
		case block:
			if c == '*' && next == '/' {
				state, i = code, i+1
			} else if c == '\n' {
				out.WriteByte(c)
			}
		case str, chr:
			out.WriteByte(c)
			quote := byte('"')
			if state == chr {
				quote = '\''
			}
			if c == '\\' && i+1 < len(src) {
				out.WriteByte(next)
				i++
			} else if c == quote || c == '\n' {
				state = code
			}
		}
	}
	var res bytes.Buffer
	for l := range bytes.Lines(out.Bytes()) {
		l = bytes.TrimRight(l, " \t\r\n")
		if len(l) > 0 {
			res.Write(l)
			res.WriteByte('\n')
		}
	}
	return res.Bytes()
}
