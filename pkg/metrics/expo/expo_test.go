package expo

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// get scrapes addr's /metrics.
func get(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("Content-Type %q, want text/plain; version=0.0.4", ct)
	}
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

// TestListen: a server serves what its function writes, fresh on every
// scrape, with the labels escaped, in a page Prometheus's own parser
// reads.
func TestListen(t *testing.T) {
	var n atomic.Int64
	srv, err := Listen("127.0.0.1:0", func(b *strings.Builder) {
		e := Writer{B: b}
		e.Family("x_total", "counter", "Scrapes.")
		e.Sample("x_total", Labels("a", `q"uote`, "b", "2\nback\\slash"), float64(n.Add(1)))
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	for want := 1; want <= 2; want++ {
		body := get(t, srv.Addr())
		if line := fmt.Sprintf(`x_total{a="q\"uote",b="2\nback\\slash"} %d`, want); !strings.Contains(body, line) {
			t.Errorf("scrape %d:\n%s\nwant %s", want, body, line)
		}
		parser := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := parser.TextToMetricFamilies(strings.NewReader(body))
		if err != nil {
			t.Fatalf("the page does not parse: %v\n%s", err, body)
		}
		if got := fams["x_total"].GetMetric()[0].GetLabel()[1].GetValue(); got != "2\nback\\slash" {
			t.Errorf("label b read back as %q, want %q", got, "2\nback\\slash")
		}
	}
}

// TestServe: a server serves on the listener it is given, and Close
// closes it.
func TestServe(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := Serve(ln, func(b *strings.Builder) { Writer{B: b}.Sample("up", "", 1) })
	if got := get(t, srv.Addr()); got != "up 1\n" {
		t.Errorf("got %q, want %q", got, "up 1\n")
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		c.Close()
		t.Errorf("%s still accepts after Close", ln.Addr())
	}
}

// TestListenBadAddress: a bad address fails at once.
func TestListenBadAddress(t *testing.T) {
	if _, err := Listen("127.0.0.1:99999", func(*strings.Builder) {}); err == nil {
		t.Error("got no error for port 99999")
	}
}
