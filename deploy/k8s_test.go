package deploy

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// decodeManifest strictly decodes one Kubernetes manifest into the API type of its apiVersion and
// kind: an unknown or duplicated field, or a value of the wrong type, is an error.
func decodeManifest(data []byte) (any, error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(data, &tm); err != nil {
		return nil, err
	}
	var obj any
	switch tm.APIVersion + " " + tm.Kind {
	case "batch/v1 Job":
		obj = &batchv1.Job{}
	case "v1 PersistentVolumeClaim":
		obj = &corev1.PersistentVolumeClaim{}
	default:
		return nil, fmt.Errorf("apiVersion %q kind %q: expected batch/v1 Job or v1 PersistentVolumeClaim", tm.APIVersion, tm.Kind)
	}
	if err := yaml.UnmarshalStrict(data, obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// k8sManifests decodes every manifest of k8s/ (one object per file).
func k8sManifests(t *testing.T) map[string]any {
	t.Helper()
	files, err := filepath.Glob("k8s/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("k8s/*.yaml: %v, %d files; expected the manifests", err, len(files))
	}
	objs := map[string]any{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		obj, err := decodeManifest(b)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		objs[filepath.Base(f)] = obj
	}
	if t.Failed() {
		t.FailNow()
	}
	return objs
}

func TestK8sDecoderIsStrict(t *testing.T) {
	for _, bad := range []string{
		"apiVersion: batch/v1\nkind: Job\nspec:\n  completionsMode: Indexed\n",
		"apiVersion: batch/v1\nkind: Job\nspec:\n  completions: 4\n  completions: 4\n",
		"apiVersion: batch/v1\nkind: Job\nspec:\n  completions: four\n",
		"apiVersion: batch/v2\nkind: Job\n",
	} {
		if _, err := decodeManifest([]byte(bad)); err == nil {
			t.Errorf("decoded %q without an error, expected one", bad)
		}
	}
}

// envFromIndex is the name of the container's variable that holds the pod's completion index:
// JOB_COMPLETION_INDEX (set by the Job controller) or one defined from the index's annotation.
func envFromIndex(c corev1.Container, name string) bool {
	if name == "JOB_COMPLETION_INDEX" {
		return true
	}
	for _, e := range c.Env {
		if e.Name == name && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil &&
			e.ValueFrom.FieldRef.FieldPath == "metadata.annotations['batch.kubernetes.io/job-completion-index']" {
			return true
		}
	}
	return false
}

func argAfter(args []string, flag string) (string, bool) {
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			return args[i+1], true
		}
	}
	return "", false
}

// mountedClaim is the PVC mounted at the longest mount path that holds dir, and that path.
func mountedClaim(spec corev1.PodSpec, c corev1.Container, dir string) (claim, mount string) {
	for _, m := range c.VolumeMounts {
		if (dir == m.MountPath || strings.HasPrefix(dir, strings.TrimSuffix(m.MountPath, "/")+"/")) && len(m.MountPath) > len(mount) {
			for _, v := range spec.Volumes {
				if v.Name == m.Name && v.PersistentVolumeClaim != nil {
					claim, mount = v.PersistentVolumeClaim.ClaimName, m.MountPath
				}
			}
		}
	}
	return claim, mount
}

// TestK8sManifests checks what the sharded run rests on: the shard Job is Indexed with
// completions == parallelism == the shard count of --shard, its index reaches --shard and --out,
// each pod asks for one GPU, the shard directories are on the claim of pvc.yaml, and the merge
// Job reads the same claim at the same directories for the same shard count, with no GPU.
func TestK8sManifests(t *testing.T) {
	objs := k8sManifests(t)
	shards, ok1 := objs["shards-job.yaml"].(*batchv1.Job)
	merge, ok2 := objs["merge-job.yaml"].(*batchv1.Job)
	pvc, ok3 := objs["pvc.yaml"].(*corev1.PersistentVolumeClaim)
	if !ok1 || !ok2 || !ok3 {
		t.Fatalf("expected shards-job.yaml and merge-job.yaml (Jobs) and pvc.yaml (a PersistentVolumeClaim), found %v", objs)
	}

	s := shards.Spec
	if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion {
		t.Errorf("shards-job.yaml: completionMode %s, expected Indexed (the completion index is the shard)", deref(s.CompletionMode))
	}
	if s.Completions == nil || s.Parallelism == nil || *s.Completions != *s.Parallelism || *s.Completions < 1 {
		t.Fatalf("shards-job.yaml: completions %s, parallelism %s: expected both set, equal, >= 1 (one pod per shard, all at once)", deref(s.Completions), deref(s.Parallelism))
	}
	n := int(*s.Completions)
	// The API server refuses a FailIndex rule without backoffLimitPerIndex.
	if pf := s.PodFailurePolicy; pf != nil {
		for _, r := range pf.Rules {
			if r.Action == batchv1.PodFailurePolicyActionFailIndex && s.BackoffLimitPerIndex == nil {
				t.Errorf("shards-job.yaml: podFailurePolicy action FailIndex without backoffLimitPerIndex (the API server refuses it)")
			}
		}
	}
	if s.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("shards-job.yaml: restartPolicy %q, expected Never (a failed shard is the Job's to judge, not restarted in place)", s.Template.Spec.RestartPolicy)
	}
	if len(s.Template.Spec.Containers) != 1 {
		t.Fatalf("shards-job.yaml: %d containers, expected 1", len(s.Template.Spec.Containers))
	}
	c := s.Template.Spec.Containers[0]
	args := append(append([]string{}, c.Command...), c.Args...)
	if len(args) < 2 || args[0] != "octant" || args[1] != "conform" {
		t.Errorf("shards-job.yaml: runs %q, expected octant conform", args)
	}
	if v, ok := argAfter(args, "--cases"); !ok || !regexp.MustCompile(`^\d+$`).MatchString(v) {
		t.Errorf("shards-job.yaml: --cases %q, expected a case count (--shard needs a case-count run)", v)
	}
	shard, _ := argAfter(args, "--shard")
	m := regexp.MustCompile(`^\$\((\w+)\)/(\d+)$`).FindStringSubmatch(shard)
	if m == nil {
		t.Fatalf("shards-job.yaml: --shard %q, expected $(VAR)/N with VAR the completion index", shard)
	}
	if !envFromIndex(c, m[1]) {
		t.Errorf("shards-job.yaml: --shard's $(%s) is not the completion index (expected JOB_COMPLETION_INDEX or an env var from the annotation batch.kubernetes.io/job-completion-index)", m[1])
	}
	if count, _ := strconv.Atoi(m[2]); count != n {
		t.Errorf("shards-job.yaml: --shard ...%s, expected /%d (completions)", "/"+m[2], n)
	}
	out, _ := argAfter(args, "--out")
	if !strings.HasSuffix(out, "/$("+m[1]+")") {
		t.Errorf("shards-job.yaml: --out %q, expected a directory per shard ending in /$(%s)", out, m[1])
	}
	if q, ok := c.Resources.Limits["nvidia.com/gpu"]; !ok || !q.Equal(resource.MustParse("1")) {
		t.Errorf("shards-job.yaml: limits %v, expected nvidia.com/gpu: 1 (one GPU per shard)", c.Resources.Limits)
	}
	claim, _ := mountedClaim(s.Template.Spec, c, out)
	if claim == "" || claim != pvc.Name {
		t.Errorf("shards-job.yaml: --out %q is on claim %q, expected the claim of pvc.yaml (%q)", out, claim, pvc.Name)
	}
	if !containsAccessMode(pvc.Spec.AccessModes, corev1.ReadWriteMany) {
		t.Errorf("pvc.yaml: access modes %v, expected ReadWriteMany (shard pods on several nodes write at once)", pvc.Spec.AccessModes)
	}
	shardRoot := strings.TrimSuffix(out, "/$("+m[1]+")")

	// The merge.
	ms := merge.Spec.Template.Spec
	if merge.Spec.CompletionMode != nil && *merge.Spec.CompletionMode == batchv1.IndexedCompletion || merge.Spec.Completions != nil && *merge.Spec.Completions != 1 {
		t.Errorf("merge-job.yaml: expected one non-indexed pod")
	}
	if len(ms.Containers) != 1 {
		t.Fatalf("merge-job.yaml: %d containers, expected 1", len(ms.Containers))
	}
	mc := ms.Containers[0]
	margs := append(append([]string{}, mc.Command...), mc.Args...)
	i := -1
	for j, a := range margs {
		if strings.HasSuffix(a, "/merge-shards.sh") {
			i = j
		}
	}
	if i < 0 || len(margs) < i+4 {
		t.Fatalf("merge-job.yaml: runs %q, expected merge-shards.sh SHARDS SHARD_ROOT OUT", margs)
	}
	if margs[i+1] != strconv.Itoa(n) {
		t.Errorf("merge-job.yaml: merges %s shards, expected %d (the shard Job's completions)", margs[i+1], n)
	}
	if margs[i+2] != shardRoot {
		t.Errorf("merge-job.yaml: reads shards from %q, expected %q (where the shard Job writes them)", margs[i+2], shardRoot)
	}
	if mclaim, _ := mountedClaim(ms, mc, margs[i+2]); mclaim != claim {
		t.Errorf("merge-job.yaml: %s is on claim %q, expected the shards' claim %q", margs[i+2], mclaim, claim)
	}
	if mclaim, _ := mountedClaim(ms, mc, margs[i+3]); mclaim != claim {
		t.Errorf("merge-job.yaml: the merged result %s is on claim %q, expected %q", margs[i+3], mclaim, claim)
	}
	for name := range mc.Resources.Limits {
		if strings.HasSuffix(string(name), "/gpu") {
			t.Errorf("merge-job.yaml: limits %v, expected no GPU (the merge runs nothing on one)", mc.Resources.Limits)
		}
	}
}

func containsAccessMode(ms []corev1.PersistentVolumeAccessMode, want corev1.PersistentVolumeAccessMode) bool {
	for _, m := range ms {
		if m == want {
			return true
		}
	}
	return false
}

// deref prints a pointer's value, or "unset".
func deref[T any](p *T) string {
	if p == nil {
		return "unset"
	}
	return fmt.Sprint(*p)
}
