package fuzz

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/octant-kv/octant/cases"
	"github.com/octant-kv/octant/harness"
	"github.com/octant-kv/octant/internal/settings"
	"pgregory.net/rapid"
)

// recordFailure writes the failing case's reproducer (unless the runner writes none) and returns
// its path. While rapid shrinks a failure it calls the property on ever smaller failing cases: each
// reproducer replaces the one the same property wrote before, so the smallest stays.
func (r *Runner) recordFailure(prop string, c any, err error, l *harness.Lib) (string, error) {
	r.init()
	if r.Regressions == "" {
		return "", fmt.Errorf("reproducers are off (%s=off)", settings.RegressionsEnv)
	}
	rep, rerr := cases.NewReproducer(prop, c, "fail", err.Error())
	if rerr != nil {
		return "", rerr
	}
	if l != nil {
		rep.Found += "; " + l.String()
	}
	path, werr := rep.Write(r.Regressions)
	if werr != nil {
		return "", werr
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if prev := r.written[prop]; prev != "" && prev != path {
		os.Remove(prev)
		base := strings.TrimSuffix(prev, filepath.Ext(prev))
		os.Remove(base + ".py") // its Python reproducer, when one was written (recordPython)
		os.Remove(base + ".pydata.gz")
	}
	r.written[prop] = path
	return path, nil
}

// fail reports a property failure: the error, then the reproducer's replay command on the last
// line.
func (r *Runner) fail(t *rapid.T, prop string, c any, err error) {
	path, werr := r.recordFailure(prop, c, err, nil)
	t.Fatal(r.failureMessage(prop, err, path, werr, nil))
}

// failLib reports a GPU property's failure on library l; the replay command names the library.
func (r *Runner) failLib(t *rapid.T, prop string, l *harness.Lib, c any, err error) {
	path, werr := r.recordFailure(prop, c, err, l)
	t.Fatal(r.failureMessage(prop, err, path, werr, l))
}

// failCall is failLib for a property whose case is one call judged on l (vs its verdicts): on a
// library run by an adapter, the Python reproducer is written beside the JSON one
// (recordPython) and named in the message, before the replay line.
func (r *Runner) failCall(t *rapid.T, prop string, l *harness.Lib, c any, err error, call harness.Call, vs []harness.Verdict) {
	path, werr := r.recordFailure(prop, c, err, l)
	msg := r.failureMessage(prop, err, path, werr, l)
	if werr == nil {
		msg = withPython(msg, r.recordPython(l, call, vs, path))
	}
	t.Fatal(msg)
}

// withPython is a failure message (failureMessage) with the line py, when not empty, before its
// replay line.
func withPython(msg, py string) string {
	i := strings.LastIndex(msg, "\nreplay: ")
	if py == "" || i < 0 {
		return msg
	}
	return msg[:i] + "\n" + py + msg[i:]
}

// recordPython writes the Python reproducer of a call that failed on a library run by an adapter
// (cases.WritePythonReproducer) beside the JSON reproducer at path, and returns the line that
// names it: "python reproducer: python3 PATH", or why none was written; "" when l runs no
// adapter.
func (r *Runner) recordPython(l *harness.Lib, call harness.Call, vs []harness.Verdict, path string) string {
	if l == nil || l.Worker == nil {
		return ""
	}
	py, err := cases.WritePythonReproducer(l, call, vs, path)
	if err != nil {
		return fmt.Sprintf("(no Python reproducer written: %v)", err)
	}
	if py == "" {
		return ""
	}
	return "python reproducer: python3 " + cases.ShellWord(cases.DisplayPath(py))
}

// failureMessage is what a failing property reports: the property and the error, and as the last
// line the command that replays the reproducer (or why none was written).
func (r *Runner) failureMessage(prop string, err error, path string, werr error, l *harness.Lib) string {
	r.init()
	if werr != nil {
		return fmt.Sprintf("%s: %v\n(no reproducer written: %v)", prop, err, werr)
	}
	lib := ""
	if l != nil {
		lib = " --lib " + cases.ShellWord(l.Path)
	}
	return fmt.Sprintf("%s: %v\nreplay: %s%s %s", prop, err, r.ReplayCmd, lib, cases.DisplayPath(path))
}
