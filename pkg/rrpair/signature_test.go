package rrpair

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// A signature line as Speedscale's reaction file writes it (trimmed):
// mutableSignature, its base64 twin signature, http.sig, and command,
// location and network_address.
const reactionLine = `{"msgType":"rrpair","ts":"2025-11-25T18:06:40Z","l7protocol":"https","direction":"OUT",` +
	`"network_address":"api.nasa.gov:443","command":"GET","location":"/planetary/apod","status":"429",` +
	`"http":{"res":{"statusCode":429,"headers":{"Content-Type":["application/json"]},"body":"{}"},` +
	`"sig":{"host":"api.nasa.gov","method":"GET","url":"/planetary/apod","sessionKey":"1","instance":1}},` +
	`"signature":{"http:host":"YXBpLm5hc2EuZ292","http:method":"R0VU","http:queryparams:api_key":"REVNT19LRVk=","http:url":"L3BsYW5ldGFyeS9hcG9k","instance":"MQ=="},` +
	`"mutableSignature":{"http:host":"api.nasa.gov","http:method":"GET","http:queryparams:api_key":"DEMO_KEY","http:url":"/planetary/apod","instance":"1"}}`

func TestSignatureLines(t *testing.T) {
	res := `"http":{"res":{"statusCode":200,"body":"ok"}}`
	tests := []struct {
		name                 string
		line                 string
		method, host, uri    string
		body                 string
		instance             int
		unread               string
		wantErr              string // a substring of the line's error
		fromSignatureMissing bool
	}{
		{name: "as Speedscale writes it", line: reactionLine,
			method: "GET", host: "api.nasa.gov", uri: "/planetary/apod?api_key=DEMO_KEY", instance: 1},
		{name: "base64 signature only",
			line:   `{"signature":{"http:host":"aA==","http:method":"UE9TVA==","http:url":"L28=","http:queryparams":"","http:requestBodyJSON":"eyJhIjoxfQ==","instance":"Mg=="},` + res + `}`,
			method: "POST", host: "h", uri: "/o", body: `{"a":1}`, instance: 2},
		{name: "query params in the order written, escaped",
			line:   `{"mutableSignature":{"http:method":"GET","http:url":"/s","http:queryparams:q":"a b&c","http:queryparams:page":"2"},` + res + `}`,
			method: "GET", uri: "/s?q=a%20b%26c&page=2"},
		{name: "raw http:queryparams",
			line:   `{"mutableSignature":{"http:method":"GET","http:url":"/s","http:queryparams":"b=2&a=1"},` + res + `}`,
			method: "GET", uri: "/s?b=2&a=1"},
		{name: "http.sig fills what the signature lacks",
			line:   `{"mutableSignature":{"http:url":"/m"},"http":{"res":{"statusCode":200},"sig":{"method":"PUT","host":"h2","instance":3}}}`,
			method: "PUT", host: "h2", uri: "/m", instance: 3},
		{name: "command, location, network_address only",
			line:   `{"command":"DELETE","location":"/x/1","network_address":"db.svc:8080",` + res + `}`,
			method: "DELETE", host: "db.svc:8080", uri: "/x/1"},
		{name: "a key not read is named",
			line:   `{"mutableSignature":{"http:method":"GET","http:url":"/me","5":"nate"},` + res + `}`,
			method: "GET", uri: "/me", unread: "5"},
		{name: "no method anywhere",
			line:    `{"mutableSignature":{"http:url":"/m"},` + res + `}`,
			wantErr: "mutableSignature.http:method: missing (and no http.sig.method or command)"},
		{name: "a url that is not a path",
			line:    `{"mutableSignature":{"http:method":"GET","http:url":"m"},` + res + `}`,
			wantErr: `mutableSignature.http:url: want a path starting with /`},
		{name: "bad base64",
			line:    `{"signature":{"http:method":"R0VU!","http:url":"L28="},` + res + `}`,
			wantErr: "signature.http:method: bad base64"},
		{name: "an instance that is not a number",
			line:    `{"mutableSignature":{"http:method":"GET","http:url":"/m","instance":"first"},` + res + `}`,
			wantErr: `mutableSignature.instance: want a whole number, got "first"`},
		{name: "a line with its request is a request pair",
			line:   `{"mutableSignature":{"http:method":"GET","http:url":"/sig"},"http":{"req":{"method":"POST","uri":"/req"},"res":{"statusCode":200}}}`,
			method: "POST", uri: "/req", fromSignatureMissing: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, tt.line+"\n")
			f, err := Open(path, Options{Signatures: true})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), ":1: ") {
					t.Fatalf("got error %v, want one at line 1 with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var p Pair
			if err := f.NewCursor().Decode(0, &p); err != nil {
				t.Fatal(err)
			}
			if string(p.Req.Method) != tt.method || string(p.Req.Host) != tt.host || string(p.Req.URI) != tt.uri || string(p.Req.Body) != tt.body {
				t.Errorf("got %s %s %s body %q, want %s %s %s body %q", p.Req.Method, p.Req.Host, p.Req.URI, p.Req.Body, tt.method, tt.host, tt.uri, tt.body)
			}
			if wantOut := !tt.fromSignatureMissing; p.IsOut() != wantOut {
				t.Errorf("got direction %q, want OUT %v (a signature line says OUT, or is OUT)", p.Direction, wantOut)
			}
			if p.FromSignature == tt.fromSignatureMissing || p.Instance != tt.instance || string(p.UnreadKey) != tt.unread {
				t.Errorf("got FromSignature %v, instance %d, unread %q; want %v, %d, %q", p.FromSignature, p.Instance, p.UnreadKey, !tt.fromSignatureMissing, tt.instance, tt.unread)
			}
		})
	}
}

// TestSignatureLinesSkippedByARun: without Options.Signatures (a run) a
// signature line is skipped and counted as one, not as response_only; a
// file of nothing else says that replay mock serves them.
func TestSignatureLinesSkippedByARun(t *testing.T) {
	content := reactionLine + "\n" +
		`{"l7protocol":"http","http":{"res":{"statusCode":200}}}` + "\n" +
		`{"l7protocol":"postgres","postgres":{"query":"SELECT 1"}}` + "\n" +
		`{"l7protocol":"http","http":{"req":{"method":"GET","uri":"/a","host":"h"},"res":{"statusCode":200}}}` + "\n"
	f, err := Open(writeFile(t, content), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := Skipped{Protocol: map[string]int{"postgres": 1}, Signature: 1, ResponseOnly: 1}
	if got := f.Skipped(); got.Signature != 1 || got.ResponseOnly != 1 || got.Protocol["postgres"] != 1 || f.Len() != 1 {
		t.Errorf("got %d pairs, skipped %+v; want 1 pair, skipped %+v", f.Len(), got, want)
	}
	if got := strings.Join(want.Kinds(), ", "); got != "postgres 1, signature 1, response_only 1" {
		t.Errorf("kinds: got %q", got)
	}
	_, err = Open(writeFile(t, reactionLine+"\n"), Options{})
	if !errors.Is(err, ErrAllSkipped) || !strings.Contains(err.Error(), "skipped 1 line (signature 1); signature lines are answers whose request is only a signature: replay mock serves them") {
		t.Errorf("a file of signature lines only: got %v", err)
	}
	// Read for the mock, the same file has two pairs; inspect counts the
	// signature line.
	g, err := Open(writeFile(t, content), Options{Signatures: true})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	st, err := g.Inspect()
	if err != nil {
		t.Fatal(err)
	}
	if st.Pairs != 2 || st.SignatureLines != 1 || st.Skipped.Signature != 0 || st.Skipped.ResponseOnly != 1 {
		t.Errorf("got %d pairs, %d signature lines, skipped %+v; want 2, 1, response_only 1", st.Pairs, st.SignatureLines, st.Skipped)
	}
}

// TestDecodeSignatureLineDoesNotAllocate: a warmed-up cursor reads a
// signature line without allocating, as it does a request pair.
func TestDecodeSignatureLineDoesNotAllocate(t *testing.T) {
	f, err := Open(writeFile(t, reactionLine+"\n"), Options{Signatures: true})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c := f.NewCursor()
	var p Pair
	if err := c.Decode(0, &p); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { c.Decode(0, &p) }); n != 0 {
		t.Errorf("got %v allocations a decode, want 0", n)
	}
}

// FuzzSignatureLine: a signature line never panics the decoder, and what
// a validating decoder accepts, the trusted decoder of a run's cursor
// reads the same way.
func FuzzSignatureLine(f *testing.F) {
	f.Add([]byte(reactionLine))
	f.Add([]byte(`{"signature":{"http:method":"R0VU","http:url":"L28=","instance":"MQ=="},"http":{"res":{"statusCode":200}}}`))
	f.Add([]byte(`{"command":"GET","location":"/a?b=1","network_address":"h:80","http":{"res":{"statusCode":200}}}`))
	f.Add([]byte(`{"mutableSignature":{"http:method":"GET","http:url":"/s","http:queryparams:q\u00e9":"a b","5":"x"},"http":{"res":{"statusCode":200},"sig":{"instance":"2"}}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		if bytes.IndexByte(line, '\n') >= 0 {
			return
		}
		var p, q Pair
		v := decoder{validate: true, signatures: true}
		kind, err := v.decode(line, &p)
		if err == nil && !json.Valid(line) {
			t.Fatalf("accepted invalid JSON %q", line)
		}
		if err != nil || kind != replayable || !p.FromSignature {
			return
		}
		r := decoder{signatures: true}
		if kind, err := r.decode(line, &q); err != nil || kind != replayable {
			t.Fatalf("validated, then the trusted decoder: kind %d, %v", kind, err)
		}
		if !bytes.Equal(p.Req.Method, q.Req.Method) || !bytes.Equal(p.Req.URI, q.Req.URI) || !bytes.Equal(p.Req.Host, q.Req.Host) ||
			!bytes.Equal(p.Req.Body, q.Req.Body) || p.Instance != q.Instance || !bytes.Equal(p.UnreadKey, q.UnreadKey) {
			t.Fatalf("validating and trusted decoders differ on %q: %s %s %s vs %s %s %s", line, p.Req.Method, p.Req.Host, p.Req.URI, q.Req.Method, q.Req.Host, q.Req.URI)
		}
	})
}

// TestSignatureFieldsOfAnotherShape: top-level fields named like a
// signature's but of another shape are ignored, as unknown fields are: a
// line with its request replays, an answer alone stays response_only.
func TestSignatureFieldsOfAnotherShape(t *testing.T) {
	content := `{"signature":"c2lnbmVk","command":{"op":1},"location":[1,2],"http":{"req":{"method":"GET","uri":"/a"},"res":{"statusCode":200}}}` + "\n" +
		`{"signature":"c2lnbmVk","location":null,"http":{"res":{"statusCode":200}}}` + "\n"
	for _, sigs := range []bool{false, true} {
		f, err := Open(writeFile(t, content), Options{Signatures: sigs})
		if err != nil {
			t.Fatalf("Signatures %v: %v", sigs, err)
		}
		if sk := f.Skipped(); f.Len() != 1 || sk.ResponseOnly != 1 || sk.Signature != 0 {
			t.Errorf("Signatures %v: got %d pairs, skipped %+v; want 1 pair, response_only 1", sigs, f.Len(), sk)
		}
		f.Close()
	}
}

// TestInspectCountsUnreadSignatureKeys: inspect names, with their count,
// the signature keys a request was not built from.
func TestInspectCountsUnreadSignatureKeys(t *testing.T) {
	line := func(extra string) string {
		return `{"mutableSignature":{"http:method":"GET","http:url":"/me"` + extra + `},"http":{"res":{"statusCode":200}}}` + "\n"
	}
	f, err := Open(writeFile(t, line(`,"5":"nate"`)+line(`,"5":"ann"`)+line(`,"user":"x"`)+line("")), Options{Signatures: true})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Inspect()
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]int{"5": 2, "user": 1}; st.SignatureLines != 4 || !reflect.DeepEqual(st.UnreadSignatureKeys, want) {
		t.Errorf("got %d signature lines, unread keys %v; want 4, %v", st.SignatureLines, st.UnreadSignatureKeys, want)
	}
}

// BenchmarkDecodeSignatureLine decodes a signature line for the mock (its
// request built from mutableSignature).
func BenchmarkDecodeSignatureLine(b *testing.B) {
	f, err := Open(writeFile(b, reactionLine+"\n"), Options{Signatures: true})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	c := f.NewCursor()
	var p Pair
	b.ReportAllocs()
	b.SetBytes(int64(len(reactionLine)))
	for b.Loop() {
		if err := c.Decode(0, &p); err != nil {
			b.Fatal(err)
		}
	}
}
