package fuzz

import (
	"fmt"
	"os"
	"sync"

	"github.com/octant-kv/octant/cases"
	"github.com/octant-kv/octant/harness"
	"pgregory.net/rapid"
)

// written remembers, per property, the reproducer this process wrote last: while rapid shrinks a
// failure it calls the property on ever smaller failing cases, and only the last (smallest) one
// should stay.
var written struct {
	sync.Mutex
	last map[string]string
}

// recordFailure writes the failing case's reproducer (unless turned off) and returns its path.
func recordFailure(prop string, c any, err error, l *harness.Lib) (string, error) {
	dir, derr := cases.RegressionsDir()
	if derr != nil {
		return "", derr
	}
	if dir == "" {
		return "", fmt.Errorf("%s=off", cases.RegressionsEnv)
	}
	r, rerr := cases.NewReproducer(prop, c, "fail", err.Error())
	if rerr != nil {
		return "", rerr
	}
	if l != nil {
		r.Found += "; " + l.String()
	}
	path, werr := r.Write(dir)
	if werr != nil {
		return "", werr
	}
	written.Lock()
	defer written.Unlock()
	if written.last == nil {
		written.last = map[string]string{}
	}
	if prev := written.last[prop]; prev != "" && prev != path {
		os.Remove(prev)
	}
	written.last[prop] = path
	return path, nil
}

// fail reports a property failure: the error, then the reproducer's replay command on the last
// line.
func fail(t *rapid.T, prop string, c any, err error) {
	path, werr := recordFailure(prop, c, err, nil)
	t.Fatal(failureMessage(prop, err, path, werr, nil))
}

// failLib reports a GPU property's failure on library l; the replay command names the library.
func failLib(t *rapid.T, prop string, l *harness.Lib, c any, err error) {
	path, werr := recordFailure(prop, c, err, l)
	t.Fatal(failureMessage(prop, err, path, werr, l))
}

// failureMessage is what a failing property reports: the property and the error, and as the last
// line the command that replays the reproducer (or why none was written).
func failureMessage(prop string, err error, path string, werr error, l *harness.Lib) string {
	if werr != nil {
		return fmt.Sprintf("%s: %v\n(no reproducer written: %v)", prop, err, werr)
	}
	lib := ""
	if l != nil {
		lib = " --lib " + l.Path
	}
	return fmt.Sprintf("%s: %v\nreplay: %s%s %s", prop, err, cases.ReplayCmd(), lib, cases.DisplayPath(path))
}
