package rrpair

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
	"unsafe"
)

func uintptrOf(p *byte) uintptr { return uintptr(unsafe.Pointer(p)) }

// FuzzDecode checks the decoder against encoding/json on any line: it must
// never panic, must reject what is not JSON, and whatever it accepts must be
// a JSON object whose method and URI agree with encoding/json's reading.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(benchLine))
	f.Add([]byte(goodLine))
	f.Add([]byte(grpcLine))
	f.Add([]byte(`{"http":{"req":{"method":"GET","uri":"/a\u00e9\ud83d\ude00","host":"h","headers":{"A":["\u0000"]}}}}`))
	f.Add([]byte(`{"http":{"req":{"method":"PUT","url":"/x","bodyBase64":"AAEC/w=="}},"tags":null}`))
	seeds, _ := filepath.Glob("../../testdata/*.jsonl")
	local, _ := filepath.Glob("testdata/*.jsonl") // a Speedscale export, lines of every skip kind
	if seeds = append(seeds, local...); len(seeds) > 0 {
		for _, path := range seeds {
			data, err := os.ReadFile(path)
			if err != nil {
				continue
			}
			for i, line := range bytes.Split(data, []byte("\n")) {
				if i >= 20 {
					break
				}
				f.Add(line)
			}
		}
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if bytes.IndexByte(line, '\n') >= 0 {
			return // the file splits lines before decoding
		}
		var p Pair
		d := decoder{validate: true}
		kind, err := d.decode(line, &p)
		valid := json.Valid(line)
		if err == nil && !valid {
			t.Fatalf("accepted invalid JSON %q", line)
		}
		if err != nil || kind != replayable {
			return
		}
		var v struct {
			HTTP struct {
				Req struct {
					Method string `json:"method"`
				} `json:"req"`
			} `json:"http"`
		}
		if jerr := json.Unmarshal(line, &v); jerr != nil {
			// encoding/json rejects wrong types we never read; fine.
			return
		}
		if bytes.IndexByte(line, '\\') < 0 && bytes.Count(line, []byte(`"method"`)) == 1 && v.HTTP.Req.Method != string(p.Req.Method) {
			t.Fatalf("method: got %q, encoding/json read %q", p.Req.Method, v.HTTP.Req.Method)
		}
		// Decoding again with run-time settings must agree.
		var q Pair
		rd := decoder{}
		if kind, err := rd.decode(line, &q); err != nil || kind != replayable {
			t.Fatalf("run-time decode failed on a validated line: %v", err)
		}
		// Validation leaves a text body escaped; a run decodes it.
		body := p.Req.Body
		if !bytes.Equal(q.Req.Body, body) {
			body, _ = AppendUnescaped(nil, body)
		}
		if !bytes.Equal(q.Req.Body, body) || !bytes.Equal(q.Req.URI, p.Req.URI) {
			t.Fatalf("run-time decode differs: body %q vs %q, uri %q vs %q", q.Req.Body, p.Req.Body, q.Req.URI, p.Req.URI)
		}
	})
}

// FuzzUnescape compares unescape with encoding/json on string literals.
func FuzzUnescape(f *testing.F) {
	for _, s := range []string{`a\nb`, `\u00e9`, `\ud83d\ude00`, `\ud83d`, `\\\/\"`, `x\u0041y`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		lit := []byte(`"` + s + `"`)
		sc := scanner{b: lit}
		raw, _, err := sc.str()
		var want string
		jerr := json.Unmarshal(lit, &want)
		if (err == nil) != (jerr == nil) || err != nil {
			if err == nil && sc.i != len(lit) {
				return
			}
			if (err == nil) != (jerr == nil) && sc.i == len(lit) {
				t.Fatalf("%q: scanner err %v, encoding/json err %v", lit, err, jerr)
			}
			return
		}
		if sc.i != len(lit) {
			return // the literal ended early at an unescaped quote
		}
		got, uerr := AppendUnescaped(nil, raw)
		if uerr != nil {
			t.Fatalf("%q: %v", lit, uerr)
		}
		if string(got) != want && bytes.Equal([]byte(want), bytes.ToValidUTF8([]byte(want), []byte("\uFFFD"))) && bytes.Equal(raw, bytes.ToValidUTF8(raw, nil)) {
			t.Fatalf("%q: got %q, want %q", lit, got, want)
		}
	})
}

// FuzzUnixNano: the allocation-free ts parser agrees with time.Parse on
// everything it accepts.
func FuzzUnixNano(f *testing.F) {
	for _, s := range []string{"2026-11-01T10:00:00Z", "2026-11-01T10:00:00.123456789+02:00", "1999-12-31T23:59:60Z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p := Pair{TS: []byte(s)}
		ns, ok := p.UnixNano()
		if !ok {
			return
		}
		want, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			// time.Parse refuses some forms we take (a leap second, a
			// space or a lower-case t for T); they are still times.
			return
		}
		if want.UnixNano() != ns {
			t.Fatalf("%q: got %d, time.Parse %d", s, ns, want.UnixNano())
		}
	})
}
