package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
)

// fileSHA256 is the hex SHA-256 of a file's bytes: the kernel library a report or certificate
// names.
func fileSHA256(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:]), nil
}

// goRevision is the suite's commit for reports, "+modified" appended when its tree was dirty;
// "" when unknown (suiteCommit).
func goRevision() string {
	rev, dirty := suiteCommit()
	if rev == "unknown" {
		return ""
	}
	if dirty {
		rev += "+modified"
	}
	return rev
}
