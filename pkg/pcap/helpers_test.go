package pcap

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/replay-dev/replay/pkg/rrpair"
)

// tpair is a pair as the import wrote it, read back with its fields in
// order.
type tpair struct {
	TS                      time.Time
	Duration                float64 // ms
	Direction, Session      string
	Version, Method, URI    string
	Host                    string
	Headers                 []rrpair.Field
	Body                    string
	Status                  int
	ResHeaders, ResTrailers []rrpair.Field
	ResBody                 string
}

// String is the pair in short: "GET /a -> 200".
func (p tpair) String() string {
	if p.Status == 0 {
		return p.Method + " " + p.URI + " -> none"
	}
	return fmt.Sprintf("%s %s -> %d", p.Method, p.URI, p.Status)
}

// imported is what an import gave.
type imported struct {
	st    Stats
	out   string
	pairs []tpair
	skips []string // "packet N: reason", "file packet N: reason"
	lost  int      // skips that lost traffic
	err   error
}

// importCaptures converts captures (name, bytes) with opt.
func importCaptures(t testing.TB, opt Options, files ...any) imported {
	t.Helper()
	var srcs []Source
	for i := 0; i < len(files); i += 2 {
		srcs = append(srcs, Source{Name: files[i].(string), R: bytes.NewReader(files[i+1].([]byte))})
	}
	var out bytes.Buffer
	var r imported
	r.st, r.err = Convert(srcs, &out, opt, func(file string, packet int, why string, lost bool) {
		place := fmt.Sprintf("packet %d", packet)
		if file != "" {
			place = file + " " + place
		}
		r.skips = append(r.skips, place+": "+why)
		if lost {
			r.lost++
		}
	})
	r.out = out.String()
	sc := bufio.NewScanner(strings.NewReader(r.out))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		if err := rrpair.CheckLine(sc.Bytes()); err != nil {
			t.Fatalf("a line the import wrote does not open: %v\n%s", err, sc.Text())
		}
		r.pairs = append(r.pairs, readPair(t, sc.Bytes()))
	}
	return r
}

// importOne converts one capture with the default options.
func importOne(t testing.TB, capture []byte) imported {
	t.Helper()
	return importCaptures(t, Options{}, "capture.pcap", capture)
}

// readPair reads an RRPair line, its header fields in order.
func readPair(t testing.TB, line []byte) tpair {
	t.Helper()
	var raw struct {
		TS        string  `json:"ts"`
		Duration  float64 `json:"duration"`
		Direction string  `json:"direction"`
		Tags      struct {
			Session string `json:"session"`
		} `json:"tags"`
		HTTP struct {
			Req struct {
				Method, URI, Host, Version string
				Headers                    json.RawMessage
				Body                       string
				BodyBase64                 string `json:"bodyBase64"`
			} `json:"req"`
			Res struct {
				StatusCode        int `json:"statusCode"`
				Headers, Trailers json.RawMessage
				Body              string
				BodyBase64        string `json:"bodyBase64"`
			} `json:"res"`
		} `json:"http"`
	}
	if err := json.Unmarshal(line, &raw); err != nil {
		t.Fatalf("%v: %s", err, line)
	}
	p := tpair{Duration: raw.Duration, Direction: raw.Direction, Session: raw.Tags.Session,
		Version: raw.HTTP.Req.Version, Method: raw.HTTP.Req.Method, URI: raw.HTTP.Req.URI, Host: raw.HTTP.Req.Host,
		Headers: fields(t, raw.HTTP.Req.Headers), Body: body(t, raw.HTTP.Req.Body, raw.HTTP.Req.BodyBase64),
		Status: raw.HTTP.Res.StatusCode, ResHeaders: fields(t, raw.HTTP.Res.Headers), ResTrailers: fields(t, raw.HTTP.Res.Trailers),
		ResBody: body(t, raw.HTTP.Res.Body, raw.HTTP.Res.BodyBase64)}
	p.TS, _ = time.Parse(time.RFC3339Nano, raw.TS)
	return p
}

func body(t testing.TB, text, b64 string) string {
	if b64 == "" {
		return text
	}
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// fields reads a headers object, {"Name": ["v1", "v2"]}, in order.
func fields(t testing.TB, raw json.RawMessage) []rrpair.Field {
	if len(raw) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	var out []rrpair.Field
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	for dec.More() {
		name, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		var vals []string
		if err := dec.Decode(&vals); err != nil {
			t.Fatal(err)
		}
		for _, v := range vals {
			out = append(out, rrpair.Field{Name: name.(string), Value: v})
		}
	}
	return out
}

// shorts are the pairs in short, in order.
func shorts(ps []tpair) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out
}

// wantPairs checks the pairs an import wrote, in short, in order.
func wantPairs(t testing.TB, r imported, want ...string) {
	t.Helper()
	if r.err != nil {
		t.Fatalf("import: %v", r.err)
	}
	got := shorts(r.pairs)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("pairs:\n  %s\nwant:\n  %s\nsummary: %s\nskips: %q", strings.Join(got, "\n  "), strings.Join(want, "\n  "), r.st.Summary(), r.skips)
	}
}

// wantSkips checks the skips' reasons hold these, in order.
func wantSkips(t testing.TB, r imported, want ...string) {
	t.Helper()
	if len(r.skips) != len(want) {
		t.Errorf("skips %q, want %d holding %q", r.skips, len(want), want)
		return
	}
	for i, w := range want {
		if !strings.Contains(r.skips[i], w) {
			t.Errorf("skip %d: %q, want it to hold %q", i, r.skips[i], w)
		}
	}
}

// get is a GET request with a Host header.
func get(target string) string {
	return "GET " + target + " HTTP/1.1\r\nHost: api.example:8080\r\nUser-Agent: test/1\r\n\r\n"
}

// ok is a 200 answer with body.
func ok(body string) string {
	return fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
}
