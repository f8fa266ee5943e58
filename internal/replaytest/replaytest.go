// Package replaytest holds what the tests of the VUs, the transports and
// the servers share: a Sink that keeps every result, traffic files written
// from lines, a Buffer several goroutines write, and a recorded WebSocket
// session.
package replaytest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
)

// Collect is a result.Sink that keeps every result.
type Collect struct {
	mu  sync.Mutex // guards res
	res []result.Result
}

// Record implements result.Sink.
func (c *Collect) Record(r result.Result) {
	c.mu.Lock()
	c.res = append(c.res, r)
	c.mu.Unlock()
}

// Results is a copy of the results so far.
func (c *Collect) Results() []result.Result {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]result.Result(nil), c.res...)
}

// Count is the number of results for which f holds.
func (c *Collect) Count(f func(result.Result) bool) int {
	n := 0
	for _, r := range c.Results() {
		if f(r) {
			n++
		}
	}
	return n
}

// OpenLines writes lines to a traffic file in t's temporary directory and
// opens it; the file is closed when t ends.
func OpenLines(t testing.TB, lines ...string) *rrpair.File {
	t.Helper()
	path := filepath.Join(t.TempDir(), "traffic.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := rrpair.Open(path, rrpair.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// Line builds an RRPair line to recorded.example:8080; headers is a raw
// JSON object, so that its key order is exactly as written; body is a
// string (sent as text) or []byte (as base64).
func Line(method, uri, headers string, body any) string {
	req := map[string]any{"method": method, "uri": uri, "host": "recorded.example:8080"}
	switch b := body.(type) {
	case string:
		req["body"] = b
	case []byte:
		req["bodyBase64"] = base64.StdEncoding.EncodeToString(b)
	}
	raw, _ := json.Marshal(map[string]any{"http": map[string]any{"req": req}})
	if headers == "" {
		return string(raw)
	}
	return strings.Replace(string(raw), `"host":`, `"headers":`+headers+`,"host":`, 1)
}

// Buffer is an output a server's goroutines (a writer, a logger, a
// command run in the background) and a test share: a bytes.Buffer under a
// lock.
type Buffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String is what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Bytes is a copy of what was written so far.
func (b *Buffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.b.Bytes())
}

// ChatSession is the recorded WebSocket session the mock's and the
// export's tests play: the server greets, answers each of three client
// messages (the second with a text and a binary one), and the client
// closes with 1000 "done".
func ChatSession() *rrpair.WebSocket {
	ms := func(d int) time.Duration { return time.Duration(d) * time.Millisecond }
	return &rrpair.WebSocket{Messages: []rrpair.WSMessage{
		{From: rrpair.WSServer, Offset: ms(1), Type: rrpair.WSText, Data: []byte("hello")},
		{From: rrpair.WSClient, Offset: ms(2), Type: rrpair.WSText, Data: []byte(`{"op":"sub"}`)},
		{From: rrpair.WSServer, Offset: ms(3), Type: rrpair.WSText, Data: []byte(`{"ok":true}`)},
		{From: rrpair.WSClient, Offset: ms(4), Type: rrpair.WSBinary, Data: []byte{0, 1, 2}},
		{From: rrpair.WSServer, Offset: ms(5), Type: rrpair.WSText, Data: []byte("tick 1")},
		{From: rrpair.WSServer, Offset: ms(6), Type: rrpair.WSBinary, Data: []byte{9, 8}},
		{From: rrpair.WSClient, Offset: ms(7), Type: rrpair.WSText, Data: []byte("bye")},
		{From: rrpair.WSServer, Offset: ms(8), Type: rrpair.WSText, Data: []byte("ciao")},
		{From: rrpair.WSClient, Offset: ms(9), Type: rrpair.WSClose, Code: 1000, Reason: "done"},
	}}
}
