package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/testutil/fixture"
	"github.com/replay-dev/replay/pkg/mock"
	"github.com/replay-dev/replay/pkg/report"
)

// background runs a command until the test stops it (stop waits for it
// to return its exit code). addr is the first address its log names under
// key, once it is serving.
type background struct {
	cancel context.CancelFunc
	done   chan int
	stderr *fixture.Buffer
	stdout *fixture.Buffer
}

func runBackground(t *testing.T, key string, args ...string) (*background, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	b := &background{cancel: cancel, done: make(chan int, 1), stderr: &fixture.Buffer{}, stdout: &fixture.Buffer{}}
	go func() {
		b.done <- Main(ctx, append([]string{"--log-format", "json"}, args...), strings.NewReader(""), b.stdout, b.stderr)
	}()
	re := regexp.MustCompile(`"` + key + `":\[?"([0-9.:]+)"`)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if m := re.FindStringSubmatch(b.stderr.String()); m != nil {
			t.Cleanup(func() { b.stop() })
			return b, m[1]
		}
		select {
		case code := <-b.done:
			t.Fatalf("%v exited %d:\n%s", args, code, b.stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	cancel()
	t.Fatalf("%v never said where it listens:\n%s", args, b.stderr.String())
	return nil, ""
}

func (b *background) stop() int {
	b.cancel()
	select {
	case code, ok := <-b.done:
		if ok {
			close(b.done)
			return code
		}
		return -1
	case <-time.After(15 * time.Second):
		return -2
	}
}

// app is the service under test: POST /checkout charges a payment
// provider over HTTPS through its HTTPS_PROXY (a fresh idempotency key each
// time, as real clients do), then polls the charge's job until done.
type app struct {
	*httptest.Server
	proxy  atomic.Pointer[url.URL]
	caFile string
	depURL string
}

func newApp(t *testing.T, depURL, caFile string) *app {
	a := &app{caFile: caFile, depURL: depURL}
	a.Server = httptest.NewServer(http.HandlerFunc(a.checkout))
	t.Cleanup(a.Close)
	return a
}

// client trusts the CA the recorder wrote (as SSL_CERT_FILE would make a
// service trust it) and goes through the current proxy.
func (a *app) client() (*http.Client, error) {
	pemBytes, err := os.ReadFile(a.caFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pemBytes)
	proxy := a.proxy.Load()
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		Proxy: func(*http.Request) (*url.URL, error) { return proxy, nil }, TLSClientConfig: &tls.Config{RootCAs: pool}}}, nil
}

func (a *app) checkout(w http.ResponseWriter, r *http.Request) {
	var in struct{ Amount int }
	json.NewDecoder(r.Body).Decode(&in)
	c, err := a.client()
	if err != nil {
		http.Error(w, err.Error(), 500)
		return
	}
	key := make([]byte, 16)
	rand.Read(key)
	body := fmt.Sprintf(`{"amount":%d,"currency":"eur","idempotency_key":"%x-%x-%x-%x-%x"}`, in.Amount, key[:4], key[4:6], key[6:8], key[8:10], key[10:])
	resp, err := c.Post(a.depURL+"/v1/charges", "application/json", strings.NewReader(body))
	if err != nil {
		http.Error(w, "charge: "+err.Error(), http.StatusBadGateway)
		return
	}
	var charge struct{ ID, Status string }
	json.NewDecoder(resp.Body).Decode(&charge)
	resp.Body.Close()
	polls := 0
	for charge.Status != "succeeded" && polls < 10 {
		polls++
		resp, err := c.Get(a.depURL + "/v1/jobs/" + charge.ID)
		if err != nil {
			http.Error(w, "poll: "+err.Error(), http.StatusBadGateway)
			return
		}
		json.NewDecoder(resp.Body).Decode(&charge)
		resp.Body.Close()
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"charge":%q,"status":%q,"polls":%d}`, charge.ID, charge.Status, polls)
}

// dependency is the payment provider: each charge is a job that is
// running for two polls, then succeeded. It counts what it sees.
func dependency(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var seen atomic.Int64
	var mu sync.Mutex
	polls := map[string]int{}
	n := 0
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Add(1)
		mu.Lock()
		defer mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.Method == "POST" {
			n++
			fmt.Fprintf(w, `{"id":"ch_%d","status":"pending"}`, n)
			return
		}
		id := strings.TrimPrefix(r.URL.Path, "/v1/jobs/")
		polls[id]++
		state := "running"
		if polls[id] >= 3 {
			state = "succeeded"
		}
		fmt.Fprintf(w, `{"id":%q,"status":%q}`, id, state)
	}))
	t.Cleanup(srv.Close)
	return srv, &seen
}

// TestMockWholeLoop is the loop docs/mock.md shows: a service's inbound
// traffic recorded by replay record, its calls to a dependency over HTTPS
// (HTTPS_PROXY) by replay record --forward with the CA it generates; the
// dependency stopped; the inbound traffic replayed with --compare body
// while replay mock answers for the dependency: every answer matches the
// recording, and the stopped dependency sees nothing.
func TestMockWholeLoop(t *testing.T) {
	dir := t.TempDir()
	caDir := filepath.Join(dir, "ca")
	inbound, outbound := filepath.Join(dir, "inbound.jsonl"), filepath.Join(dir, "outbound.jsonl")
	dep, seen := dependency(t)
	depCA := filepath.Join(dir, "dependency.pem")
	os.WriteFile(depCA, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: dep.Certificate().Raw}), 0o644)
	a := newApp(t, dep.URL, filepath.Join(caDir, "ca.pem"))

	fwd, fwdAddr := runBackground(t, "listen", "record", "--forward", "--listen", "127.0.0.1:0", "--ca-out", caDir, "--upstream-ca", depCA, "--allow-upstream", "127.0.0.0/8", "-o", outbound)
	a.proxy.Store(&url.URL{Scheme: "http", Host: fwdAddr})
	rev, revAddr := runBackground(t, "listen", "record", "--listen", "127.0.0.1:0", "--upstream", a.URL, "-o", inbound)
	const checkouts = 5
	for i := range checkouts {
		resp, err := http.Post("http://"+revAddr+"/checkout", "application/json", strings.NewReader(fmt.Sprintf(`{"amount":%d}`, 100+i)))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := fmt.Sprintf(`{"charge":"ch_%d","status":"succeeded","polls":3}`, i+1); string(b) != want {
			t.Fatalf("recording: checkout %d answered %s, want %s", i, b, want)
		}
	}
	if code := rev.stop(); code != 0 {
		t.Fatalf("record exited %d:\n%s", code, rev.stderr.String())
	}
	if code := fwd.stop(); code != 0 {
		t.Fatalf("record --forward exited %d:\n%s", code, fwd.stderr.String())
	}
	for name, mode := range map[string]os.FileMode{"ca.pem": 0o644, "ca-key.pem": 0o600} {
		if fi, err := os.Stat(filepath.Join(caDir, name)); err != nil || fi.Mode().Perm() != mode {
			t.Errorf("%s: %v, %v; want mode %v", name, fi, err, mode)
		}
	}
	rec, _ := os.ReadFile(outbound)
	if n := strings.Count(string(rec), `"direction":"OUT"`); n != checkouts*4 {
		t.Fatalf("%d OUT pairs recorded, want %d:\n%s", n, checkouts*4, rec)
	}

	dep.Close()
	before := seen.Load()
	mockOut := filepath.Join(dir, "mock.json")
	mk, mockAddr := runBackground(t, "addrs", "mock", "-f", outbound, "--listen", "127.0.0.1:0",
		"--ca-cert", filepath.Join(caDir, "ca.pem"), "--ca-key", filepath.Join(caDir, "ca-key.pem"), "--latency", "0", "--out", mockOut)
	a.proxy.Store(&url.URL{Scheme: "http", Host: mockAddr})
	runOut := filepath.Join(dir, "run.json")
	r := runMain(t, context.Background(), "", "run", "-f", inbound, "--target", a.URL, "--compare", "body", "--out", runOut, "-q")
	if r.code != 0 {
		t.Fatalf("run exited %d:\n%s", r.code, r.stderr)
	}
	if code := mk.stop(); code != 0 {
		t.Fatalf("mock exited %d:\n%s", code, mk.stderr.String())
	}
	var sum report.Summary
	raw, _ := os.ReadFile(runOut)
	if err := json.Unmarshal(raw, &sum); err != nil || sum.Compare == nil {
		t.Fatalf("run summary: %v\n%s", err, raw)
	}
	if c := sum.Compare; c.Compared != checkouts || c.Matched != checkouts || sum.Requests != checkouts || sum.Failed != 0 {
		t.Errorf("replayed %d requests, %d failed; compared %d, matched %d: want all %d to match the recording\n%s",
			sum.Requests, sum.Failed, c.Compared, c.Matched, checkouts, mk.stdout.String())
	}
	if got := seen.Load(); got != before {
		t.Errorf("the stopped dependency saw %d more requests", got-before)
	}
	var mr mock.Report
	raw, _ = os.ReadFile(mockOut)
	if err := json.Unmarshal(raw, &mr); err != nil {
		t.Fatalf("mock --out: %v\n%s", err, raw)
	}
	if mr.Hits != checkouts*4 || mr.Misses != 0 || mr.HitsLoose != checkouts || mr.UnusedAnswers != 0 {
		t.Errorf("mock: %d hits (%d ignoring rotating keys), %d misses, %d unused answers; want %d hits, %d loose, none missed or unused",
			mr.Hits, mr.HitsLoose, mr.Misses, mr.UnusedAnswers, checkouts*4, checkouts)
	}
	if !strings.Contains(mk.stdout.String(), "20 hits (5 with rotating values ignored), 0 misses") {
		t.Errorf("mock's text report:\n%s", mk.stdout.String())
	}
}

// TestMockSignal: SIGTERM stops the mock (exit 143) after it printed its
// report and wrote --out; record --forward flushes its file the same way.
func TestMockSignal(t *testing.T) {
	dir := t.TempDir()
	traffic := filepath.Join(dir, "out.jsonl")
	os.WriteFile(traffic, []byte(`{"direction":"OUT","http":{"req":{"method":"GET","uri":"/x","host":"dep"},"res":{"statusCode":200,"body":"x"}}}`+"\n"), 0o644)
	out := filepath.Join(dir, "mock.json")
	for _, tt := range []struct {
		name  string
		args  []string
		check func(stdout string) error
	}{
		{"mock", []string{"mock", "-f", traffic, "--listen", "127.0.0.1:0", "--out", out}, func(stdout string) error {
			raw, err := os.ReadFile(out)
			if err != nil || !strings.Contains(string(raw), `"hits": 1`) || !strings.Contains(stdout, "1 hit") {
				return fmt.Errorf("--out %s (%v), stdout %s", raw, err, stdout)
			}
			return nil
		}},
		{"record --forward", []string{"record", "--forward", "--listen", "127.0.0.1:0", "--ca-out", filepath.Join(dir, "ca"), "-o", filepath.Join(dir, "rec.jsonl")}, func(string) error {
			if _, err := os.Stat(filepath.Join(dir, "rec.jsonl")); err != nil {
				return err
			}
			return nil
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], append(tt.args, "--log-format", "json")...)
			cmd.Env = append(os.Environ(), "REPLAY_BE_MAIN=1")
			var stdout bytes.Buffer
			stderr := &fixture.Buffer{}
			cmd.Stdout, cmd.Stderr = &stdout, stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			re := regexp.MustCompile(`"(?:listen|addrs)":\[?"([0-9.:]+)"`)
			var addr string
			for deadline := time.Now().Add(10 * time.Second); addr == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				if m := re.FindStringSubmatch(stderr.String()); m != nil {
					addr = m[1]
				}
			}
			if addr == "" {
				cmd.Process.Kill()
				t.Fatalf("not serving:\n%s", stderr.String())
			}
			if tt.name == "mock" {
				resp, err := http.Get("http://" + addr + "/x")
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
			}
			cmd.Process.Signal(syscall.SIGTERM)
			err := cmd.Wait()
			if code := cmd.ProcessState.ExitCode(); code != 143 {
				t.Errorf("exit %d (%v), want 143:\n%s", code, err, stderr.String())
			}
			if err := tt.check(stdout.String()); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestMockFlagsRefused: the command refuses what it cannot serve, naming
// the flag, and serves nothing.
func TestMockFlagsRefused(t *testing.T) {
	busy := newSUT(t, 0, 200)
	traffic := filepath.Join(t.TempDir(), "t.jsonl")
	os.WriteFile(traffic, []byte(`{"http":{"req":{"method":"GET","uri":"/in","host":"svc"},"res":{"statusCode":200}}}`+"\n"), 0o644)
	addr := strings.TrimPrefix(busy.URL, "http://")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"mock", "-f", traffic}, "no OUT pair to answer with (the file holds 1 IN pairs and 0 OUT"},
		{[]string{"mock", "-f", traffic, "--keep", "direction=IN", "--listen", addr}, "--listen " + addr + ": listen tcp"},
		{[]string{"mock", "-f", traffic, "--keep", "direction=IN", "--listen", "127.0.0.1:0", "--ca-cert", traffic}, "--ca-cert without --ca-key"},
		{[]string{"mock", "-f", traffic, "--out", traffic}, "--out " + traffic + ": the same file as --file"},
		{[]string{"mock", "-f", traffic, "--keep", "direction=IN", "--listen", "0.0.0.0:0"}, "--listen 0.0.0.0:0 listens beyond loopback"},
		{[]string{"mock", "-f", traffic, "--keep", "direction=IN", "--serve", "svc=0.0.0.0:0"}, "give --allow-remote"},
		{[]string{"mock", "-f", traffic, "--keep", "direction=IN", "--allow-upstream", "nonsense"}, "--allow-upstream \"nonsense\": want a CIDR prefix"},
		{[]string{"record", "--forward", "--listen", "127.0.0.1:0"}, "--forward: HTTPS_PROXY calls arrive as TLS inside CONNECT tunnels"},
		{[]string{"record", "--forward", "--upstream", "http://x", "--ca-out", t.TempDir()}, "--upstream: a forward proxy sends each call to the host it names"},
		{[]string{"record", "--upstream", "http://x", "--ca-out", t.TempDir()}, "only with --forward"},
	} {
		r := runMain(t, context.Background(), "", tt.args...)
		if r.code != 1 || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("%v: exit %d, %s\nwant %q", tt.args, r.code, r.stderr, tt.want)
		}
	}
}
