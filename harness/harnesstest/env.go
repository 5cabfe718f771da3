package harnesstest

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/octant-kv/octant/arch"
	"github.com/octant-kv/octant/harness"
	"github.com/octant-kv/octant/internal/settings"
	"github.com/octant-kv/octant/internal/settings/settingstest"
)

// ErrNoLib is EnvLib's error when no library is named: tests that need one skip with it. It is
// settingstest.ErrNoLib, so that a test skips with the same error whichever helper it uses.
var ErrNoLib = settingstest.ErrNoLib

var envLib struct {
	once sync.Once
	l    *harness.Lib
	err  error
}

// EnvLib opens the library of the test binary's settings (settings.LibEnv: a library's path or
// a worker spec, restricted to the tiers settings.TiersEnv lists) once per process; ErrNoLib
// when none is named.
func EnvLib() (*harness.Lib, error) {
	envLib.once.Do(func() {
		s, err := settings.FromEnv()
		switch {
		case err != nil:
			envLib.err = err
		case s.Lib == "":
			envLib.err = ErrNoLib
		default:
			envLib.l, envLib.err = harness.OpenWith(s.Lib, OpenOptions(s))
			if envLib.err == nil && s.Tiers != nil {
				envLib.l, envLib.err = envLib.l.Only(s.Tiers)
				if envLib.err != nil {
					envLib.err = fmt.Errorf("%s: %w", settings.TiersEnv, envLib.err)
				}
			}
		}
	})
	return envLib.l, envLib.err
}

// OpenOptions are the options of harness.OpenWith that the settings give: the interpreter and
// timeout of a worker, when settings.LibEnv is a worker spec (host:ADAPTER.py?k=v).
func OpenOptions(s settings.Settings) harness.OpenOptions {
	return harness.OpenOptions{Python: s.Python, Timeout: s.WorkerTimeout}
}

// CloseEnvLib closes the library EnvLib opened, if any (a test binary's TestMain).
func CloseEnvLib() {
	if envLib.l != nil {
		envLib.l.Close()
	}
}

// LibOrSkip returns EnvLib's library, skipping the test when none is named and failing it when
// the library cannot be opened.
func LibOrSkip(tb testing.TB) *harness.Lib {
	tb.Helper()
	l, err := EnvLib()
	if errors.Is(err, ErrNoLib) {
		tb.Skip(err)
	}
	if err != nil {
		tb.Fatalf("%s: %v", settings.LibEnv, err)
	}
	return l
}

// ForEachImpl runs fn once per implementation of op in l (nil: the oracle alone), each in a
// subtest named for it: one test body, every implementation. It skips t when l's declaration (an
// adapter's) leaves op out.
func ForEachImpl(t *testing.T, l *harness.Lib, op arch.Op, fn func(t *testing.T, im harness.Impl)) {
	t.Helper()
	if l != nil && !l.Decl.Declares(op) {
		t.Skipf("outside declared domain: %s declares no %s op", l.Path, op)
	}
	impls, err := harness.Impls(l, op)
	if err != nil {
		t.Fatal(err)
	}
	for _, im := range impls {
		t.Run(im.Name, func(t *testing.T) { fn(t, im) })
	}
}
