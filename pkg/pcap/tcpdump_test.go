package pcap

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/testutil/h2peer"
	"github.com/replay-dev/replay/internal/testutil/loopback"
	"github.com/replay-dev/replay/pkg/rawhttp"
	"github.com/replay-dev/replay/pkg/run"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// tcpdump captures loopback traffic on the given ports to a pcap file
// until stop is called (which waits for the file to be whole). Without
// tcpdump, or without the right to capture, the test is skipped, loudly,
// unless REPLAY_CI=1 (.ci/run installs tcpdump and runs as root), where
// it fails.
func tcpdump(t *testing.T, path string, ports ...string) (stop func() (dropped int)) {
	t.Helper()
	cannot := func(why string) {
		if os.Getenv("REPLAY_CI") == "1" {
			t.Fatalf("%s, and REPLAY_CI=1: .ci/run installs tcpdump (apt-get install tcpdump) and captures as root", why)
		}
		t.Skipf("SKIPPED: %s (apt-get install tcpdump; capturing needs root or CAP_NET_RAW); CI captures; this test did not run", why)
	}
	bin, err := exec.LookPath("tcpdump")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/tcpdump"); serr != nil { // off a user's PATH on older Debian
			cannot("tcpdump is not installed")
		}
		bin = "/usr/sbin/tcpdump"
	}
	filter := "tcp and (port " + strings.Join(ports, " or port ") + ")"
	// --immediate-mode: packets reach the file as they come, not when the
	// kernel's buffer block is full or times out; -B 65536: a 64 MiB
	// buffer, as loopback packets reach 64 KiB and the default 2 MiB
	// drops them on a busy machine.
	args := []string{"-i", "lo", "-s", "0", "-U", "--immediate-mode", "-B", "65536", "-n", "-w", path}
	if os.Geteuid() == 0 {
		args = append(args, "-Z", "root") // else it writes as user tcpdump, who may not enter the test's directory
	}
	cmd := exec.Command(bin, append(args, filter)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		cannot(fmt.Sprintf("tcpdump does not start: %v", err))
	}
	ready, said := make(chan string, 1), make(chan string, 1)
	go func() {
		var all strings.Builder
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			all.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), "listening on") {
				ready <- ""
			}
		}
		ready <- all.String()
		said <- all.String()
	}()
	select {
	case msg := <-ready:
		if msg != "" {
			cmd.Wait()
			cannot("tcpdump cannot capture on lo: " + strings.TrimSpace(msg))
		}
	case <-time.After(15 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("tcpdump did not start listening within 15s")
	}
	var once sync.Once
	dropped := 0
	stop = func() int {
		once.Do(func() {
			waitStill(path) // what the kernel holds is written first
			cmd.Process.Signal(syscall.SIGINT)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				<-done
			}
			out := <-said
			t.Logf("%s", strings.ReplaceAll(strings.TrimSpace(out), "\n", "; "))
			for _, line := range strings.Split(out, "\n") {
				if n, ok := strings.CutSuffix(line, " packets dropped by kernel"); ok {
					fmt.Sscan(n, &dropped)
				}
			}
		})
		return dropped
	}
	t.Cleanup(func() { stop() })
	return stop
}

// waitStill waits until the file at path stops growing (half a second
// without change), at most 10 s.
func waitStill(path string) {
	var last int64 = -1
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		st, err := os.Stat(path)
		if err == nil && st.Size() == last {
			return
		}
		if err == nil {
			last = st.Size()
		}
	}
}

// port is the port of a "host:port" or URL.
func port(addr string) string {
	addr = strings.TrimPrefix(addr, "http://")
	_, p, _ := net.SplitHostPort(addr)
	return p
}

// exchange1 sends raw HTTP/1.x requests on one connection to addr, each
// after the previous answer (pipelined: all at once), and reads the
// answers; a request with Expect: 100-continue sends its body after the
// 100.
func exchange1(t *testing.T, addr string, pipelined bool, reqs ...string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	if pipelined {
		io.WriteString(c, strings.Join(reqs, ""))
	}
	for _, req := range reqs {
		method, _, _ := strings.Cut(req, " ")
		if !pipelined {
			if head, body, ok := strings.Cut(req, "\r\n\r\n"); ok && strings.Contains(head, "Expect: 100-continue") {
				io.WriteString(c, head+"\r\n\r\n")
				if m, err := rawhttp.Read(br, false, method, nil); err != nil || m.Status != 100 {
					t.Fatalf("want 100 Continue: %v", err)
				}
				io.WriteString(c, body)
			} else {
				io.WriteString(c, req)
			}
		}
		if _, err := rawhttp.ReadResponse(br, method, nil); err != nil {
			t.Fatalf("%q: %v", req, err)
		}
	}
}

// rawCodec passes gRPC messages as bytes (the raw service has no
// generated code).
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return v.([]byte), nil }
func (rawCodec) Unmarshal(data []byte, v any) error {
	*v.(*[]byte) = append([]byte(nil), data...)
	return nil
}
func (rawCodec) Name() string { return "proto" }

// TestTcpdump: real traffic on loopback (HTTP/1.1 from raw sockets to Go's
// server: keep-alive, pipelining, chunked, 100-continue, HEAD, HTTP/1.0;
// h2c from Go's client, streams at once; gRPC from grpc-go, unary and
// streaming), captured by tcpdump, imported: tshark finds the same
// requests; replayed to servers on loopback, the HTTP/1.1 requests arrive
// byte for byte as the clients sent them, the h2c ones with their targets
// and bodies, the gRPC calls succeed.
func TestTcpdump(t *testing.T) {
	h1 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %s %d", r.Method, r.RequestURI, len(body))
	}))
	defer h1.Close()
	h2url := h2peer.H2CServer(t, h2peer.NewSeen())
	healthAddr, rawAddr, _ := h2peer.GRPCServers(t)
	var path string
	var sent []string
	for attempt := 1; ; attempt++ { // again when the kernel dropped packets (a busy machine)
		path = filepath.Join(t.TempDir(), "capture.pcap")
		stop := tcpdump(t, path, port(h1.URL), port(h2url), port(healthAddr), port(rawAddr))
		sent = sendTraffic(t, strings.TrimPrefix(h1.URL, "http://"), h2url, healthAddr, rawAddr)
		dropped := stop()
		if dropped == 0 {
			break
		}
		if attempt == 3 {
			t.Fatalf("tcpdump dropped %d packets at each of 3 attempts: the machine is too busy to capture", dropped)
		}
	}

	capture, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r := importCaptures(t, Options{}, "capture.pcap", capture)
	if r.err != nil {
		t.Fatal(r.err)
	}
	t.Logf("import: %s", r.st.Summary())
	if r.st.Kinds["HTTP/1.1 IN"] != len(sent)-1 || r.st.Kinds["HTTP/1.0 IN"] != 1 || r.st.Kinds["HTTP/2 IN"] != 3 || r.st.Kinds["gRPC IN"] != 3 || r.lost != 0 || r.st.NoAnswer != 0 {
		t.Errorf("import: %s; skips %q", r.st.Summary(), r.skips)
	}

	// An independent reader finds the same requests.
	var got []string
	for _, p := range r.pairs {
		got = append(got, p.Method+" "+p.URI)
	}
	slices.Sort(got)
	portOf := func(addr string) uint16 {
		var n uint16
		fmt.Sscan(port(addr), &n)
		return n
	}
	if want := tsharkRequests(t, path, portOf(h2url), portOf(healthAddr), portOf(rawAddr)); !slices.Equal(got, want) {
		t.Errorf("imported %q\ntshark finds %q", got, want)
	}

	// Replayed, the HTTP/1.x requests arrive as the clients sent them.
	srv := loopback.NewRaw(t, nil)
	sum := replay(t, r.out, srv.URL(), func(o *run.Options) { o.Filter.Keep = []string{"host=shop.example"} })
	srv.Close()
	var want []string
	for _, req := range sent {
		m, err := rawhttp.Read(bufio.NewReader(strings.NewReader(req)), true, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, onTheWire(m, srv.Addr()))
	}
	arrived := srv.Requests()
	if sum.Requests != int64(len(sent)) || len(arrived) != len(sent) {
		t.Errorf("%d requests sent, %d arrived; want %d", sum.Requests, len(arrived), len(sent))
	}
	for _, a := range arrived {
		if !slices.Contains(want, string(a)) {
			t.Errorf("arrived, as no client sent it:\n%q", a)
		}
	}

	// h2c: targets and bodies.
	seen2 := h2peer.NewSeen()
	h2url2 := h2peer.H2CServer(t, seen2)
	sum = replay(t, r.out, h2url2, func(o *run.Options) {
		o.HTTP.H2C = true
		o.Filter.Keep = []string{"host=" + strings.TrimPrefix(h2url, "http://")}
	})
	for i := range 3 {
		uri := fmt.Sprintf("/h2/%d?q=%d", i, i)
		if seen2.URIs[uri] != 1 || seen2.Bodies[uri] != strings.Repeat("h", 1000*i) {
			t.Errorf("%s arrived %d times, body of %d bytes", uri, seen2.URIs[uri], len(seen2.Bodies[uri]))
		}
	}
	if sum.Succeeded != 3 {
		t.Errorf("h2c: %d succeeded, want 3", sum.Succeeded)
	}

	// gRPC: the calls succeed against fresh servers.
	health2, raw2, _ := h2peer.GRPCServers(t)
	for addr, want := range map[string]int64{healthAddr: 2, rawAddr: 1} {
		to := health2
		if addr == rawAddr {
			to = raw2
		}
		sum := replay(t, r.out, "http://"+to, func(o *run.Options) {
			o.HTTP.H2C = true
			o.Filter.Keep = []string{"host=" + addr}
		})
		if sum.Requests != want || sum.Succeeded != want || sum.GRPCStatus["OK"] != want {
			t.Errorf("gRPC to %s: %d requests, %d succeeded, %v; want %d OK", addr, sum.Requests, sum.Succeeded, sum.GRPCStatus, want)
		}
	}
}

// sendTraffic sends TestTcpdump's traffic: HTTP/1.x from raw sockets
// (keep-alive, pipelining, chunked, 100-continue, HEAD, HTTP/1.0) to
// h1addr, h2c from Go's client to h2url (streams at once), gRPC from
// grpc-go to the health and the raw services. It returns the HTTP/1.x
// requests, as sent.
func sendTraffic(t *testing.T, h1addr, h2url, healthAddr, rawAddr string) []string {
	host := "Host: shop.example\r\n"
	keepAlive := []string{
		"GET /a//b/%2F?x=1&y=%zz HTTP/1.1\r\n" + host + "X-Case: Kept\r\nx-case: lower\r\nAccept: */*\r\n\r\n",
		"POST /orders HTTP/1.1\r\n" + host + "Content-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"id\": 42}\n",
		"POST /chunked HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n7\r\n, world\r\n0\r\n\r\n",
		"PUT /expect HTTP/1.1\r\n" + host + "Content-Length: 4\r\nExpect: 100-continue\r\n\r\ndata",
		"HEAD /head HTTP/1.1\r\n" + host + "\r\n",
		"POST /big HTTP/1.1\r\n" + host + "Content-Length: 100000\r\n\r\n" + strings.Repeat("b", 100000),
	}
	pipelined := []string{"GET /p1 HTTP/1.1\r\n" + host + "\r\n", "GET /p2 HTTP/1.1\r\n" + host + "\r\n"}
	closing := []string{"GET /old HTTP/1.0\r\n" + host + "\r\n"}
	exchange1(t, h1addr, false, keepAlive...)
	exchange1(t, h1addr, true, pipelined...)
	exchange1(t, h1addr, false, closing...)

	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	client := &http.Client{Transport: &http.Transport{Protocols: &p}, Timeout: 10 * time.Second}
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() {
			res, err := client.Post(fmt.Sprintf("%s/h2/%d?q=%d", h2url, i, i), "text/plain", strings.NewReader(strings.Repeat("h", 1000*i)))
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
		})
	}
	wg.Wait()
	client.CloseIdleConnections()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	hc, err := grpc.NewClient(healthAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := healthpb.NewHealthClient(hc).Check(ctx, &healthpb.HealthCheckRequest{Service: "svc"}); err != nil {
			t.Fatal(err)
		}
	}
	hc.Close()
	rc, err := grpc.NewClient(rawAddr, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithDefaultCallOptions(grpc.ForceCodec(rawCodec{})))
	if err != nil {
		t.Fatal(err)
	}
	st, err := rc.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, "/test.Raw/Server")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SendMsg([]byte("in")); err != nil {
		t.Fatal(err)
	}
	st.CloseSend()
	for range 3 {
		var got []byte
		if err := st.RecvMsg(&got); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.RecvMsg(new([]byte)); err != io.EOF {
		t.Fatalf("the stream's end: %v", err)
	}
	rc.Close()
	return append(append(slices.Clone(keepAlive), pipelined...), closing...)
}
