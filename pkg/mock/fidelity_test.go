package mock

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/testutil/fixture"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/rs/zerolog"
)

// TestReportCountsSkippedKinds: lines of other protocols and pairs whose
// answer cannot be sent are counted by kind in the report (JSON and
// text) and logged at start, never reported as "skipped: 0".
func TestReportCountsSkippedKinds(t *testing.T) {
	content := rec{method: "GET", uri: "/ok", host: "h", status: 200, resBody: "ok"}.line() +
		strings.Repeat(`{"l7protocol":"postgres","direction":"OUT","postgres":{"req":{"query":"SELECT 1"}}}`+"\n", 3) +
		rec{method: "GET", uri: "/none", host: "h"}.line()
	var log fixture.Buffer
	s := start(t, Options{File: writeFile(t, content), Log: zerolog.New(&log)})
	r := s.Report()
	var js strings.Builder
	WriteJSON(&js, &r)
	var got struct {
		Skipped      int `json:"skipped"`
		SkippedKinds struct {
			Protocol   map[string]int `json:"protocol"`
			Unsendable int            `json:"unsendable"`
		} `json:"skipped_kinds"`
	}
	if err := json.Unmarshal([]byte(js.String()), &got); err != nil {
		t.Fatal(err)
	}
	if got.Skipped != 4 || got.SkippedKinds.Protocol["postgres"] != 3 || got.SkippedKinds.Unsendable != 1 {
		t.Errorf("report: skipped %d, kinds %+v; want 4: postgres 3, unsendable 1", got.Skipped, got.SkippedKinds)
	}
	var text strings.Builder
	r.WriteText(&text)
	if !strings.Contains(text.String(), "4 lines skipped (postgres 3, unsendable 1)") {
		t.Errorf("text:\n%s", text.String())
	}
	if !strings.Contains(log.String(), `"kinds":["postgres 3"]`) {
		t.Errorf("the skipped lines are not logged at start:\n%s", log.String())
	}
}

// TestCaptureNamedWithItsImport: a packet capture given to the mock is
// refused with one message naming the import that converts it, as
// replay run refuses it, not an error per line.
func TestCaptureNamedWithItsImport(t *testing.T) {
	_, err := Start(Options{File: filepath.Join("..", "pcap", "testdata", "http1.pcap"), Listen: "127.0.0.1:0"})
	if err == nil || !strings.Contains(err.Error(), "is a packet capture") || !strings.Contains(err.Error(), "replay import pcap") {
		t.Errorf("got %v, want a refusal naming replay import pcap", err)
	}
}

// TestBusyPortBeforeIndex: a port in use is refused naming --listen before
// the file is read: a file that could not be indexed is not even opened.
func TestBusyPortBeforeIndex(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	missing := filepath.Join(t.TempDir(), "not-there.jsonl")
	_, err = Start(Options{File: missing, Listen: busy.Addr().String()})
	if err == nil || !strings.HasPrefix(err.Error(), "--listen "+busy.Addr().String()) || errors.Is(err, os.ErrNotExist) {
		t.Errorf("got %v, want the busy --listen first", err)
	}
}

// TestMissUnknownHost: a miss to a host never recorded lists the
// recorded hosts instead of naming an unrelated nearest request.
func TestMissUnknownHost(t *testing.T) {
	s := start(t, Options{File: file(t,
		rec{method: "GET", uri: "/v1/a", host: "a.test", status: 200, resBody: "a"},
		rec{method: "GET", uri: "/v1/b", host: "b.test", status: 200, resBody: "b"})})
	st, _, body := do(t, through(s, nil, false), "GET", "http://elsewhere.test/v1/a", "")
	var mb missBody
	if err := json.Unmarshal([]byte(body), &mb); err != nil {
		t.Fatal(err)
	}
	if st != 404 || mb.Nearest != nil || strings.Join(mb.RecordedHosts, ",") != "a.test,b.test" || !strings.Contains(mb.Error, "host elsewhere.test was never recorded") {
		t.Errorf("got %d %s, want 404 listing a.test and b.test, no nearest", st, body)
	}
	// A known host still gets its nearest request.
	_, _, body = do(t, through(s, nil, false), "GET", "http://a.test/v1/c", "")
	if !strings.Contains(body, `"nearest":{"line":1`) {
		t.Errorf("a known host's miss: %s, want its nearest", body)
	}
	if r := s.Report(); len(r.NearestMisses) != 2 || !r.NearestMisses[0].UnknownHost && !r.NearestMisses[1].UnknownHost {
		t.Errorf("report misses %+v, want one marked unknown_host", r.NearestMisses)
	}
}

// TestListenBeyondLoopback: every address is refused without
// AllowRemote, naming --allow-remote; with it the mock serves, and
// clients from private and loopback addresses are answered.
func TestListenBeyondLoopback(t *testing.T) {
	path := file(t, rec{method: "GET", uri: "/x", host: "dep.test", status: 200, resBody: "x"})
	if _, err := Start(Options{File: path, Listen: "0.0.0.0:0"}); err == nil || !strings.Contains(err.Error(), "--allow-remote") {
		t.Fatalf("got %v, want a refusal naming --allow-remote", err)
	}
	s := start(t, Options{File: path, Listen: "0.0.0.0:0", AllowRemote: true})
	_, port, _ := net.SplitHostPort(s.Addrs()[0])
	if st, _, body := do(t, http.DefaultClient, "GET", "http://127.0.0.1:"+port+"/x", ""); st != 200 || body != "x" {
		t.Errorf("a loopback client: %d %s, want 200 x", st, body)
	}
}

// TestHTTP1HeadAsRecorded: an HTTP/1.1 answer carries every recorded
// field in its recorded order and spelling, Date included, the length
// sent where Content-Length was recorded; pipelined requests, a HEAD and
// a request that closes get theirs, fasthttp's Connection field kept.
func TestHTTP1HeadAsRecorded(t *testing.T) {
	fields := []rrpair.Field{{Name: "Date", Value: "Sun, 01 Nov 2026 10:00:00 GMT"}, {Name: "ETag", Value: `"1"`}, {Name: "x-lower", Value: "a"},
		{Name: "Content-Length", Value: "999"}, {Name: "Content-Type", Value: "text/plain"}, {Name: "Server", Value: "nginx"}, {Name: "Set-Cookie", Value: "a=1"}, {Name: "X-B", Value: "c"}}
	s := start(t, Options{File: file(t, rec{method: "GET", uri: "/x", host: "dep.test", status: 200, resBody: "hello", resHeaders: fields},
		rec{method: "HEAD", uri: "/x", host: "dep.test", status: 200, resHeaders: fields})})
	head := "HTTP/1.1 200 OK\r\nDate: Sun, 01 Nov 2026 10:00:00 GMT\r\nETag: \"1\"\r\nx-lower: a\r\nContent-Length: 5\r\nContent-Type: text/plain\r\nServer: nginx\r\nSet-Cookie: a=1\r\nX-B: c\r\n"
	c, err := net.Dial("tcp", s.Addrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := "GET /x HTTP/1.1\r\nHost: dep.test\r\n\r\n"
	io.WriteString(c, req+req+"HEAD /x HTTP/1.1\r\nHost: dep.test\r\n\r\n"+"GET /x HTTP/1.1\r\nHost: dep.test\r\nConnection: close\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, _ := io.ReadAll(c)
	want := head + "\r\nhello" + head + "\r\nhello" + strings.Replace(head, "Content-Length: 5", "Content-Length: 999", 1) + "\r\n" + head + "Connection: close\r\n\r\nhello"
	if string(got) != want {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
}

// TestOneSpellingPerField: a file that spells an answer field two ways
// (ETag and Etag, as a recorder once stored an HTTP/2 client's answers)
// gives every answer the upstream's spelling, never alternating.
func TestOneSpellingPerField(t *testing.T) {
	s := start(t, Options{File: file(t,
		rec{method: "GET", uri: "/a", host: "dep.test", status: 200, resBody: "a", resHeaders: []rrpair.Field{{Name: "ETag", Value: `"a"`}}},
		rec{method: "GET", uri: "/b", host: "dep.test", status: 200, resBody: "b", resHeaders: []rrpair.Field{{Name: "Etag", Value: `"b"`}}})})
	for _, path := range []string{"/a", "/b"} {
		c, err := net.Dial("tcp", s.Addrs()[0])
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: dep.test\r\nConnection: close\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		got, _ := io.ReadAll(c)
		c.Close()
		if !strings.Contains(string(got), "\r\nETag: ") {
			t.Errorf("%s: got %q, want the field spelled ETag", path, got)
		}
	}
}
