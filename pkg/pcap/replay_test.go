package pcap

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/replay-dev/replay/internal/testutil/h2peer"
	"github.com/replay-dev/replay/internal/testutil/loopback"
	"github.com/replay-dev/replay/pkg/rawhttp"
	"github.com/replay-dev/replay/pkg/report"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/run"
)

// replay writes the pairs to a file and replays them once over one VU to
// target, as replay run does; more sets further options.
func replay(t *testing.T, pairs string, target string, more func(*run.Options)) *report.Summary {
	t.Helper()
	path := filepath.Join(t.TempDir(), "traffic.jsonl")
	if err := os.WriteFile(path, []byte(pairs), 0o644); err != nil {
		t.Fatal(err)
	}
	o := run.DefaultOptions()
	o.File, o.Load.Target = path, target
	o.HTTP.Timeout = 10 * time.Second
	if more != nil {
		more(&o)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := run.Execute(ctx, o)
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	return s
}

// sentRequests are the requests the clients of a capture sent, read from
// each connection's client bytes as written (before any loss the test
// made) by rawhttp, as the recording proxy reads them.
func sentRequests(t *testing.T, all []*tseg) []*rawhttp.Message {
	streams := map[*tconn]*bytes.Buffer{}
	var order []*tconn
	for _, s := range all {
		if !s.fromClient || len(s.payload) == 0 {
			continue
		}
		if streams[s.k] == nil {
			streams[s.k] = &bytes.Buffer{}
			order = append(order, s.k)
		}
		streams[s.k].Write(s.payload)
	}
	var out []*rawhttp.Message
	for _, k := range order {
		br := bufio.NewReader(bytes.NewReader(dedupe(t, k, all)))
		for {
			m, err := rawhttp.Read(br, true, "", nil)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				break // not HTTP/1 from here (an upgrade, TLS)
			}
			out = append(out, m)
		}
	}
	return out
}

// dedupe is the client bytes of connection k in sequence order, each
// once, as the client sent them.
func dedupe(t *testing.T, k *tconn, all []*tseg) []byte {
	byteAt := map[uint32]byte{}
	var lo, hi uint32
	first := true
	for _, s := range all {
		if s.k != k || !s.fromClient {
			continue
		}
		for i, b := range s.payload {
			seq := s.seq + uint32(i)
			byteAt[seq] = b
			if first || seq < lo {
				lo = seq
			}
			if first || seq+1 > hi {
				hi = seq + 1
			}
			first = false
		}
	}
	var out []byte
	for seq := lo; seq < hi; seq++ {
		out = append(out, byteAt[seq])
	}
	return out
}

// onTheWire is request m as a replay sends it to host, by docs/design.md's
// "Headers on the wire": HTTP/1.1, Host where it stood, Content-Length
// the length of the body sent (where it stood, else last), the
// connection's headers dropped, the body de-chunked.
func onTheWire(m *rawhttp.Message, host string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\n", m.Method, m.Target)
	length := false
	for _, h := range m.Headers {
		switch {
		case strings.EqualFold(h.Name, "host"):
			b.WriteString(h.Name + ": " + host + "\r\n")
		case strings.EqualFold(h.Name, "content-length"):
			fmt.Fprintf(&b, "%s: %d\r\n", h.Name, len(m.Body))
			length = true
		case rrpair.ConnectionHeader(h.Name):
		default:
			b.WriteString(h.Name + ": " + h.Value + "\r\n")
		}
	}
	if !length && len(m.Body) > 0 {
		fmt.Fprintf(&b, "Content-Length: %d\r\n", len(m.Body))
	}
	return b.String() + "\r\n" + string(m.Body)
}

// TestReplayHTTP1: each HTTP/1.x capture, imported and replayed to a
// server on loopback that keeps the raw requests: every request that
// arrives is one the capture's clients sent, byte for byte as a replay
// sends it; from a capture that lost nothing, all of them arrive.
func TestReplayHTTP1(t *testing.T) {
	for _, sc := range h1Scenarios {
		t.Run(sc.name, func(t *testing.T) {
			c := newCapture(t)
			sc.build(c)
			sent := sentRequests(t, c.built)
			r := importOne(t, c.pcap(layers.LinkTypeEthernet))
			if r.err != nil || len(r.pairs) == 0 {
				return // nothing to replay (the scenario's own test says why)
			}
			srv := loopback.NewRaw(t, nil)
			sum := replay(t, r.out, srv.URL(), nil)
			srv.Close()
			var want []string
			for _, m := range sent {
				want = append(want, onTheWire(m, srv.Addr()))
			}
			got := srv.Requests()
			if int64(len(got)) != sum.Requests || len(got) != len(r.pairs) {
				t.Errorf("%d requests arrived, %d sent, %d pairs", len(got), sum.Requests, len(r.pairs))
			}
			for _, g := range got {
				if !slices.Contains(want, string(g)) {
					t.Errorf("a request arrived that no client sent:\n%q\nthe clients sent:\n%q", g, want)
				}
			}
			if sc.clean && len(got) != len(want) {
				t.Errorf("%d requests arrived, the clients sent %d", len(got), len(want))
			}
		})
	}
}

// TestReplayH2C: the h2c captures, imported and replayed over --h2c to a
// Go HTTP/2 server on loopback: each request arrives with its target, its
// headers and its body.
func TestReplayH2C(t *testing.T) {
	for _, sc := range h2Scenarios[:2] { // prior knowledge, Upgrade: h2c
		t.Run(sc.name, func(t *testing.T) {
			c := newCapture(t)
			sc.build(c)
			r := importOne(t, c.pcap(layers.LinkTypeEthernet))
			seen := h2peer.NewSeen()
			url := h2peer.H2CServer(t, seen)
			sum := replay(t, r.out, url, func(o *run.Options) { o.HTTP.H2C = true })
			if sum.Requests != int64(len(r.pairs)) || sum.Succeeded != sum.Requests || seen.Protos[2] != len(r.pairs) {
				t.Fatalf("%d pairs, %d requests, %d succeeded, %d over HTTP/2", len(r.pairs), sum.Requests, sum.Succeeded, seen.Protos[2])
			}
			for _, p := range r.pairs {
				if seen.URIs[p.URI] != 1 || seen.Bodies[p.URI] != p.Body {
					t.Errorf("%s: arrived %d times with body %q, want once with %q", p, seen.URIs[p.URI], seen.Bodies[p.URI], p.Body)
				}
			}
		})
	}
	t.Run("headers", func(t *testing.T) {
		c := newCapture(t)
		h2Scenarios[0].build(c)
		r := importOne(t, c.pcap(layers.LinkTypeEthernet))
		seen := h2peer.NewSeen()
		url := h2peer.H2CServer(t, seen)
		replay(t, r.out, url, func(o *run.Options) { o.HTTP.H2C = true })
		h := seen.Hdrs["/c"]
		if h.Get("User-Agent") != "test/2" || h.Get("Cookie") != "a=1; b=2" || h.Get("X-Long") != strings.Repeat("l", 100) {
			t.Errorf("GET /c arrived with %v", h)
		}
	})
}

// TestReplayGRPC: the gRPC capture, imported and replayed over --h2c to
// grpc-go servers on loopback (the health service; a raw service with a
// server-streaming and a client-streaming call): the calls succeed as
// recorded, and the unknown method fails as it did (UNIMPLEMENTED): their
// answers compare equal to the recorded ones, bodies included.
func TestReplayGRPC(t *testing.T) {
	c := newCapture(t)
	h2Scenarios[2].build(c)
	r := importOne(t, c.pcap(layers.LinkTypeEthernet))
	healthAddr, rawAddr, got := h2peer.GRPCServers(t)
	health := replay(t, r.out, "http://"+healthAddr, func(o *run.Options) {
		o.HTTP.H2C = true
		o.Filter.Keep = []string{"path=^/grpc[.]health"}
	})
	if health.Requests != 1 || health.Succeeded != 1 || health.GRPCStatus["OK"] != 1 {
		t.Errorf("health: %d requests, %d succeeded, %v", health.Requests, health.Succeeded, health.GRPCStatus)
	}
	raw := replay(t, r.out, "http://"+rawAddr, func(o *run.Options) {
		o.HTTP.H2C = true
		o.Filter.Keep = []string{"path=^/test[.]Raw/"}
		o.Compare.Mode = "body"
	})
	if raw.Requests != 3 || raw.Succeeded != 2 || raw.GRPCStatus["OK"] != 2 || raw.GRPCStatus["UNIMPLEMENTED"] != 1 || got.Load() != 3 {
		t.Errorf("raw: %d requests, %d succeeded, %v; the client-streaming call delivered %d messages, want 3", raw.Requests, raw.Succeeded, raw.GRPCStatus, got.Load())
	}
	if raw.Compare == nil || raw.Compare.Compared != 3 || raw.Compare.Matched != 3 {
		t.Errorf("compared with the recorded answers (status, grpc-status, body): %+v, want all 3 matched", raw.Compare)
	}
}
