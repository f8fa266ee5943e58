package pcap

import (
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/replay-dev/replay/pkg/rrpair"
)

// TestKeepAlive: two exchanges on one connection become two pairs with
// the request as it went (raw target, header names in their case and
// order, body), the answer, the time of the request's first byte, the
// time to the answer's last, the connection as the session, IN.
func TestKeepAlive(t *testing.T) {
	c := newCapture(t)
	k := c.conn("10.0.0.1:40000", "10.0.0.2:8080")
	k.handshake()
	k.send(true, "GET /a//b/%2F?x=1&y=%zz HTTP/1.1\r\nHost: api.example:8080\r\nX-Case: Kept\r\nx-case: lower\r\nAccept: */*\r\n\r\n")
	k.send(false, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\n\r\nhello")
	k.send(true, "POST /orders HTTP/1.1\r\nHost: api.example:8080\r\nContent-Type: application/json\r\nContent-Length: 11\r\nConnection: keep-alive\r\n\r\n{\"id\": 42}\n")
	k.send(false, "HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n")
	k.close()
	r := importOne(t, c.pcap(layers.LinkTypeEthernet))
	wantPairs(t, r, "GET /a//b/%2F?x=1&y=%zz -> 200", "POST /orders -> 201")
	if len(r.pairs) != 2 {
		return
	}
	a, b := r.pairs[0], r.pairs[1]
	wantFields(t, "request headers", a.Headers, "Host: api.example:8080", "X-Case: Kept", "x-case: lower", "Accept: */*")
	wantFields(t, "answer headers", a.ResHeaders, "Content-Type: text/plain", "Content-Length: 5", "Set-Cookie: a=1", "Set-Cookie: b=2")
	if a.ResBody != "hello" || a.Host != "api.example:8080" || a.Version != "1.1" || a.Session != "c-1" || a.Direction != "IN" {
		t.Errorf("first pair %+v", a)
	}
	// Connection is the VU's: not kept; Content-Length is, where it stood.
	wantFields(t, "POST headers", b.Headers, "Host: api.example:8080", "Content-Type: application/json", "Content-Length: 11")
	if b.Body != "{\"id\": 42}\n" || b.Session != "c-1" {
		t.Errorf("second pair %+v", b)
	}
	// The GET's first byte is packet 4 (after the handshake), its answer's
	// last byte packet 6: 2 ms on the capture's clock.
	start := time.Date(2026, 11, 25, 10, 0, 0, 4e6, time.UTC)
	if !a.TS.Equal(start) || a.Duration != 2 {
		t.Errorf("ts %v, duration %v ms: want %v, 2", a.TS, a.Duration, start)
	}
	if r.st.Connections != 1 || r.st.Written != 2 || r.st.Kinds["HTTP/1.1 IN"] != 2 || len(r.skips) != 0 {
		t.Errorf("stats: %s; skips %q", r.st.Summary(), r.skips)
	}
	want := "14 packets, 1 connection, 2 pairs written (HTTP/1.1 IN 2)"
	if got := r.st.Summary(); got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
}

// wantFields checks fields, as "Name: value" in order.
func wantFields(t testing.TB, what string, got []rrpair.Field, want ...string) {
	t.Helper()
	var g []string
	for _, f := range got {
		g = append(g, f.Name+": "+f.Value)
	}
	if strings.Join(g, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s:\n  %s\nwant:\n  %s", what, strings.Join(g, "\n  "), strings.Join(want, "\n  "))
	}
}
