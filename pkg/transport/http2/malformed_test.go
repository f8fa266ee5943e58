package http2

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/testutil/fixture"
	"github.com/replay-dev/replay/internal/testutil/h2peer"
	"github.com/replay-dev/replay/internal/testutil/loopback"
	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/transport"
	"github.com/replay-dev/replay/pkg/transport/conn"
	"golang.org/x/net/http2"
)

// hostileThenOK sends two requests on one client to a server that
// answers the first with the case named name and the second with "ok":
// the results, how long the first took, and the server.
func hostileThenOK(t *testing.T, name string) (first, second result.Result, took time.Duration, srv *h2peer.HostileH2) {
	t.Helper()
	cases := loopback.Only(loopback.Named(h2peer.H2Cases, name), loopback.Named(h2peer.H2Cases, "ok"))
	srv = h2peer.NewHostileH2(t, cases, loopback.Script{0, 1})
	tr := newH2C(t, conn.Options{Target: srv.URL(), Timeout: 2 * time.Second}, transport.AnswerOptions{})
	f := fixture.OpenLines(t, h2peer.PairLine("GET", "/1", "", "", nil), h2peer.PairLine("GET", "/2", "", "", nil))
	start := time.Now()
	ex := h2peer.DoAll(t, tr, f)
	took = time.Since(start)
	return ex[0].Res, ex[1].Res, took, srv
}

// sentEventually is what the client sent the server, once want is among it
// or a second has passed: the server reads the first connection's last
// frames on a goroutine of its own, which may lag the second request.
func sentEventually(srv *h2peer.HostileH2, want string) []string {
	deadline := time.Now().Add(time.Second)
	for {
		got := srv.Got()
		if want == "" || slices.Contains(got, want) || time.Now().After(deadline) {
			return got
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestMalformedAnswers holds each answer RFC 9113 calls malformed (§8.1,
// §8.1.1, §8.2, §8.3, §8.6) to a failure of kind protocol, at once (not
// at --timeout), as a stream error: the client resets the stream with
// PROTOCOL_ERROR and keeps the connection for the next request. Before,
// each was counted as its status (a 2xx: a success), or (a 1xx with
// END_STREAM) waited for the timeout.
func TestMalformedAnswers(t *testing.T) {
	for _, name := range []string{
		"length-longer", "length-shorter", "length-shorter-trailers", "length-not-a-number", "two-lengths",
		"upper-case-name", "space-in-name", "crlf-in-value", "nul-in-value", "space-around-value",
		"connection-field", "transfer-encoding", "te-not-trailers",
		"pseudo-after-regular", "pseudo-unknown", "pseudo-request", "two-status", "status-not-3-digits", "no-status",
		"trailers-without-end", "second-block-without-end", "pseudo-in-trailers", "data-before-headers", "data-in-204",
		"status-101",         // finding 2: HTTP/2 has no 101 (§8.6)
		"interim-end-stream", // finding 3: failed at once, not at --timeout
	} {
		t.Run(name, func(t *testing.T) {
			first, second, took, srv := hostileThenOK(t, name)
			if first.Err != result.ErrProtocol || first.Status != 0 {
				t.Errorf("got %v status %d, want a failure of kind protocol, without a status", first.Err, first.Status)
			}
			if took > time.Second {
				t.Errorf("took %v: want the answer refused at once, not at the 2s --timeout", took)
			}
			if second.Err != result.ErrNone || second.Status != 200 || second.Connected {
				t.Errorf("next request %+v: want 200 on the same connection (a stream error keeps it)", second)
			}
			if got := srv.Got(); !slices.Equal(got, []string{"RST_STREAM PROTOCOL_ERROR"}) {
				t.Errorf("the client sent %v, want RST_STREAM PROTOCOL_ERROR", got)
			}
		})
	}
}

// TestConnectionErrors holds what RFC 9113 makes a connection error to a
// failure of kind protocol, the client sending GOAWAY with the RFC's code
// and opening a new connection for the next request. A 16 MiB DATA frame
// (finding 5) is refused at its frame header, over the 16384 bytes the
// client allows: it is neither read nor buffered (the server, busy
// writing it, does not read the GOAWAY).
func TestConnectionErrors(t *testing.T) {
	for _, tt := range []struct{ name, goaway string }{
		{"frame-16mib", ""},
		{"table-size-after-field", "GOAWAY COMPRESSION_ERROR"},
		{"hpack-garbage", "GOAWAY COMPRESSION_ERROR"},
		{"push-promise", "GOAWAY PROTOCOL_ERROR"},
		{"idle-stream", "GOAWAY PROTOCOL_ERROR"},
		{"data-on-stream-0", "GOAWAY PROTOCOL_ERROR"},
		{"window-overflow", "GOAWAY FLOW_CONTROL_ERROR"},
		{"continuation-flood", "GOAWAY ENHANCE_YOUR_CALM"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			first, second, took, srv := hostileThenOK(t, tt.name)
			want := result.ErrProtocol
			if first.Err != want || first.Status != 0 {
				t.Errorf("got %v status %d, want a failure of kind %v", first.Err, first.Status, want)
			}
			if took > time.Second {
				t.Errorf("took %v, want the connection refused at once", took)
			}
			if first.BytesIn > 64<<10 {
				t.Errorf("read %d bytes, want the answer refused before 64 KiB", first.BytesIn)
			}
			if second.Err != result.ErrNone || second.Status != 200 || !second.Connected {
				t.Errorf("next request %+v: want 200 on a new connection", second)
			}
			if got := sentEventually(srv, tt.goaway); tt.goaway != "" && !slices.Contains(got, tt.goaway) {
				t.Errorf("the client sent %v, want %s", got, tt.goaway)
			}
			if n := srv.Conns(); n != 2 {
				t.Errorf("%d connections, want 2", n)
			}
		})
	}
}

// TestWellFormedAnswersCount: what the RFC allows counts, each with its
// status, on a connection kept (but after GOAWAY): interim answers (up to
// 100 of them), trailers, padding, CONTINUATION, a table size update at
// the start of a block, content-length on a 304, te: trailers, pings,
// settings, dribbles.
func TestWellFormedAnswersCount(t *testing.T) {
	for _, k := range h2peer.H2Cases {
		if k.Class != loopback.Good {
			continue
		}
		t.Run(k.Name, func(t *testing.T) {
			first, second, _, _ := hostileThenOK(t, k.Name)
			if first.Err != result.ErrNone || first.Status < 200 || first.Status > 304 {
				t.Errorf("got %+v, want an answer", first)
			}
			if second.Err != result.ErrNone || second.Status != 200 {
				t.Errorf("next request %+v, want 200", second)
			}
		})
	}
}

// TestTooManyInterimAnswers: past 100 interim answers the request fails
// (other: the SUT may be within the RFC, the client does not wait for
// ever) and its stream is cancelled.
func TestTooManyInterimAnswers(t *testing.T) {
	first, second, _, srv := hostileThenOK(t, "interim-storm")
	if first.Err != result.ErrOther {
		t.Errorf("got %+v, want other", first)
	}
	if second.Err != result.ErrNone || second.Connected {
		t.Errorf("next request %+v: want 200 on the same connection", second)
	}
	if got := srv.Got(); !slices.Equal(got, []string{"RST_STREAM CANCEL"}) {
		t.Errorf("the client sent %v, want RST_STREAM CANCEL", got)
	}
}

// TestContentLengthExemptions: an answer to HEAD, and a 304, may carry a
// content-length without DATA (RFC 9113 §8.1.1), and a net/http server's
// HEAD answers do.
func TestContentLengthExemptions(t *testing.T) {
	s := h2peer.NewSeen()
	target := h2peer.H2CServer(t, s)
	sink, err := runPool(t, 1, conn.Options{Target: target}, h2peer.PairLine("HEAD", "/h", "", "", nil), h2peer.PairLine("GET", "/g", "", "", nil))
	if err != nil {
		t.Fatal(err)
	}
	if n := sink.Count(func(r result.Result) bool { return r.Err == result.ErrNone && r.Status == 200 }); n != 2 {
		t.Errorf("results %+v, want two 200s", sink.Results())
	}
	first, _, _, _ := hostileThenOK(t, "ok-304-length")
	if first.Err != result.ErrNone || first.Status != 304 {
		t.Errorf("304 with content-length 10 and no DATA: %+v, want it counted", first)
	}
}

// TestDataPastWindow: DATA past the stream's window is a stream error
// FLOW_CONTROL_ERROR, past the connection's a connection error. A SUT
// cannot get there against a client that grants as it reads, so the
// client's state is set by hand.
func TestDataPastWindow(t *testing.T) {
	frame := func(id uint32, n int) *http2.DataFrame {
		var b bytes.Buffer
		fr := http2.NewFramer(&b, nil)
		fr.WriteData(id, false, make([]byte, n))
		f, err := http2.NewFramer(nil, &b).ReadFrame()
		if err != nil {
			t.Fatal(err)
		}
		return f.(*http2.DataFrame)
	}
	c := &Client{a: transport.AnswerOptions{DiscardBodies: true}.WithDefaults()}
	c.useOwn()
	c.cs.nextID = 3 // stream 1 opened
	*c.st = stream{id: 1, gotHeaders: true, length: -1, recvUnacked: ourStreamWindow - 100}
	if err := c.data(frame(1, 200)); err != errStreamWindow {
		t.Errorf("past the stream window: %v, want %v", err, errStreamWindow)
	}
	*c.st = stream{id: 1, gotHeaders: true, length: -1}
	c.cs.recvConn = ourConnWindow - 100
	if err := c.data(frame(1, 200)); err != errConnWindow {
		t.Errorf("past the connection window: %v, want %v", err, errConnWindow)
	}
}

// TestLateSizeUpdate walks HPACK blocks for a table size update past the
// first field.
func TestLateSizeUpdate(t *testing.T) {
	for _, tt := range []struct {
		name  string
		block []byte
		late  bool
	}{
		{"update first", []byte{0x3f, 0xe1, 0x1f, 0x88}, false},
		{"two updates first", []byte{0x20, 0x3f, 0xe1, 0x1f, 0x88}, false},
		{"update after indexed", []byte{0x88, 0x20}, true},
		{"update after literal", []byte{0x08, 0x03, '2', '9', '9', 0x3f, 0xe1, 0x1f}, true},
		{"update after new-name literal", []byte{0x40, 0x01, 'a', 0x01, 'b', 0x20}, true},
		{"no update", []byte{0x88, 0x40, 0x01, 'a', 0x01, 'b'}, false},
		{"truncated", []byte{0x88, 0x40, 0x05, 'a'}, false},
		{"long integer", []byte{0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, false},
	} {
		if got := lateSizeUpdate(tt.block); got != tt.late {
			t.Errorf("%s: late %v, want %v", tt.name, got, tt.late)
		}
	}
}

// TestRefusalsName: a refusal's message names the RFC section.
func TestRefusalsName(t *testing.T) {
	if s := errLengthLonger.Error(); !strings.Contains(s, "RFC 9113 §8.1.1") || !strings.Contains(s, "PROTOCOL_ERROR") {
		t.Errorf("%q: want the RFC section and the code", s)
	}
	if s := errFrameSize.Error(); !strings.Contains(s, "connection error FRAME_SIZE_ERROR") {
		t.Errorf("%q: want a connection error", s)
	}
}
