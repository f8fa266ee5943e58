// Package validate checks the Kubernetes manifests of deploy/kubernetes
// offline: each document decodes strictly into its Kubernetes API type
// (an unknown or misspelled field fails), and the shard Job's numbers
// agree. It is a module of its own, so that the Kubernetes API stays out
// of replay's go.mod.
package validate

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

type object struct {
	file string
	kind string
	doc  []byte
}

func manifests(t *testing.T) []object {
	t.Helper()
	paths, err := filepath.Glob("../*.yaml")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	var objs []object
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range bytes.Split(data, []byte("\n---")) {
			var meta struct{ Kind string }
			if err := yaml.Unmarshal(doc, &meta); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			if meta.Kind != "" {
				objs = append(objs, object{filepath.Base(path), meta.Kind, doc})
			}
		}
	}
	return objs
}

func TestManifestsDecodeStrictly(t *testing.T) {
	kinds := map[string]int{}
	for _, o := range manifests(t) {
		var into any
		switch o.kind {
		case "Job":
			into = &batchv1.Job{}
		case "ConfigMap":
			into = &corev1.ConfigMap{}
		case "PersistentVolumeClaim":
			into = &corev1.PersistentVolumeClaim{}
		default:
			t.Errorf("%s: kind %s has no check here", o.file, o.kind)
			continue
		}
		if err := yaml.UnmarshalStrict(o.doc, into); err != nil {
			t.Errorf("%s: %v", o.file, err)
		}
		kinds[o.kind]++
		if job, ok := into.(*batchv1.Job); ok {
			checkJob(t, o.file, job)
		}
	}
	if kinds["Job"] != 3 || kinds["ConfigMap"] != 1 || kinds["PersistentVolumeClaim"] != 1 {
		t.Errorf("got %v, want 3 Jobs, a ConfigMap and a PVC", kinds)
	}
}

func checkJob(t *testing.T, file string, job *batchv1.Job) {
	spec := job.Spec.Template.Spec
	if spec.SecurityContext == nil || spec.SecurityContext.RunAsNonRoot == nil || !*spec.SecurityContext.RunAsNonRoot {
		t.Errorf("%s: the pod must run as non-root", file)
	}
	for _, c := range spec.Containers {
		if c.Resources.Requests.Cpu().IsZero() || c.Resources.Limits.Memory().IsZero() {
			t.Errorf("%s: container %s needs a CPU request and a memory limit", file, c.Name)
		}
		if len(c.Args) == 0 || (c.Args[0] != "run" && c.Args[0] != "report") {
			t.Errorf("%s: container %s args %v, want a replay command", file, c.Name, c.Args)
		}
	}
	if job.Spec.CompletionMode != nil && *job.Spec.CompletionMode == batchv1.IndexedCompletion {
		n := *job.Spec.Completions
		if job.Spec.Parallelism == nil || *job.Spec.Parallelism != n {
			t.Errorf("%s: parallelism must equal completions (%d), so the shards run together", file, n)
		}
		args := spec.Containers[0].Args
		want := "--shards=" + strconv.Itoa(int(n))
		if !slices.Contains(args, want) {
			t.Errorf("%s: args %v, want %s to match completions", file, args, want)
		}
		if !slices.ContainsFunc(args, func(a string) bool { return strings.Contains(a, "$(JOB_COMPLETION_INDEX)") }) {
			t.Errorf("%s: each shard must write its own summary (--out=...$(JOB_COMPLETION_INDEX)...)", file)
		}
	}
}

// TestEveryShardGetsTraffic: the shipped traffic has at least as many
// iterations (sessions, and pairs without one) as the Indexed Job has
// shards, so that no shard is left with nothing to send.
func TestEveryShardGetsTraffic(t *testing.T) {
	var traffic string
	shards := 0
	for _, o := range manifests(t) {
		switch o.kind {
		case "ConfigMap":
			var cm corev1.ConfigMap
			if err := yaml.Unmarshal(o.doc, &cm); err != nil {
				t.Fatal(err)
			}
			traffic = cm.Data["traffic.jsonl"]
		case "Job":
			var job batchv1.Job
			if err := yaml.Unmarshal(o.doc, &job); err != nil {
				t.Fatal(err)
			}
			if job.Spec.CompletionMode != nil && *job.Spec.CompletionMode == batchv1.IndexedCompletion {
				shards = int(*job.Spec.Completions)
			}
		}
	}
	if traffic == "" || shards == 0 {
		t.Fatalf("want the traffic ConfigMap and the Indexed Job, got %d bytes of traffic and %d shards", len(traffic), shards)
	}
	sessions := map[string]bool{}
	iterations := 0
	for i, line := range strings.Split(strings.TrimSpace(traffic), "\n") {
		var p struct {
			Tags struct{ Session string }
		}
		if err := json.Unmarshal([]byte(line), &p); err != nil {
			t.Fatalf("traffic.jsonl:%d: %v", i+1, err)
		}
		switch {
		case p.Tags.Session == "":
			iterations++
		case !sessions[p.Tags.Session]:
			sessions[p.Tags.Session] = true
			iterations++
		}
	}
	if iterations < shards {
		t.Errorf("traffic.jsonl has %d iterations for %d shards: shard %d and above would get none", iterations, shards, iterations)
	}
}

// TestStrictDecodingCatchesTypos: the check above would catch a misspelled
// field.
func TestStrictDecodingCatchesTypos(t *testing.T) {
	doc := []byte("apiVersion: batch/v1\nkind: Job\nspec:\n  completionz: 3\n")
	if err := yaml.UnmarshalStrict(doc, &batchv1.Job{}); err == nil {
		t.Error("a misspelled field decoded")
	}
}

// TestStaticBinary builds replay with CGO off, as the Dockerfile does, and
// checks that it needs no dynamic loader.
func TestStaticBinary(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("static ELF check on Linux only")
	}
	bin := filepath.Join(t.TempDir(), "replay")
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, "./cmd/replay")
	cmd.Dir = "../../.."
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary asks for a dynamic loader")
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("the binary needs %v", libs)
	}
}
