package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --compare body, end to end: a SUT that answers gzip is compared by what
// its bodies mean, against a recording that kept them decoded (as HAR
// does) and against one that kept them gzip (compressed otherwise, so the
// bytes differ). A SUT whose decoded answer differs still mismatches.
func TestCompareBodyGzip(t *testing.T) {
	doc := func(id string) string { return `{"id":"` + id + `","status":"accepted"}` }
	gz := func(s string, level int) []byte {
		var b bytes.Buffer
		w, _ := gzip.NewWriterLevel(&b, level)
		w.Write([]byte(s))
		w.Close()
		return b.Bytes()
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := doc(strings.TrimPrefix(r.URL.Path, "/doc/"))
		if r.URL.Query().Get("drift") != "" {
			body = doc("drifted")
		}
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Type", "application/json")
		w.Write(gz(body, gzip.BestSpeed))
	}))
	defer srv.Close()

	const n = 6
	line := func(id, query string, gzipRecording bool) string {
		res := fmt.Sprintf(`"res":{"statusCode":200,"headers":{"Content-Type":["application/json"]},"body":%q}`, doc(id))
		if gzipRecording {
			res = fmt.Sprintf(`"res":{"statusCode":200,"headers":{"Content-Encoding":["gzip"],"Content-Type":["application/json"]},"bodyBase64":%q}`,
				base64.StdEncoding.EncodeToString(gz(doc(id), gzip.BestCompression)))
		}
		return fmt.Sprintf(`{"http":{"req":{"method":"GET","uri":"/doc/%s%s","host":"api.test"},%s}}`, id, query, res)
	}
	for _, tt := range []struct {
		name          string
		gzipRecording bool
		query         string
		matched       float64
	}{
		{"decoded recording", false, "", n},
		{"gzip recording", true, "", n},
		{"answers that drifted", false, "?drift=1", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var lines []string
			for i := 0; i < n; i++ {
				lines = append(lines, line(fmt.Sprint("e-", i), tt.query, tt.gzipRecording))
			}
			dir := t.TempDir()
			file, out := filepath.Join(dir, "traffic.jsonl"), filepath.Join(dir, "summary.json")
			if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			r := runMain(t, context.Background(), "", "run", "-f", file, "--target", srv.URL, "--compare", "body", "--out", out, "--progress", "off")
			if r.code != 0 {
				t.Fatalf("exit %d: %s%s", r.code, r.stdout, r.stderr)
			}
			c := readSummary(t, out)["compare"].(map[string]any)
			if c["compared"] != float64(n) || c["matched"] != tt.matched {
				t.Errorf("compare: compared %v, matched %v, want %d compared, %v matched (%v)", c["compared"], c["matched"], n, tt.matched, c["mismatches"])
			}
			if tt.matched == 0 {
				m := c["mismatches"].([]any)[0].(map[string]any)
				if m["kind"] != "body" || m["replayed"] != doc("drifted") {
					t.Errorf("mismatch %v, want a body mismatch showing the decoded answer", m)
				}
			}
		})
	}
}
