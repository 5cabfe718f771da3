package deploy

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeKubectl is a kubectl that records each call (its arguments on one line) in $FAKE_KUBECTL_LOG
// (KUBECTL's "-n NAMESPACE" first), and answers `get job NAME -o jsonpath=...` with the conditions of the NAME Job: nothing on the
// first look, then the contents of $FAKE_KUBECTL_DIR/NAME (the Job's true conditions).
const fakeKubectl = `#!/usr/bin/env bash
echo "$*" >>"$FAKE_KUBECTL_LOG"
if [ "$1" = -n ]; then shift 2; fi
if [ "$1 $2" = "get job" ]; then
	seen=$FAKE_KUBECTL_DIR/$3.seen
	if [ -e "$seen" ]; then cat "$FAKE_KUBECTL_DIR/$3"; else touch "$seen"; fi
fi
if [ "$1" = logs ]; then echo "merge: emu (runtime): CERTIFIED"; fi
`

// TestK8sRunScript runs run.sh with a fake kubectl: it must apply the claim and the shard Job,
// start the merge Job only once the shard Job has ended, also when it ended Failed (a failing
// shard), print the merge's log, and exit 0 only when the merge Job completed.
func TestK8sRunScript(t *testing.T) {
	for _, tc := range []struct {
		shards, merge string
		code          int
	}{
		{"Complete", "Complete", 0},
		{"FailureTarget Failed", "Complete", 0},
		{"Complete", "Failed", 1},
	} {
		t.Run(tc.shards+"/"+tc.merge, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "kubectl"), []byte(fakeKubectl), 0o755)
			os.WriteFile(filepath.Join(dir, "octant-shards"), []byte(tc.shards), 0o644)
			os.WriteFile(filepath.Join(dir, "octant-merge"), []byte(tc.merge), 0o644)
			log := filepath.Join(dir, "log")
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, "k8s/run.sh")
			cmd.WaitDelay = 5 * time.Second
			// On the timeout, end run.sh's process group: its $(...) subshells too.
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
			cmd.Env = append(os.Environ(), "KUBECTL="+filepath.Join(dir, "kubectl")+" -n gpu", "POLL=0",
				"FAKE_KUBECTL_LOG="+log, "FAKE_KUBECTL_DIR="+dir)
			out, _ := cmd.CombinedOutput()
			if ctx.Err() != nil {
				t.Fatalf("run.sh did not end within 30 s (waiting for a Job that had ended?)\n%s", out)
			}
			if code := cmd.ProcessState.ExitCode(); code != tc.code {
				t.Errorf("exit %d, expected %d\n%s", code, tc.code, out)
			}
			if !strings.Contains(string(out), "CERTIFIED") {
				t.Errorf("output %q: expected the merge's log", out)
			}
			b, _ := os.ReadFile(log)
			calls := strings.Split(strings.TrimSpace(string(b)), "\n")
			var kinds []string
			for _, c := range calls {
				f := strings.Fields(c)
				switch {
				case len(f) > 2 && f[0] == "-n" && f[2] == "apply":
					kinds = append(kinds, "apply "+filepath.Base(f[len(f)-1]))
				case len(f) > 4 && f[2] == "get":
					kinds = append(kinds, "get "+f[4])
				case len(f) > 2:
					kinds = append(kinds, f[2])
				}
			}
			want := "apply shards-job.yaml,get octant-shards,get octant-shards,apply merge-job.yaml,get octant-merge,get octant-merge,logs"
			if got := strings.Join(kinds, ","); got != want {
				t.Errorf("kubectl calls %q, expected %q (the merge applied once the shard Job ended)\n%s", got, want, b)
			}
		})
	}
}
