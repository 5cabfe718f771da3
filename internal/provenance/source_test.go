package provenance

import (
	"os"
	"path/filepath"
	"testing"
)

// TestStripComments: comments go, code and literals that look like comments stay.
func TestStripComments(t *testing.T) {
	src := "int a = 1; // one\n/* block\n   more */ int b = 2;\n\n  \nconst char* s = \"// not a comment /* nor */\";\nchar c = '\\''; // quote\nint d = 3 /* x */ + 4;\n"
	want := "int a = 1;\n int b = 2;\nconst char* s = \"// not a comment /* nor */\";\nchar c = '\\'';\nint d = 3   + 4;\n"
	if got := string(StripComments([]byte(src))); got != want {
		t.Errorf("StripComments:\n%q\nexpected\n%q", got, want)
	}
}

// TestKernelSourceDigest: a comment edit keeps the digest, a code edit changes it.
func TestKernelSourceDigest(t *testing.T) {
	dir := t.TempDir()
	write := func(s string) string {
		if err := os.WriteFile(filepath.Join(dir, "k.hip"), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		d, err := KernelSourceDigest(dir)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	a := write("int f() { return 1; } // one\n")
	if b := write("// a new comment\nint f() { return 1; }   /* again */\n"); b != a {
		t.Errorf("a comment edit changed the digest")
	}
	if c := write("int f() { return 2; }\n"); c == a {
		t.Errorf("a code edit kept the digest")
	}
	if _, err := KernelSourceDigest(t.TempDir()); err == nil {
		t.Errorf("an empty directory has a digest")
	}
}
