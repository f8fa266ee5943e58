package http1

import (
	"strings"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/testutil/loopback"
	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/transport/conn"
	"github.com/replay-dev/replay/pkg/vu"
)

// hostileThenOK runs a GET then another on one VU against a server that
// answers the first with the case named name and the second with "ok":
// the results and the connections the server saw.
func hostileThenOK(t *testing.T, name string, headers string) (first, second result.Result, conns int64) {
	t.Helper()
	cases := loopback.Only(loopback.Named(loopback.H1Cases, name), loopback.Named(loopback.H1Cases, "ok"))
	srv := loopback.NewHostileH1(t, cases, loopback.Script{0, 1})
	f := openLines(t, line("GET", "/1", headers, nil), line("GET", "/2", "", nil))
	sink, _ := runPool(t, f, vu.Config{}, Options{Conn: conn.Options{Target: srv.URL(), Timeout: 2 * time.Second}})
	res := sink.Results()
	if len(res) != 2 {
		t.Fatalf("%d results, want 2", len(res))
	}
	return res[0], res[1], srv.Conns()
}

// TestUnaskedSwitchingProtocols (finding 4): a 101 to a request that
// asked for no upgrade is no answer: it fails as other and its
// connection is closed. Before, it counted as a success, and a SUT that
// only ever answered 101 looked healthy. To a request that asked for an
// upgrade, it is the answer (and the connection, switched, is closed).
func TestUnaskedSwitchingProtocols(t *testing.T) {
	first, second, conns := hostileThenOK(t, "switching-unasked", "")
	if first.Err != result.ErrOther || first.Status != 0 {
		t.Errorf("unasked 101: %v status %d, want other without a status", first.Err, first.Status)
	}
	if second.Err != result.ErrNone || conns != 2 {
		t.Errorf("next request %+v over %d connections, want 200 on a second connection", second, conns)
	}
	first, _, conns = hostileThenOK(t, "switching-unasked", `{"Upgrade":["h2c"]}`)
	if first.Err != result.ErrNone || first.Status != 101 || conns != 2 {
		t.Errorf("101 to an Upgrade: %+v over %d connections, want the answer, its connection closed", first, conns)
	}
}

// TestHostileHTTP1Answers holds every case of the fuzzed peer's
// catalogue to its class on its own: a well-formed answer, or one the
// docs/strict.md keeps as a leniency, counts with its status; a malformed one
// fails (as other, or eof when it is cut) and its connection is not used
// again; no answer fails. After each, the next request is answered,
// unless the SUT closed the connection without a word after a complete
// answer: the next request, sent at once on it, may find it closed
// (replay sends a request once).
func TestHostileHTTP1Answers(t *testing.T) {
	unannounced := map[string]bool{"ok-then-close": true, "answer-then-reset": true}
	for _, k := range loopback.H1Cases {
		t.Run(k.Name, func(t *testing.T) {
			first, second, _ := hostileThenOK(t, k.Name, "")
			switch k.Class {
			case loopback.Good:
				if first.Err != result.ErrNone || first.Status != loopback.StatusGood && first.Status != loopback.StatusLenient {
					t.Errorf("got %v status %d, want it counted", first.Err, first.Status)
				}
			case loopback.Bad:
				if first.Err != result.ErrOther && first.Err != result.ErrEOF || first.Status != 0 {
					t.Errorf("got %v status %d, want other or eof, without a status", first.Err, first.Status)
				}
			case loopback.NoAnswer:
				if first.Err == result.ErrNone {
					t.Errorf("got %+v, want a failure", first)
				}
			}
			if (second.Err != result.ErrNone || second.Status != 200) && !unannounced[k.Name] {
				t.Errorf("next request %+v, want 200", second)
			}
		})
	}
}

// TestHeadScan: what the scan of a head finds, and what it refuses.
func TestHeadScan(t *testing.T) {
	tests := []struct {
		name, head string
		want       head
		err        error
	}{
		{"plain", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n", head{status: 200, length: 2}, nil},
		{"no reason", "HTTP/1.1 204\r\n\r\n", head{status: 204, length: -1}, nil},
		{"HTTP/1.0", "HTTP/1.0 200 OK\r\n\r\n", head{status: 200, length: -1}, nil},
		{"interim", "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n", head{status: 103, length: -1, interim: true}, nil},
		{"101 is final", "HTTP/1.1 101 Switching\r\nUpgrade: h2c\r\n\r\n", head{status: 101, length: -1}, nil},
		{"close", "HTTP/1.1 200 OK\r\nConnection: keep-alive, Close\r\n\r\n", head{status: 200, length: -1, closes: true}, nil},
		{"same lengths", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\ncontent-length: 2\r\n\r\n", head{status: 200, length: 2, sameLengths: true}, nil},
		{"length list", "HTTP/1.1 200 OK\r\nContent-Length: 7 , 7,7\r\n\r\n", head{status: 200, length: 7, sameLengths: true}, nil},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\n", head{status: 200, length: -1, chunked: true}, nil},
		{"chunked and length", "HTTP/1.1 200 OK\r\nContent-Length: 9\r\nTransfer-Encoding: chunked\r\n\r\n", head{status: 200, length: 9, chunked: true, closes: true}, nil},
		{"space in a name", "HTTP/1.1 200 OK\r\nX Odd: 1\r\n\r\n", head{status: 200, length: -1, closes: true}, nil},
		{"obs-fold", "HTTP/1.1 200 OK\r\nX-A: a\r\n b\r\n\r\n", head{status: 200, length: -1}, nil},
		{"bare LF lines", "HTTP/1.1 200 OK\nX-A: a\r\n\r\n", head{status: 200, length: -1}, nil},
		{"HTTP/2.0", "HTTP/2.0 200 OK\r\n\r\n", head{}, errVersion},
		{"HTTP/1.2", "HTTP/1.2 200 OK\r\n\r\n", head{}, errVersion},
		{"two spaces", "HTTP/1.1  200 OK\r\n\r\n", head{}, errVersion},
		{"four digits", "HTTP/1.1 2000 OK\r\n\r\n", head{}, errVersion},
		{"leading blank line", "\r\nHTTP/1.1 200 OK\r\n\r\n", head{}, errVersion},
		{"status 000", "HTTP/1.1 000 X\r\n\r\n", head{}, errStatus},
		{"status 600", "HTTP/1.1 600 X\r\n\r\n", head{}, errStatus},
		{"lengths disagree", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n", head{}, errLengths},
		{"length list disagrees", "HTTP/1.1 200 OK\r\nContent-Length: 2, 3\r\n\r\n", head{}, errLengths},
		{"negative length", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", head{}, errLengths},
		{"space before colon", "HTTP/1.1 200 OK\r\nContent-Length : 2\r\n\r\n", head{}, errSpaceColon},
		{"no colon", "HTTP/1.1 200 OK\r\nBroken\r\n\r\n", head{}, errFieldLine},
		{"gzip", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", head{}, errCoding},
		{"gzip, chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", head{}, errCoding},
		{"chunked twice", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", head{}, errCoding},
		{"chunked in HTTP/1.0", "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", head{}, errCoding10},
		{"fold in a length", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n 2\r\n\r\n", head{}, errFoldFraming},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			end, _, err := headEnd([]byte(tt.head), 0)
			if err != nil || end == 0 {
				t.Fatalf("headEnd: %d, %v; want the end", end, err)
			}
			got, err := scanHead([]byte(tt.head[:end]))
			if err != tt.err {
				t.Fatalf("error %v, want %v", err, tt.err)
			}
			if err != nil {
				return
			}
			if end != len(tt.head) {
				t.Errorf("end %d, want %d", end, len(tt.head))
			}
			tt.want.size = len(tt.head)
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestHeadEnd finds the end of a head as it arrives, a byte at a time,
// and refuses the line ends fasthttp would wait on or misread.
func TestHeadEnd(t *testing.T) {
	for _, tt := range []struct {
		name, b string
		err     error
	}{
		{"crlf", "HTTP/1.1 200 OK\r\nA: b\r\n\r\nbody", nil},
		{"bare LF blank line", "HTTP/1.1 200 OK\r\nA: b\r\n\nbody", errBareLF},
		{"bare LF head", "HTTP/1.1 200 OK\nA: b\n\nbody", errBareLF},
		{"bare CR", "HTTP/1.1 200 OK\r\nA: b\rc\r\n\r\n", errBareCR},
	} {
		t.Run(tt.name, func(t *testing.T) {
			from, end := 0, 0
			var err error
			for n := 1; n <= len(tt.b) && end == 0 && err == nil; n++ {
				end, from, err = headEnd([]byte(tt.b[:n]), from)
			}
			if err != tt.err {
				t.Fatalf("error %v, want %v", err, tt.err)
			}
			if err == nil && end != strings.Index(tt.b, "\r\n\r\n")+4 {
				t.Errorf("end %d, want the blank line's", end)
			}
		})
	}
}

// TestSameLengthHead: the head fasthttp reads has one Content-Length,
// where the first stood.
func TestSameLengthHead(t *testing.T) {
	got := string(sameLengthHead(nil, []byte("HTTP/1.1 201 X\r\nA: 1\r\ncontent-length: 2, 2\nB: 2\r\nContent-Length: 2\r\n\r\n"), 2))
	if want := "HTTP/1.1 201 X\r\nA: 1\r\ncontent-length: 2\r\nB: 2\r\n\r\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
