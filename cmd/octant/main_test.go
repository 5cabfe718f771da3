package main

import (
	"strings"
	"testing"
)

// TestHelp: asked for, the usage goes to stdout with exit 0 (`octant --help | less` works); with no
// command it goes to stderr after saying what was expected, exit 2.
func TestHelp(t *testing.T) {
	for _, arg := range []string{"--help", "-h", "help"} {
		code, out, errs := runCLI(arg)
		if code != 0 || errs != "" || !strings.HasPrefix(out, "usage: octant <command>") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 0 and the usage on stdout", arg, code, out, errs)
		}
		for _, c := range commands {
			if !strings.Contains(out, "  "+c.name+" ") {
				t.Errorf("%s: command %s missing from the usage", arg, c.name)
			}
		}
	}
	code, out, errs := runCLI()
	if code != 2 || out != "" || !strings.HasPrefix(errs, "octant: expected a command\nusage: octant <command>") {
		t.Errorf("no arguments: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

// TestVersionHelp: `octant version -h` and `--help` print the command's usage (stdout, exit 0),
// not the version; an argument or an unknown flag is a usage error (exit 2, stderr); with nothing
// after it, it prints the version.
func TestVersionHelp(t *testing.T) {
	for _, arg := range []string{"--help", "-h", "-help"} {
		code, out, errs := runCLI("version", arg)
		if code != 0 || errs != "" || !strings.HasPrefix(out, "usage: octant version") || strings.Contains(out, "octant "+Version) {
			t.Errorf("version %s: exit %d, stdout %q, stderr %q; want exit 0 and the usage on stdout", arg, code, out, errs)
		}
	}
	for _, args := range [][]string{{"version", "extra"}, {"version", "-v"}} {
		code, out, errs := runCLI(args...)
		if code != 2 || out != "" || !strings.Contains(errs, "usage: octant version") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 and the usage on stderr", args, code, out, errs)
		}
	}
	if code, out, errs := runCLI("version"); code != 0 || out != "octant "+Version+"\n" || errs != "" {
		t.Errorf("version: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}
