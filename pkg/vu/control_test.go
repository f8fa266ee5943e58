package vu

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/replay-dev/replay/internal/testutil/loopback"
	"github.com/replay-dev/replay/pkg/schedule"
	"github.com/replay-dev/replay/pkg/transport/conn"
	"github.com/replay-dev/replay/pkg/transport/http1"
	"github.com/rs/zerolog"
)

// TestDryRunMatchesTheWire: a dry run prints, byte for byte, what a run
// sends, and sends nothing.
func TestDryRunMatchesTheWire(t *testing.T) {
	srv := loopback.NewRaw(t, nil)
	lines := []string{
		line("POST", "/a?x=1", `{"Content-Type":["text/plain"],"host":["orig"],"Content-Length":["9"]}`, "body\x00bin"),
		line("GET", "//b/%2F", `{"x-Dup":["1","2"]}`, nil),
		`{"tags":{"session":"s"},` + line("DELETE", "/c", "", nil)[1:],
	}
	f := openLines(t, lines...)
	var out bytes.Buffer
	p := &Pool{File: f, Config: Config{Load: schedule.Load{VUs: 1}, Log: zerolog.Nop()}, Transport: newTransport(t, http1.Options{Conn: conn.Options{Target: srv.URL()}})}
	if err := p.DryRun(&out, 10); err != nil {
		t.Fatal(err)
	}
	if n := srv.Conns(); n != 0 {
		t.Fatalf("a dry run opened %d connections", n)
	}
	runPool(t, f, Config{}, http1.Options{Conn: conn.Options{Target: srv.URL()}})
	var want bytes.Buffer
	for i, req := range srv.Requests() {
		want.WriteString(regexp.MustCompile(`(?m)^### .*$`).FindAllString(out.String(), -1)[i] + "\n")
		want.Write(req)
		want.WriteString("\n\n")
	}
	if out.String() != want.String() {
		t.Errorf("dry run:\n%q\nthe wire:\n%q", out.String(), want.String())
	}
	if !strings.HasPrefix(out.String(), "### 1 "+f.Name()+":1 -> "+srv.Addr()+" (POST /a)\n") {
		t.Errorf("header line: %q", strings.SplitN(out.String(), "\n", 2)[0])
	}
	out.Reset()
	if err := p.DryRun(&out, 2); err != nil || strings.Count(out.String(), "### ") != 2 {
		t.Errorf("--dry-run 2 printed %d requests (%v)", strings.Count(out.String(), "### "), err)
	}
}
