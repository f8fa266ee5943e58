package mock

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestDecodedBodiesSentEncoded: an answer Speedscale recorded decoded
// (tags "decoded": "true") under Content-Encoding: gzip, as its snapshots
// of a Go service's calls are, and a plain body recorded under gzip by
// another tool, reach a client that decodes gzip as the JSON they hold,
// over HTTP/1.1 and HTTP/2; a body recorded gzip-encoded goes as it was,
// whatever its tags say.
// Before, the client failed: "gzip: invalid header".
func TestDecodedBodiesSentEncoded(t *testing.T) {
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	io.WriteString(w, `{"already":"gzip"}`)
	w.Close()
	lines := strings.Join([]string{
		`{"direction":"OUT","l7protocol":"http","tags":{"captureMode":"proxy","decoded":"true"},"http":{"req":{"method":"GET","uri":"/v4/launches/latest","host":"api.example.com"},"res":{"statusCode":200,"headers":{"Content-Encoding":["gzip"],"Content-Length":["768"],"Content-Type":["application/json"]},"body":"{\"name\":\"Crew-5\"}"}}}`,
		`{"direction":"OUT","l7protocol":"http","http":{"req":{"method":"GET","uri":"/plain-under-gzip","host":"api.example.com"},"res":{"statusCode":200,"headers":{"Content-Encoding":["gzip"]},"body":"{\"plain\":true}"}}}`,
		`{"direction":"OUT","l7protocol":"http","http":{"req":{"method":"GET","uri":"/gzip","host":"api.example.com"},"res":{"statusCode":200,"headers":{"Content-Encoding":["gzip"]},"bodyBase64":"` + base64.StdEncoding.EncodeToString(gz.Bytes()) + `"}}}`,
		`{"direction":"OUT","l7protocol":"http","tags":{"decoded":"true"},"http":{"req":{"method":"GET","uri":"/tagged-but-gzip","host":"api.example.com"},"res":{"statusCode":200,"headers":{"Content-Encoding":["gzip"]},"bodyBase64":"` + base64.StdEncoding.EncodeToString(gz.Bytes()) + `"}}}`,
	}, "\n") + "\n"
	s := start(t, Options{File: writeFile(t, lines)})
	for _, h2 := range []bool{false, true} {
		c := through(s, nil, h2)
		c.Transport.(*http.Transport).DisableCompression = false // asks for gzip and decodes it, as a Go service does
		for _, tc := range []struct{ path, want string }{
			{"/v4/launches/latest", `{"name":"Crew-5"}`},
			{"/plain-under-gzip", `{"plain":true}`},
			{"/gzip", `{"already":"gzip"}`},
			{"/tagged-but-gzip", `{"already":"gzip"}`}, // encoded once, not twice
		} {
			resp, err := c.Get("http://api.example.com" + tc.path)
			if err != nil {
				t.Fatalf("h2 %v, %s: %v", h2, tc.path, err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || string(body) != tc.want || !resp.Uncompressed {
				t.Errorf("h2 %v, %s: got %q (%v, decoded by the client %v), want %q sent gzip-encoded", h2, tc.path, body, err, resp.Uncompressed, tc.want)
			}
		}
	}
	if r := s.Report(); r.RewriteFailed != 0 || r.Misses != 0 {
		t.Errorf("report: %d rewrites failed, %d misses; want none", r.RewriteFailed, r.Misses)
	}
}
