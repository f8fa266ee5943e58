package http2

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/loopback"
	"github.com/replay-dev/replay/internal/replaytest"
	"github.com/replay-dev/replay/internal/transport/http1"
	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// What the hand-written server does with a complete request.
type h2Action int

const (
	actAnswer       h2Action = iota // 200 "ok"
	actRefuse                       // RST_STREAM REFUSED_STREAM
	actReset                        // RST_STREAM INTERNAL_ERROR
	actGoAwayBelow                  // GOAWAY below the stream, then close
	actGoAwayAt                     // GOAWAY at the stream (maybe processed), then close
	actAnswerGoAway                 // 200, then GOAWAY at the stream: no new stream
	actSilent                       // nothing
)

// rawH2 is a cleartext HTTP/2 server written with the framer, which does
// what script says with the nth request (from 1), and keeps the header
// lists it received. window, when not 0, is its
// SETTINGS_INITIAL_WINDOW_SIZE, and it then never opens a window again.
type rawH2 struct {
	script func(n int64) h2Action
	window uint32
	n      atomic.Int64
	mu     sync.Mutex
	lists  [][]hpack.HeaderField
}

func (s *rawH2) serve(c net.Conn) {
	br := bufio.NewReader(c)
	if _, err := io.ReadFull(br, make([]byte, len(http2.ClientPreface))); err != nil {
		return
	}
	bw := bufio.NewWriter(c)
	defer bw.Flush()
	fr := http2.NewFramer(bw, br)
	var goneAt uint32 = 1<<31 - 1 // streams above a GOAWAY's are ignored
	if s.window > 0 {
		fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: s.window})
	} else {
		fr.WriteSettings()
	}
	var list []hpack.HeaderField
	dec := hpack.NewDecoder(4096, func(f hpack.HeaderField) { list = append(list, f) })
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	endOnBlock := false
	respond := func(id uint32) bool {
		if id > goneAt {
			return true
		}
		defer bw.Flush()
		switch s.script(s.n.Add(1)) {
		case actAnswer, actAnswerGoAway:
			hb.Reset()
			enc.WriteField(hpack.HeaderField{Name: ":status", Value: "200"})
			enc.WriteField(hpack.HeaderField{Name: "content-type", Value: "text/plain"})
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hb.Bytes(), EndHeaders: true})
			fr.WriteData(id, true, []byte("ok"))
			if s.script(s.n.Load()) == actAnswerGoAway {
				fr.WriteGoAway(id, http2.ErrCodeNo, nil)
				goneAt = id
			}
		case actRefuse:
			fr.WriteRSTStream(id, http2.ErrCodeRefusedStream)
		case actReset:
			fr.WriteRSTStream(id, http2.ErrCodeInternal)
		case actGoAwayBelow:
			fr.WriteGoAway(id-2, http2.ErrCodeNo, nil)
			return false
		case actGoAwayAt:
			fr.WriteGoAway(id, http2.ErrCodeInternal, nil)
			return false
		}
		return true
	}
	// block decodes a fragment of a header block; at its end the request
	// is kept, and answered when it has no body. false: close.
	block := func(id uint32, frag []byte, end bool) bool {
		dec.Write(frag)
		if !end {
			return true
		}
		s.keep(list)
		return !endOnBlock || respond(id)
	}
	for {
		bw.Flush()
		f, err := fr.ReadFrame()
		if err != nil {
			return
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				fr.WriteSettingsAck()
			}
		case *http2.HeadersFrame:
			list, endOnBlock = nil, f.StreamEnded()
			if !block(f.StreamID, f.HeaderBlockFragment(), f.HeadersEnded()) {
				return
			}
		case *http2.ContinuationFrame:
			if !block(f.StreamID, f.HeaderBlockFragment(), f.HeadersEnded()) {
				return
			}
		case *http2.DataFrame:
			if s.window == 0 && f.Length > 0 {
				fr.WriteWindowUpdate(0, f.Length)
				fr.WriteWindowUpdate(f.StreamID, f.Length)
			}
			if f.StreamEnded() && !respond(f.StreamID) {
				return
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				fr.WritePing(true, f.Data)
			}
		}
	}
}

func (s *rawH2) keep(list []hpack.HeaderField) {
	s.mu.Lock()
	s.lists = append(s.lists, list)
	s.mu.Unlock()
}

func TestGoAwayAndResets(t *testing.T) {
	plan := map[int64]h2Action{2: actRefuse, 4: actReset, 5: actGoAwayBelow, 7: actGoAwayAt, 8: actAnswerGoAway, 10: actRefuse, 11: actRefuse}
	srv := &rawH2{script: func(n int64) h2Action { return plan[n] }}
	addr, conns := loopback.Serve(t, srv.serve)
	var lines []string
	for range 8 {
		lines = append(lines, pairLine("POST", "/p", "2", `{"X-B":["1"],"X-A":["2"]}`, []byte("hi")))
	}
	sink, err := runPool(t, 1, Options{HTTP1: http1.Options{Target: "http://" + addr}, H2C: true}, lines...)
	if err != nil {
		t.Fatal(err)
	}
	res := sink.Results()
	want := []struct {
		status  uint16
		err     result.ErrorKind
		retried bool
	}{
		{200, 0, false},
		{200, 0, true},                    // REFUSED_STREAM, then answered on a new connection
		{0, result.ErrStreamReset, false}, // INTERNAL_ERROR
		{200, 0, true},                    // GOAWAY below the stream
		{0, result.ErrGoAway, false},      // GOAWAY at the stream, then closed
		{200, 0, false},                   // answered, then GOAWAY
		{200, 0, false},                   // on a new connection
		{0, result.ErrStreamReset, true},  // refused twice: one retry only
	}
	if len(res) != len(want) {
		t.Fatalf("%d results, want %d: %+v", len(res), len(want), res)
	}
	for i, w := range want {
		r := res[i]
		if r.Status != w.status || r.Err != w.err || r.Retried != w.retried {
			t.Errorf("request %d: status %d, err %v, retried %v; want %d, %v, %v", i, r.Status, r.Err, r.Retried, w.status, w.err, w.retried)
		}
	}
	if got := srv.n.Load(); got != 11 {
		t.Errorf("server saw %d requests, want 11 (8 and 3 retries)", got)
	}
	if got := conns.Load(); got != 6 {
		t.Errorf("server saw %d connections, want 6", got)
	}
	var names []string
	for _, f := range srv.lists[0] {
		names = append(names, f.Name+"="+f.Value)
	}
	wantList := ":method=POST :scheme=http :authority=" + addr + " :path=/p x-b=1 x-a=2 content-length=2"
	if got := strings.Join(names, " "); got != wantList {
		t.Errorf("header list %q, want %q", got, wantList)
	}
}

func TestFlowControlStall(t *testing.T) {
	srv := &rawH2{script: func(int64) h2Action { return actAnswer }, window: 16}
	addr, _ := loopback.Serve(t, srv.serve)
	big := bytes.Repeat([]byte("x"), 200<<10)
	start := time.Now()
	sink, err := runPool(t, 1, Options{HTTP1: http1.Options{Target: "http://" + addr, Timeout: 300 * time.Millisecond}, H2C: true},
		pairLine("POST", "/up", "", "", big))
	if err != nil {
		t.Fatal(err)
	}
	res := sink.Results()
	if len(res) != 1 || res[0].Err != result.ErrFlowControl {
		t.Errorf("results %+v, want one failed as flow_control", res)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v, want about the 300ms --timeout", d)
	}
}

func TestH2CRefusedByHTTP1Server(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(srv.Close)
	sink, err := runPool(t, 1, Options{HTTP1: http1.Options{Target: srv.URL}, H2C: true}, pairLine("GET", "/", "", "", nil))
	if err != nil {
		t.Fatal(err)
	}
	if res := sink.Results(); len(res) != 1 || res[0].Err != result.ErrNoHTTP2 {
		t.Errorf("results %+v, want one failed as no_http2", res)
	}
}

func TestTimeoutAndInterrupt(t *testing.T) {
	srv := &rawH2{script: func(int64) h2Action { return actSilent }}
	addr, _ := loopback.Serve(t, srv.serve)
	tr, err := New(Options{HTTP1: http1.Options{Target: "http://" + addr, Timeout: 200 * time.Millisecond}, H2C: true})
	if err != nil {
		t.Fatal(err)
	}
	f := replaytest.OpenLines(t, pairLine("GET", "/slow", "", "", nil))
	var p rrpair.Pair
	if err := f.NewCursor().Decode(0, &p); err != nil {
		t.Fatal(err)
	}
	if err := tr.Check(f); err != nil {
		t.Fatal(err)
	}
	c := tr.NewClient(0, func() int64 { return time.Now().UnixNano() })
	defer c.Close()
	var res result.Result
	if a := c.Do(&p.Req, &p, &res); a != nil || res.Err != result.ErrTimeout || res.Proto != result.ProtoHTTP2 {
		t.Errorf("silent SUT: %+v, want a timeout over HTTP/2", res)
	}
	if _, head, _, err := c.Failure(); !strings.HasPrefix(string(head), ":method: GET\n") || err == nil {
		t.Errorf("Failure: head %q, err %v; want the header list and the error", head, err)
	}

	tr2, err := New(Options{HTTP1: http1.Options{Target: "http://" + addr, Timeout: 10 * time.Second}, H2C: true})
	if err != nil {
		t.Fatal(err)
	}
	c2 := tr2.NewClient(1, func() int64 { return time.Now().UnixNano() })
	defer c2.Close()
	done := make(chan result.Result)
	go func() {
		var res result.Result
		c2.Do(&p.Req, &p, &res)
		done <- res
	}()
	time.Sleep(100 * time.Millisecond)
	c2.Interrupt()
	select {
	case res := <-done:
		if res.Err != result.ErrCancelled {
			t.Errorf("interrupted: %+v, want cancelled", res)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Interrupt did not cut the request off")
	}
	res = result.Result{}
	if c2.Do(&p.Req, &p, &res); res.Err != result.ErrCancelled {
		t.Errorf("after Interrupt: %+v, want cancelled", res)
	}
}
