package deploy

import (
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rhysd/actionlint"
	yaml "go.yaml.in/yaml/v3"
)

// lintWorkflow runs actionlint (its library: the same checks as the command, less shellcheck's and
// pyflakes's, which need those programs) on a workflow file with github/actionlint.yaml.
func lintWorkflow(t *testing.T, path string) []*actionlint.Error {
	t.Helper()
	l, err := actionlint.NewLinter(io.Discard, &actionlint.LinterOptions{ConfigFile: "github/actionlint.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	errs, err := l.LintFile(path, nil)
	if err != nil {
		t.Fatalf("actionlint %s: %v", path, err)
	}
	return errs
}

// TestGitHubWorkflowLints lints every workflow template of github/.
func TestGitHubWorkflowLints(t *testing.T) {
	files, _ := filepath.Glob("github/*.yml")
	if len(files) == 0 {
		t.Fatal("github/*.yml: no workflow found")
	}
	for _, f := range files {
		for _, e := range lintWorkflow(t, f) {
			t.Errorf("%s:%d:%d: %s [%s]", f, e.Line, e.Column, e.Message, e.Kind)
		}
	}
}

// TestGitHubLinterCatches checks that the lint reports a broken workflow: a job needing one that
// does not exist, and a runner label actionlint.yaml does not declare.
func TestGitHubLinterCatches(t *testing.T) {
	b, err := os.ReadFile("github/octant-shards.yml")
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct{ old, new, want string }{
		{"needs: [plan, shard]", "needs: [plan, shards]", "shards"},
		{"runs-on: [self-hosted, gpu]", "runs-on: [self-hosted, gpu-a]", "gpu-a"},
	} {
		s := strings.Replace(string(b), bad.old, bad.new, 1)
		if s == string(b) {
			t.Fatalf("github/octant-shards.yml holds no %q to break", bad.old)
		}
		path := filepath.Join(t.TempDir(), "broken.yml")
		os.WriteFile(path, []byte(s), 0o644)
		errs := lintWorkflow(t, path)
		found := false
		for _, e := range errs {
			found = found || strings.Contains(e.Message, bad.want)
		}
		if !found {
			t.Errorf("%q → %q: actionlint reported %v, expected an error naming %q", bad.old, bad.new, errs, bad.want)
		}
	}
}

// TestGitHubWorkflowShape checks what actionlint does not: started by hand with the shard count,
// the case count and the library; the shard jobs a matrix over the shard index on self-hosted GPU
// runners that does not stop the other shards when one fails, each uploading its directory; the
// merge after every shard, failed or not, downloading the shards' artifacts and running the merge.
func TestGitHubWorkflowShape(t *testing.T) {
	b, err := os.ReadFile("github/octant-shards.yml")
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		On struct {
			WorkflowDispatch struct {
				Inputs map[string]any `yaml:"inputs"`
			} `yaml:"workflow_dispatch"`
		} `yaml:"on"`
		Jobs map[string]struct {
			Needs    any    `yaml:"needs"`
			If       string `yaml:"if"`
			RunsOn   any    `yaml:"runs-on"`
			Strategy struct {
				FailFast *bool          `yaml:"fail-fast"`
				Matrix   map[string]any `yaml:"matrix"`
			} `yaml:"strategy"`
			Steps []map[string]any `yaml:"steps"`
		} `yaml:"jobs"`
	}
	// YAML 1.2 (yaml/v3), as GitHub reads it: "on" is a key, not true.
	if err := yaml.Unmarshal(b, &wf); err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{"shards", "cases", "lib"} {
		if _, ok := wf.On.WorkflowDispatch.Inputs[in]; !ok {
			t.Errorf("workflow_dispatch inputs %v: expected %q", wf.On.WorkflowDispatch.Inputs, in)
		}
	}
	steps := func(job string) string {
		s, _ := yaml.Marshal(wf.Jobs[job].Steps)
		return string(s)
	}
	shard := wf.Jobs["shard"]
	if ro, _ := yaml.Marshal(shard.RunsOn); strings.TrimSpace(string(ro)) != "- self-hosted\n- gpu" {
		t.Errorf("shard job runs-on %v, expected [self-hosted, gpu]", shard.RunsOn)
	}
	if shard.Strategy.FailFast == nil || *shard.Strategy.FailFast {
		t.Errorf("shard job: fail-fast is not false: a failing shard would cancel the others")
	}
	if _, ok := shard.Strategy.Matrix["index"]; !ok {
		t.Errorf("shard job: matrix %v, expected a matrix over index", shard.Strategy.Matrix)
	}
	if s := steps("shard"); !strings.Contains(s, `--shard "$INDEX/$SHARDS"`) || !strings.Contains(s, "INDEX: ${{ matrix.index }}") ||
		!strings.Contains(s, "--cases") || !strings.Contains(s, "actions/upload-artifact") || !strings.Contains(s, "octant-shard-${{ matrix.index }}") {
		t.Errorf("shard job steps: expected octant conform --shard $INDEX/$SHARDS with INDEX the matrix index, --cases, and an upload of octant-shard-INDEX:\n%s", s)
	}
	merge := wf.Jobs["merge"]
	needs, _ := yaml.Marshal(merge.Needs)
	if !strings.Contains(string(needs), "shard") || !strings.Contains(merge.If, "!cancelled()") {
		t.Errorf("merge job: needs %s, if %q: expected it to need the shard job and run when shards failed (!cancelled())", needs, merge.If)
	}
	if s := steps("merge"); !strings.Contains(s, "deploy/merge-shards.sh") {
		t.Errorf("merge job steps: expected deploy/merge-shards.sh:\n%s", s)
	}
	// The merge downloads what the shards upload: the download's pattern matches the name shard 0
	// uploads under.
	with := func(job, action, key string) string {
		for _, st := range wf.Jobs[job].Steps {
			if u, _ := st["uses"].(string); strings.HasPrefix(u, action+"@") {
				w, _ := st["with"].(map[string]any)
				v, _ := w[key].(string)
				return v
			}
		}
		return ""
	}
	up := strings.ReplaceAll(with("shard", "actions/upload-artifact", "name"), "${{ matrix.index }}", "0")
	pattern := with("merge", "actions/download-artifact", "pattern")
	if ok, _ := path.Match(pattern, up); !ok || up == "" {
		t.Errorf("merge job downloads the artifacts %q, expected a pattern matching shard 0's upload %q", pattern, up)
	}
}

// TestGitHubMergeStep runs the merge job's "octant merge" step as the runner would (bash -e, in
// the checkout, after the download of octant-shard-* into artifacts/) with shards 0, 1 and 3 of 4
// downloaded and a stub bin/octant: the shards must reach octant merge as shards/0, shards/1,
// shards/3 and shard 2 be reported not run.
func TestGitHubMergeStep(t *testing.T) {
	b, err := os.ReadFile("github/octant-shards.yml")
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		Jobs map[string]struct {
			Steps []struct {
				Name string            `yaml:"name"`
				Env  map[string]string `yaml:"env"`
				Run  string            `yaml:"run"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	if err := yaml.Unmarshal(b, &wf); err != nil {
		t.Fatal(err)
	}
	script := ""
	for _, s := range wf.Jobs["merge"].Steps {
		if s.Name == "octant merge" {
			script = s.Run
		}
	}
	if script == "" {
		t.Fatal(`merge job: no step named "octant merge"`)
	}
	dir := t.TempDir()
	for _, d := range []string{"bin", "deploy", "artifacts/octant-shard-0", "artifacts/octant-shard-1", "artifacts/octant-shard-3"} {
		os.MkdirAll(filepath.Join(dir, d), 0o755)
	}
	for _, i := range []string{"0", "1", "3"} {
		os.WriteFile(filepath.Join(dir, "artifacts/octant-shard-"+i, "certificate.json"), []byte("{}"), 0o644)
	}
	ms, _ := os.ReadFile("merge-shards.sh")
	os.WriteFile(filepath.Join(dir, "deploy/merge-shards.sh"), ms, 0o755)
	os.WriteFile(filepath.Join(dir, "bin/octant"), []byte("#!/bin/sh\necho \"octant $*\"\n"), 0o755)
	cmd := exec.Command("bash", "-e", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SHARDS=4")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("merge step: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "octant merge merged shards/0 shards/1 shards/3\n") || !strings.Contains(string(out), "shard 2/4: no certificate") {
		t.Errorf("merge step printed %q, expected octant merge merged shards/0 shards/1 shards/3 and shard 2/4 not run", out)
	}
}
