package listen

import (
	"bytes"
	"errors"
	"net"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// flaky is a listener whose Accept fails with errs, in order, then hands
// out conn, then fails with net.ErrClosed.
type flaky struct {
	errs []error
	conn net.Conn
}

func (f *flaky) Accept() (net.Conn, error) {
	if len(f.errs) > 0 {
		err := f.errs[0]
		f.errs = f.errs[1:]
		return nil, err
	}
	if f.conn != nil {
		c := f.conn
		f.conn = nil
		return c, nil
	}
	return nil, net.ErrClosed
}
func (f *flaky) Close() error   { return nil }
func (f *flaky) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

func TestAcceptOutlivesResourceErrors(t *testing.T) {
	emfile := &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	errs := []error{emfile, emfile, emfile, emfile, emfile, emfile, emfile, emfile, emfile,
		&net.OpError{Op: "accept", Err: syscall.ENFILE}, &net.OpError{Op: "accept", Err: syscall.ECONNABORTED}}
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	var logs bytes.Buffer
	l := Resilient(&flaky{errs: errs, conn: a}, "mock", zerolog.New(&logs))
	var slept []time.Duration
	clock := time.Unix(0, 0)
	l.sleep = func(d time.Duration) { slept = append(slept, d); clock = clock.Add(d) }
	l.now = func() time.Time { return clock }

	c, err := l.Accept()
	if err != nil || c != a {
		t.Fatalf("Accept = %v, %v; want the connection after the resource errors", c, err)
	}
	want := []time.Duration{5, 10, 20, 40, 80, 160, 320, 640, 1000, 1000, 1000}
	if len(slept) != len(want) {
		t.Fatalf("slept %v, want %v ms", slept, want)
	}
	for i, d := range slept {
		if d != want[i]*time.Millisecond {
			t.Errorf("backoff %d: %v, want %v", i, d, want[i]*time.Millisecond)
		}
	}
	if got := l.Retried(); got != int64(len(errs)) {
		t.Errorf("Retried = %d, want %d", got, len(errs))
	}
	// Logged once a second at most: at 0 s, then at the first error a
	// second or more later (after 5+…+640 ms = 1.275 s, with the eight
	// since), then at 2.275 s and 3.275 s, after each 1 s wait.
	lines := strings.Count(logs.String(), "\n")
	if lines != 4 || !strings.Contains(logs.String(), `"errors":8`) || !strings.Contains(logs.String(), `"errors":`) {
		t.Errorf("logged %d lines, want 3 with a count:\n%s", lines, logs.String())
	}
	if _, err := l.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept after close = %v, want net.ErrClosed (a permanent error ends the loop)", err)
	}
}

func TestTemporary(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"EMFILE", &net.OpError{Op: "accept", Err: os.NewSyscallError("accept4", syscall.EMFILE)}, true},
		{"ENFILE", syscall.ENFILE, true},
		{"ENOBUFS", syscall.ENOBUFS, true},
		{"ECONNABORTED", syscall.ECONNABORTED, true},
		{"closed", net.ErrClosed, false},
		{"closed, wrapped", &net.OpError{Op: "accept", Err: net.ErrClosed}, false},
		{"other", errors.New("boom"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Temporary(tc.err); got != tc.want {
				t.Errorf("Temporary(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

func TestBindBeyondLoopback(t *testing.T) {
	log := zerolog.Nop()
	for _, addr := range []string{"0.0.0.0:0", ":0"} {
		_, err := Bind(addr, "--listen", Policy{}, "mock", log)
		if err == nil || !strings.Contains(err.Error(), "--allow-remote") || !strings.Contains(err.Error(), "--listen "+addr) {
			t.Errorf("Bind(%q) without AllowRemote = %v, want a refusal naming --listen and --allow-remote", addr, err)
		}
	}
	ln, err := Bind("0.0.0.0:0", "--listen", Policy{AllowRemote: true}, "mock", log)
	if err != nil {
		t.Fatalf("Bind with AllowRemote: %v", err)
	}
	if !ln.filter {
		t.Error("bound beyond loopback without AllowPublicClients: want public clients closed")
	}
	ln.Close()
	ln, err = Bind("127.0.0.1:0", "--listen", Policy{}, "mock", log)
	if err != nil {
		t.Fatalf("Bind on loopback: %v", err)
	}
	defer ln.Close()
	if ln.filter {
		t.Error("bound on loopback: nothing to filter")
	}
	// A busy port names the flag.
	_, err = Bind(ln.Addr().String(), "--listen", Policy{}, "mock", log)
	if err == nil || !strings.HasPrefix(err.Error(), "--listen "+ln.Addr().String()) {
		t.Errorf("Bind on a busy port = %v, want an error naming --listen and the address", err)
	}
}

func TestPublicClientsClosed(t *testing.T) {
	for _, tc := range []struct {
		addr   string
		public bool
	}{
		{"127.0.0.1:1", false}, {"10.1.2.3:1", false}, {"192.168.0.9:1", false}, {"172.16.0.1:1", false},
		{"100.64.1.1:1", false}, {"169.254.1.1:1", false}, {"[::1]:1", false}, {"[fd00::1]:1", false},
		{"[fe80::1]:1", false}, {"8.8.8.8:1", true}, {"[2001:4860::8888]:1", true}, {"[::ffff:1.1.1.1]:1", true},
	} {
		a, _ := net.ResolveTCPAddr("tcp", tc.addr)
		if got := public(a); got != tc.public {
			t.Errorf("public(%s) = %v, want %v", tc.addr, got, tc.public)
		}
	}
}

func TestUpstreams(t *testing.T) {
	if _, err := ParseUpstreams([]string{"127.0.0.0/33"}); err == nil || !strings.Contains(err.Error(), "--allow-upstream") {
		t.Errorf("ParseUpstreams(127.0.0.0/33) = %v, want an error naming --allow-upstream", err)
	}
	pre, err := ParseUpstreams([]string{"127.0.0.0/8", "::1, 169.254.169.254"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		addr    string
		refused bool
		policy  Policy
	}{
		{"127.0.0.1:80", true, Policy{}},
		{"[::1]:80", true, Policy{}},
		{"169.254.169.254:80", true, Policy{}}, // a cloud's metadata service
		{"0.0.0.0:80", true, Policy{}},
		{"[::ffff:127.0.0.1]:80", true, Policy{}},
		{"10.0.0.1:80", false, Policy{}},
		{"93.184.216.34:443", false, Policy{}},
		{"127.0.0.1:80", false, Policy{Upstreams: pre}},
		{"[::1]:80", false, Policy{Upstreams: pre}},
		{"169.254.169.254:80", false, Policy{Upstreams: pre}},
		{"169.254.1.1:80", true, Policy{Upstreams: pre}},
	} {
		err := tc.policy.Control("tcp", tc.addr, nil)
		if (err != nil) != tc.refused {
			t.Errorf("Control(%s, %v) = %v, want refused %v", tc.addr, tc.policy.Upstreams, err, tc.refused)
		}
		if err != nil && !strings.Contains(err.Error(), "--allow-upstream") {
			t.Errorf("Control(%s): %v, want the flag named", tc.addr, err)
		}
	}
	// The check is made on the address dialed: a name that resolves to
	// loopback is refused as loopback is.
	srv, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Addr().String())
	d := net.Dialer{Control: Policy{}.Control, Timeout: 2 * time.Second}
	_, err = d.Dial("tcp", net.JoinHostPort("localhost", port))
	var ue *UpstreamError
	if !errors.As(err, &ue) || !ue.Addr.IsLoopback() {
		t.Errorf("dial localhost through the policy = %v, want an UpstreamError for loopback", err)
	}
	d.Control = Policy{Upstreams: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}}.Control
	c, err := d.Dial("tcp", srv.Addr().String())
	if err != nil {
		t.Fatalf("dial an allowed loopback upstream: %v", err)
	}
	c.Close()
}
