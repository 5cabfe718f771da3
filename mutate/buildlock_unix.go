//go:build unix

package mutate

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockBuild holds an exclusive lock (flock) on build/.mutate-<kind>-m<id>.lock until the returned
// func is called: shards of one `octant mutate` run in the same checkout (several GPUs of one host,
// array tasks on a shared file system) each build the control and may build the same mutant, and
// two makes writing one library at once would leave it torn. The second make waits, then finds
// the library up to date.
func lockBuild(kind string, id int) (func(), error) {
	if err := os.MkdirAll("build", 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join("build", fmt.Sprintf(".mutate-%s-m%d.lock", kind, id))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("build lock %s: %v", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("build lock %s: %v", path, err)
	}
	return func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}
