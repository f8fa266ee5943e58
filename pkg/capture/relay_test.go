package capture

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/replay-dev/replay/pkg/tlsca"
)

// TestForwardRefusesLoopbackUpstreams: without --allow-upstream the
// forward proxy answers 502 naming it for an upstream on loopback,
// whether named by address or by a name that resolves there
// (localhost), and the upstream gets nothing; with a prefix that holds
// it, the call goes through.
func TestForwardRefusesLoopbackUpstreams(t *testing.T) {
	up := rawUpstreamSeen(t, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	_, port, _ := net.SplitHostPort(up.addr)
	ask := func(t *testing.T, p *Proxy, host string) string {
		c, err := net.Dial("tcp", p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, "GET http://"+host+":"+port+"/p HTTP/1.1\r\nHost: "+host+":"+port+"\r\n\r\n")
		m := readAnswer(t, bufio.NewReader(c), "GET")
		return string(m.Raw)
	}
	var out bytes.Buffer
	closed, _ := forwardProxy(t, &out, "", func(o *ForwardOptions) { o.AllowUpstream = nil })
	defer closeProxy(t, closed)
	for _, host := range []string{"127.0.0.1", "localhost"} {
		t.Run(host, func(t *testing.T) {
			got := ask(t, closed, host)
			if !strings.HasPrefix(got, "HTTP/1.1 502 ") || !strings.Contains(got, "--allow-upstream") {
				t.Errorf("got %q, want a 502 naming --allow-upstream", got)
			}
		})
	}
	if n := len(up.requests()); n != 0 {
		t.Errorf("the loopback upstream got %d requests, want none", n)
	}
	open, _ := forwardProxy(t, &out, "", func(o *ForwardOptions) { o.AllowUpstream = []string{"127.0.0.1/32"} })
	defer closeProxy(t, open)
	if got := ask(t, open, "127.0.0.1"); !strings.HasPrefix(got, "HTTP/1.1 200 ") {
		t.Errorf("with --allow-upstream 127.0.0.1/32: got %q, want 200", got)
	}
	if n := len(up.requests()); n != 1 {
		t.Errorf("the upstream got %d requests, want 1", n)
	}
}

// TestListenBeyondLoopbackRefused: both recorders refuse to listen on
// every address without AllowRemote, naming --allow-remote.
func TestListenBeyondLoopbackRefused(t *testing.T) {
	var out bytes.Buffer
	if p, err := Listen("0.0.0.0:0", &out, Options{Upstream: "127.0.0.1:9"}); err == nil || !strings.Contains(err.Error(), "--allow-remote") {
		if p != nil {
			closeProxy(t, p)
		}
		t.Errorf("reverse on 0.0.0.0: got %v, want an error naming --allow-remote", err)
	}
	_, err := ListenForward("0.0.0.0:0", &out, ForwardOptions{CA: tlsca.Options{OutDir: t.TempDir()}})
	if err == nil || !strings.Contains(err.Error(), "--allow-remote") {
		t.Errorf("forward on 0.0.0.0: got %v, want an error naming --allow-remote", err)
	}
	p, err := Listen("0.0.0.0:0", &out, Options{Upstream: "127.0.0.1:9", AllowRemote: true})
	if err != nil {
		t.Fatalf("with AllowRemote: %v", err)
	}
	closeProxy(t, p)
}
