// Package provenance says where a report's inputs came from: the suite's own commit, and a file's
// SHA-256 (the kernel library a certificate or a benchmark report names).
package provenance

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"runtime/debug"
	"strings"
)

// FileSHA256 is the hex SHA-256 of a file's bytes.
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// SuiteCommit is the suite's git commit and whether its tree was dirty: from the binary's build
// info (go build stamps it), else from git in the working directory; "unknown" when neither
// says.
func SuiteCommit() (string, bool) {
	if bi, ok := debug.ReadBuildInfo(); ok {
		var rev string
		var mod bool
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				mod = s.Value == "true"
			}
		}
		if rev != "" {
			return rev, mod
		}
	}
	rev, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		return "unknown", false
	}
	st, _ := exec.Command("git", "status", "--porcelain").Output()
	return strings.TrimSpace(string(rev)), len(strings.TrimSpace(string(st))) > 0
}

// Revision is SuiteCommit for reports: the commit, "+modified" appended when the tree was dirty,
// "" when unknown.
func Revision() string {
	rev, dirty := SuiteCommit()
	if rev == "unknown" {
		return ""
	}
	if dirty {
		rev += "+modified"
	}
	return rev
}
