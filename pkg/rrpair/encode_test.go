package rrpair

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestEncodeRoundTrip(t *testing.T) {
	recs := []Record{
		{TS: time.Date(2026, 11, 1, 10, 0, 0, 123456789, time.UTC), Duration: 2500 * time.Microsecond, Protocol: "https", Session: "s-1", Version: "1.1",
			Direction: "OUT", Method: "POST", URI: "/a//b/%2F?x=1&y=\"q\"", Host: "api:8443",
			Headers:    []Field{{"content-type", "application/json"}, {"X-A", "1"}, {"Accept", "*/*"}, {"X-A", "2"}, {"x-a", "lower"}},
			Body:       []byte("{\"é\":\"line\\nbreak\"}\t\x01"),
			Status:     201,
			ResHeaders: []Field{{"Set-Cookie", "a=1"}, {"Set-Cookie", "b=2"}},
			ResBody:    []byte{0xff, 0x00, 0x10}},
		{Method: "GET", URI: "/health"},
		{Direction: "IN", Version: "2", Method: "POST", URI: "/grpc.health.v1.Health/Check", Headers: []Field{{"content-type", "application/grpc"}, {"te", "trailers"}},
			Body: []byte{0, 0, 0, 0, 0}, Status: 200, ResHeaders: []Field{{"content-type", "application/grpc"}},
			ResTrailers: []Field{{"grpc-status", "5"}, {"grpc-message", "no such service"}}, ResBody: []byte{0, 0, 0, 0, 2, 8, 1}},
		{Method: "PUT", URI: "/big", Body: bytes.Repeat([]byte("x"), maxTextBody+1)},
	}
	var buf []byte
	for i := range recs {
		buf = AppendLine(buf, &recs[i])
	}
	both, err := ParseRule("direction=IN,OUT")
	if err != nil {
		t.Fatal(err)
	}
	f, err := OpenReader(bytes.NewReader(buf), "enc.jsonl", Options{Filter: &Filter{Keep: []Rule{both}}})
	if err != nil {
		t.Fatalf("%v\n%s", err, buf)
	}
	defer f.Close()
	if !strings.Contains(string(buf), `"bodyBase64":"eHh4`) {
		t.Error("a body over 64 KiB is not base64")
	}
	for i, r := range recs {
		var p Pair
		cur := f.NewCursor().WithResponses()
		if err := cur.Decode(i, &p); err != nil {
			t.Fatal(err)
		}
		got := Record{Method: string(p.Req.Method), URI: string(p.Req.URI), Host: string(p.Req.Host), Body: p.Req.Body,
			Session: string(p.Session), Direction: string(p.Direction), Version: string(p.Version), Status: p.Res.Status, ResBody: p.Res.Body, Protocol: string(p.Req.Scheme)}
		if len(p.TS) > 0 {
			got.TS, _ = p.Time()
		}
		d, _ := p.RecordedDuration()
		got.Duration = d
		for _, h := range p.Req.Headers {
			got.Headers = append(got.Headers, Field{string(h.Name), string(h.Value)})
		}
		for _, h := range p.Res.Headers {
			got.ResHeaders = append(got.ResHeaders, Field{string(h.Name), string(h.Value)})
		}
		for _, h := range p.Res.Trailers {
			got.ResTrailers = append(got.ResTrailers, Field{string(h.Name), string(h.Value)})
		}
		want := r
		if i == 0 { // the values of a name go together, where it first stands
			want.Headers = []Field{{"content-type", "application/json"}, {"X-A", "1"}, {"X-A", "2"}, {"Accept", "*/*"}, {"x-a", "lower"}}
		}
		if !equalRecord(got, want) {
			t.Errorf("record %d:\n got %+v\nwant %+v", i, got, want)
		}
	}
}

func equalRecord(a, b Record) bool {
	same := func(x, y []Field) bool {
		if len(x) != len(y) {
			return false
		}
		for i := range x {
			if x[i] != y[i] {
				return false
			}
		}
		return true
	}
	return a.TS.Equal(b.TS) && a.Duration == b.Duration && a.Protocol == b.Protocol && a.Session == b.Session && a.Direction == b.Direction && a.Version == b.Version &&
		a.Method == b.Method && a.URI == b.URI && a.Host == b.Host && bytes.Equal(a.Body, b.Body) && a.Status == b.Status &&
		bytes.Equal(a.ResBody, b.ResBody) && same(a.Headers, b.Headers) && same(a.ResHeaders, b.ResHeaders) &&
		same(a.ResTrailers, b.ResTrailers)
}

func TestAppendChecked(t *testing.T) {
	dst := []byte("kept\n")
	dst, err := AppendChecked(dst, &Record{Method: "GET", URI: "/ok", Host: "h"})
	if err != nil || !strings.HasPrefix(string(dst), "kept\n{") || CheckLine(dst[len("kept\n"):]) != nil {
		t.Fatalf("%v: %q", err, dst)
	}
	n := len(dst)
	dst, err = AppendChecked(dst, &Record{Method: "GET", URI: "foo", Host: "h"})
	if err == nil || !strings.Contains(err.Error(), "http.req.uri") || len(dst) != n {
		t.Errorf("a target Open refuses: %v, %d bytes kept of %d", err, len(dst), n)
	}
}

// TestAppendJSONString checks every ASCII byte, and UTF-8 beyond, round
// trips through encoding/json.
func TestAppendJSONString(t *testing.T) {
	var all []byte
	for c := range 0x80 {
		all = append(all, byte(c))
	}
	for _, s := range []string{string(all), "é ✓ \u2028", `"\"`, ""} {
		b := AppendJSONString([]byte("x"), s)
		var got string
		if !json.Valid(b[1:]) || json.Unmarshal(b[1:], &got) != nil || got != s || b[0] != 'x' {
			t.Errorf("%q written as %s", s, b)
		}
	}
}
