//go:build unix

package mutate

import (
	"testing"
	"time"
)

// TestLockBuildExcludes: a second build of the same library waits for the first's unlock; another
// library's build does not.
func TestLockBuildExcludes(t *testing.T) {
	t.Chdir(t.TempDir())
	unlock, err := lockBuild("emu", 0)
	if err != nil {
		t.Fatal(err)
	}
	other, err := lockBuild("emu", 3)
	if err != nil {
		t.Fatal(err)
	}
	other()
	got := make(chan struct{})
	go func() {
		u, err := lockBuild("emu", 0)
		if err != nil {
			t.Error(err)
		} else {
			u()
		}
		close(got)
	}()
	select {
	case <-got:
		t.Fatal("a second lock on the same library was granted while the first was held")
	case <-time.After(300 * time.Millisecond):
	}
	unlock()
	select {
	case <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the second lock was not granted within 10 s of the first's release")
	}
}
