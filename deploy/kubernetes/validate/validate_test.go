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
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
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
		case "Deployment":
			into = &appsv1.Deployment{}
		case "Service":
			into = &corev1.Service{}
		default:
			t.Errorf("%s: kind %s has no check here", o.file, o.kind)
			continue
		}
		if err := yaml.UnmarshalStrict(o.doc, into); err != nil {
			t.Errorf("%s: %v", o.file, err)
		}
		kinds[o.kind]++
		switch v := into.(type) {
		case *batchv1.Job:
			checkJob(t, o.file, v)
		case *appsv1.Deployment:
			checkMockSidecar(t, o.file, v)
		}
	}
	if kinds["Job"] != 3 || kinds["ConfigMap"] != 2 || kinds["PersistentVolumeClaim"] != 1 || kinds["Deployment"] != 1 || kinds["Service"] != 1 {
		t.Errorf("got %v, want 3 Jobs, 2 ConfigMaps, a PVC, and the mock sidecar's Deployment and Service", kinds)
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
			if d, ok := cm.Data["traffic.jsonl"]; ok {
				traffic = d
			}
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

// checkMockSidecar: the mock is a native sidecar (an init container that
// keeps running, so it serves before the service starts) running replay
// mock with the CA's key; the service's HTTP_PROXY and HTTPS_PROXY point
// at the mock's --listen, NO_PROXY keeps the cluster's own traffic off it,
// and the service trusts the CA's certificate without ever seeing its key.
func checkMockSidecar(t *testing.T, file string, d *appsv1.Deployment) {
	spec := d.Spec.Template.Spec
	if spec.SecurityContext == nil || spec.SecurityContext.RunAsNonRoot == nil || !*spec.SecurityContext.RunAsNonRoot {
		t.Errorf("%s: the pod must run as non-root", file)
	}
	if len(spec.InitContainers) != 1 || len(spec.Containers) != 1 {
		t.Fatalf("%s: want the mock as the one init container and the service as the one container", file)
	}
	mock, svc := spec.InitContainers[0], spec.Containers[0]
	if mock.RestartPolicy == nil || *mock.RestartPolicy != corev1.ContainerRestartPolicyAlways || mock.StartupProbe == nil {
		t.Errorf("%s: the mock must be a native sidecar (restartPolicy: Always) with a startup probe", file)
	}
	if len(mock.Args) == 0 || mock.Args[0] != "mock" {
		t.Fatalf("%s: the sidecar's args %v, want replay mock", file, mock.Args)
	}
	flags := map[string]string{}
	for _, a := range mock.Args[1:] {
		k, v, _ := strings.Cut(a, "=")
		flags[k] = v
	}
	_, port, _ := strings.Cut(flags["--listen"], ":")
	if flags["--ca-cert"] == "" || flags["--ca-key"] == "" || port == "" || strconv.Itoa(int(mock.StartupProbe.TCPSocket.Port.IntVal)) != port {
		t.Errorf("%s: the mock needs --listen (probed), --ca-cert and --ca-key: %v", file, mock.Args)
	}
	env := map[string]string{}
	for _, e := range svc.Env {
		env[e.Name] = e.Value
	}
	for _, name := range []string{"HTTP_PROXY", "HTTPS_PROXY"} {
		if env[name] != "http://127.0.0.1:"+port {
			t.Errorf("%s: the service's %s is %q, want the mock at http://127.0.0.1:%s", file, name, env[name], port)
		}
	}
	if !strings.Contains(env["NO_PROXY"], ".svc") || !strings.Contains(env["NO_PROXY"], "localhost") {
		t.Errorf("%s: NO_PROXY %q must keep the cluster's Services and the pod itself off the mock", file, env["NO_PROXY"])
	}
	mounts := func(c corev1.Container) map[string]string {
		m := map[string]string{}
		for _, vm := range c.VolumeMounts {
			m[vm.Name] = vm.MountPath
		}
		return m
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = v
	}
	trusted := false
	for name, path := range mounts(svc) {
		v := volumes[name]
		if v.Secret == nil {
			continue
		}
		if len(v.Secret.Items) != 1 || v.Secret.Items[0].Key != "ca.pem" {
			t.Errorf("%s: the service mounts secret %s whole: it must get the CA certificate alone, never the key", file, v.Secret.SecretName)
		}
		trusted = trusted || env["SSL_CERT_FILE"] == path+"/"+v.Secret.Items[0].Path
	}
	if !trusted {
		t.Errorf("%s: the service's SSL_CERT_FILE %q is not the mounted CA certificate", file, env["SSL_CERT_FILE"])
	}
	for name, path := range mounts(mock) {
		if v := volumes[name]; v.Secret != nil && flags["--ca-key"] != path+"/ca-key.pem" {
			t.Errorf("%s: --ca-key %s is not in the mounted secret at %s", file, flags["--ca-key"], path)
		}
	}
}

// TestMockTrafficIsOUT: the mock's example traffic holds the service's
// recorded calls (direction OUT), over https (the CA terminates them).
func TestMockTrafficIsOUT(t *testing.T) {
	n := 0
	for _, o := range manifests(t) {
		var cm corev1.ConfigMap
		if o.kind != "ConfigMap" || yaml.Unmarshal(o.doc, &cm) != nil || cm.Data["outbound.jsonl"] == "" {
			continue
		}
		for i, line := range strings.Split(strings.TrimSpace(cm.Data["outbound.jsonl"]), "\n") {
			var p struct {
				Direction, L7protocol string
				HTTP                  struct{ Res struct{ StatusCode int } }
			}
			if err := json.Unmarshal([]byte(line), &p); err != nil {
				t.Fatalf("outbound.jsonl:%d: %v", i+1, err)
			}
			if p.Direction != "OUT" || p.L7protocol != "https" || p.HTTP.Res.StatusCode == 0 {
				t.Errorf("outbound.jsonl:%d: direction %q, l7protocol %q, status %d: want OUT https pairs with their answers", i+1, p.Direction, p.L7protocol, p.HTTP.Res.StatusCode)
			}
			n++
		}
	}
	if n == 0 {
		t.Error("no outbound.jsonl in the manifests")
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

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// replayBinary builds replay with CGO off, as the Dockerfile does, once.
func replayBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "replay-validate")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "replay")
		cmd := exec.Command("go", "build", "-trimpath", "-o", binPath, "./cmd/replay")
		cmd.Dir = "../../.."
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// TestStaticBinary checks that the binary built as the Dockerfile builds
// it needs no dynamic loader.
func TestStaticBinary(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("static ELF check on Linux only")
	}
	f, err := elf.Open(replayBinary(t))
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

// TestMockSidecarArgsRun runs the sidecar's replay mock, its args as the
// manifest gives them (paths moved to a temporary directory, addresses to
// free loopback ports), on the manifest's traffic and a CA made as
// record --forward makes it: it serves, and stops with its report.
func TestMockSidecarArgsRun(t *testing.T) {
	var args []string
	var traffic string
	for _, o := range manifests(t) {
		switch o.kind {
		case "ConfigMap":
			var cm corev1.ConfigMap
			yaml.Unmarshal(o.doc, &cm)
			if d, ok := cm.Data["outbound.jsonl"]; ok {
				traffic = d
			}
		case "Deployment":
			var d appsv1.Deployment
			yaml.Unmarshal(o.doc, &d)
			args = d.Spec.Template.Spec.InitContainers[0].Args
		}
	}
	dir := t.TempDir()
	bin := replayBinary(t)
	os.MkdirAll(filepath.Join(dir, "traffic"), 0o755)
	os.WriteFile(filepath.Join(dir, "traffic", "outbound.jsonl"), []byte(traffic), 0o644)
	// The CA as record --forward --ca-out writes it.
	ca := exec.Command(bin, "record", "--forward", "--listen", "127.0.0.1:0", "--ca-out", filepath.Join(dir, "ca"), "--duration", "1ms", "-o", filepath.Join(dir, "rec.jsonl"))
	if out, err := ca.CombinedOutput(); err != nil {
		t.Fatalf("record --forward --ca-out: %v\n%s", err, out)
	}
	os.MkdirAll(filepath.Join(dir, "results"), 0o755)
	var run []string
	for _, a := range args {
		k, v, _ := strings.Cut(a, "=")
		switch {
		case k == "--listen" || k == "--metrics":
			v = "127.0.0.1:0"
		case strings.HasPrefix(v, "/"):
			v = filepath.Join(dir, v)
		}
		if strings.HasPrefix(a, "--") {
			a = k + "=" + v
		}
		run = append(run, a)
	}
	out, err := exec.Command(bin, append(run, "--duration=300ms")...).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "answered from 3 pairs") {
		t.Fatalf("replay %v: %v\n%s", run, err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "results", "mock.json")); err != nil {
		t.Errorf("--out: %v", err)
	}
}
