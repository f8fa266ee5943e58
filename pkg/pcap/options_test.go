package pcap

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
)

// TestServices: with --service, connections to the service are IN, its
// own calls to elsewhere OUT, and the rest skipped and counted; without
// it, every pair is IN.
func TestServices(t *testing.T) {
	c := newCapture(t)
	for _, conv := range [][3]string{
		{"10.0.0.1:40000", "10.0.0.5:8080", "/in"},      // a client calls the service
		{"10.0.0.5:50000", "10.0.0.9:5432", "/out"},     // the service calls a dependency
		{"10.0.0.1:40001", "10.0.0.7:8080", "/other"},   // neither
		{"10.0.0.5:50001", "10.0.0.5:9090", "/sidecar"}, // the service's other port, named too
	} {
		k := c.conn(conv[0], conv[1])
		k.handshake()
		k.send(true, get(conv[2]))
		k.send(false, ok(conv[2]))
		k.close()
	}
	capture := c.pcap(layers.LinkTypeEthernet)
	r := importOne(t, capture)
	wantPairs(t, r, "GET /in -> 200", "GET /out -> 200", "GET /other -> 200", "GET /sidecar -> 200")
	for _, p := range r.pairs {
		if p.Direction != "IN" {
			t.Errorf("%s: direction %q without --service, want IN", p, p.Direction)
		}
	}
	svc := []netip.AddrPort{netip.MustParseAddrPort("10.0.0.5:8080"), netip.MustParseAddrPort("10.0.0.5:9090")}
	r = importCaptures(t, Options{Services: svc}, "capture.pcap", capture)
	wantPairs(t, r, "GET /in -> 200", "GET /out -> 200", "GET /sidecar -> 200")
	var dirs []string
	for _, p := range r.pairs {
		dirs = append(dirs, p.Direction)
	}
	if strings.Join(dirs, ",") != "IN,OUT,IN" || r.st.Elsewhere != 1 || r.st.Kinds["HTTP/1.1 OUT"] != 1 {
		t.Errorf("directions %v; %s", dirs, r.st.Summary())
	}
	if !strings.Contains(r.st.Summary(), "(HTTP/1.1 IN 2, HTTP/1.1 OUT 1)") || !strings.Contains(r.st.Summary(), "1 connection neither to nor from --service") {
		t.Errorf("summary %q", r.st.Summary())
	}
}

// TestSessions: --session connection (the default), header:NAME,
// cookie:NAME (HTTP/2's split cookie fields too), none.
func TestSessions(t *testing.T) {
	c := newCapture(t)
	k := c.conn("10.0.0.1:40000", "10.0.0.2:8080")
	k.handshake()
	k.send(true, "GET /a HTTP/1.1\r\nHost: h\r\nX-User: ada\r\nCookie: theme=dark; sid=s1\r\n\r\n")
	k.send(false, ok("a"))
	k2 := c.conn("10.0.0.1:40001", "10.0.0.2:8080")
	k2.handshake()
	cw := newH2W(t)
	k2.send(true, preface+cw.settings()+cw.headers(1, true, 0, reqFields("GET", "/b", "x-user", "bob", "cookie", "theme=light", "cookie", "sid=s2")...))
	k.send(true, "GET /c HTTP/1.1\r\nHost: h\r\n\r\n")
	capture := c.pcap(layers.LinkTypeEthernet)
	for _, tc := range []struct {
		session string
		want    string
	}{
		{"", "c-1,c-2,c-1"},
		{"connection", "c-1,c-2,c-1"},
		{"header:X-User", "ada,bob,"},
		{"cookie:sid", "s1,s2,"},
		{"none", ",,"},
	} {
		s, err := ParseSession(tc.session)
		if err != nil {
			t.Fatal(err)
		}
		r := importCaptures(t, Options{Session: s}, "capture.pcap", capture)
		var got []string
		for _, p := range r.pairs {
			got = append(got, p.Session)
		}
		if strings.Join(got, ",") != tc.want {
			t.Errorf("--session %q: %q, want %q", tc.session, strings.Join(got, ","), tc.want)
		}
	}
	for _, bad := range []string{"header:", "cookie", "query:q", "header:a b"} {
		if _, err := ParseSession(bad); err == nil || !strings.Contains(err.Error(), "want connection, header:NAME, cookie:NAME or none") {
			t.Errorf("ParseSession(%q): %v", bad, err)
		}
	}
	for _, bad := range []string{"10.0.0.5", "svc:8080", "10.0.0.5:0", "[::1]"} {
		if _, err := ParseService(bad); err == nil || !strings.Contains(err.Error(), "want IP:PORT") {
			t.Errorf("ParseService(%q): %v", bad, err)
		}
	}
}

// TestStreamTimeout: a connection idle past --stream-timeout (capture
// time) is ended: its request waiting is written without an answer, and
// an answer coming after that is read as on a connection joined
// mid-stream: counted, not kept.
func TestStreamTimeout(t *testing.T) {
	c := newCapture(t)
	k := c.conn("10.0.0.1:40000", "10.0.0.2:8080")
	k.handshake()
	k.send(true, get("/slow"))
	other := c.conn("10.0.0.1:40001", "10.0.0.2:8080")
	other.handshake()
	for range 40 { // another connection keeps the clock going: 40 × 3 s
		c.clock = c.clock.Add(3 * time.Second)
		other.send(true, get("/tick"))
		other.send(false, ok("tick"))
	}
	k.send(false, ok("late"))
	r := importCaptures(t, Options{StreamTimeout: time.Minute}, "capture.pcap", c.pcap(layers.LinkTypeEthernet))
	if len(r.pairs) != 41 || r.pairs[0].String() != "GET /slow -> none" {
		t.Fatalf("%d pairs, the first %v: want GET /slow without an answer first", len(r.pairs), r.pairs[0])
	}
	wantSkips(t, r)
	if r.st.Before != 1 || r.st.NoAnswer != 1 {
		t.Errorf("%s: want the late answer counted, one pair without an answer", r.st.Summary())
	}
}

// TestMaxBuffer: what is held for all connections stays within
// --max-buffer: the connection holding the most gives up its messages
// under way, counted; the others go on.
func TestMaxBuffer(t *testing.T) {
	c := newCapture(t)
	big := c.conn("10.0.0.1:40000", "10.0.0.2:8080")
	small := c.conn("10.0.0.1:40001", "10.0.0.2:8080")
	big.handshake()
	small.handshake()
	big.send(true, post("/huge", strings.Repeat("h", 300<<10))) // held while it comes
	small.send(true, get("/small"))
	small.send(false, ok("small"))
	r := importCaptures(t, Options{MaxBuffer: 100 << 10}, "capture.pcap", c.pcap(layers.LinkTypeEthernet))
	wantPairs(t, r, "GET /small -> 200")
	wantSkips(t, r, "packet 7: buffer: POST /huge to 10.0.0.2:8080: given up to keep within --max-buffer (102400 bytes)")
	if r.st.Dropped < 100<<10 || !strings.Contains(r.st.Summary(), "bytes dropped over --max-buffer") {
		t.Errorf("%s", r.st.Summary())
	}
}
