package rrpair

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"unicode/utf8"
)

// TestLinesAreStrictUTF8 writes pairs as the importers make them from
// the wire (a pcap's or a gor capture's raw bytes: Latin-1 in a URI and
// a header value, a lone continuation byte in a body, junk in a session
// and a host) and checks each line is valid UTF-8 that Go's encoding/json
// and Python's strict json read, and that Open reads the URI, the header
// values and the body back byte for byte.
func TestLinesAreStrictUTF8(t *testing.T) {
	recs := []*Record{
		{Method: "GET", URI: "/caf\xe9?q=\xff\xfe", Host: "api", Headers: []Field{{"X-Name", "Jos\xe9"}, {"X-Ok", "é"}, {"X-Name", "plain"}}},
		{Method: "POST", URI: "/b", Host: "api", Session: "s-\xc3", Headers: []Field{{"Content-Type", "text/plain"}},
			Body: []byte("a\x80b"), Status: 200, ResHeaders: []Field{{"Set-Cookie", "n=\xa9"}}, ResBody: []byte("ok\xc0")},
		{Method: "GET", URI: "/ok/ünïcode", Host: "h\xe9st", Headers: []Field{{"Accept", "*/*"}}},
	}
	var file bytes.Buffer
	for i, r := range recs {
		line, err := AppendChecked(nil, r)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if !utf8.Valid(line) {
			t.Errorf("line %d is not valid UTF-8: %q", i, line)
		}
		var v any
		if err := json.Unmarshal(line, &v); err != nil {
			t.Errorf("line %d: encoding/json: %v", i, err)
		}
		file.Write(line)
	}
	path := filepath.Join(t.TempDir(), "t.jsonl")
	if err := os.WriteFile(path, file.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := OpenReader(bytes.NewReader(file.Bytes()), "t.jsonl", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Len() != len(recs) {
		t.Fatalf("opened %d pairs, want %d", f.Len(), len(recs))
	}
	for i, r := range recs {
		var p Pair
		if err := f.NewCursor().WithResponses().Decode(i, &p); err != nil {
			t.Fatal(err)
		}
		if string(p.Req.URI) != r.URI {
			t.Errorf("pair %d: uri %q, want %q", i, p.Req.URI, r.URI)
		}
		if string(p.Req.Body) != string(r.Body) || string(p.Res.Body) != string(r.ResBody) {
			t.Errorf("pair %d: bodies %q, %q, want %q, %q", i, p.Req.Body, p.Res.Body, r.Body, r.ResBody)
		}
		var got []string
		for _, h := range p.Req.Headers {
			got = append(got, string(h.Name)+": "+string(h.Value))
		}
		for _, h := range p.Res.Headers {
			got = append(got, string(h.Name)+": "+string(h.Value))
		}
		var want []string
		for _, hs := range [][]Field{r.Headers, r.ResHeaders} {
			for _, h := range hs { // a name's values together, where it first appears
				seen := false
				for _, w := range want {
					seen = seen || len(w) > len(h.Name) && w[:len(h.Name)+1] == h.Name+":"
				}
				if seen {
					continue
				}
				for _, v := range hs {
					if v.Name == h.Name {
						want = append(want, v.Name+": "+v.Value)
					}
				}
			}
		}
		if len(got) != len(want) {
			t.Fatalf("pair %d: headers %q, want %q", i, got, want)
		}
		for j := range got {
			if got[j] != want[j] {
				t.Errorf("pair %d: header %d %q, want %q", i, j, got[j], want[j])
			}
		}
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("REPLAY_CI") == "1" {
			t.Fatal("python3 is not installed, and REPLAY_CI=1")
		}
		t.Skip("SKIPPED: python3 is not installed: the strict Python read is not made")
	}
	out, err := exec.Command(py, "-c", `import json,sys; [json.loads(l) for l in open(sys.argv[1],encoding="utf-8",errors="strict")]`, path).CombinedOutput()
	if err != nil {
		t.Errorf("python3's strict json refused the file: %v\n%s", err, out)
	}
}
