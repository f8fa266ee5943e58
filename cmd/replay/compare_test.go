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
	"sync"
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

// TestCompareAfterCorrelation: --compare body maps what correlate learned
// (the recorded order id ↔ the live one) before comparing, so that a
// correlated replay of create → read → pay against a SUT that makes its
// own ids matches the recording in every answer, Location header
// included (--compare-header); a SUT that answers otherwise than recorded
// (an order not paid) still mismatches.
func TestCompareAfterCorrelation(t *testing.T) {
	var mu sync.Mutex
	made, status := 0, "paid"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		path := r.URL.Path
		switch {
		case r.Method == "POST" && path == "/orders":
			mu.Lock()
			made++
			id := fmt.Sprintf("o-live%d", made)
			mu.Unlock()
			w.Header().Set("Location", "/orders/"+id)
			w.WriteHeader(201)
			fmt.Fprintf(w, `{"id":%q,"status":"created"}`, id)
		case r.Method == "GET" && strings.HasPrefix(path, "/orders/o-live"):
			fmt.Fprintf(w, `{"id":%q,"status":"created"}`, strings.TrimPrefix(path, "/orders/"))
		case r.Method == "POST" && strings.HasPrefix(path, "/orders/o-live") && strings.HasSuffix(path, "/pay"):
			fmt.Fprintf(w, `{"id":%q,"status":%q}`, strings.TrimSuffix(strings.TrimPrefix(path, "/orders/"), "/pay"), status)
		default:
			w.WriteHeader(404)
			fmt.Fprint(w, `{"error":"no such order"}`)
		}
	}))
	defer srv.Close()
	const sessions = 5
	var lines []string
	for i := range sessions {
		id := fmt.Sprintf("o-%d", 1000+i)
		pair := func(method, uri string, status int, headers, body string) string {
			return fmt.Sprintf(`{"tags":{"session":"s%d"},"http":{"req":{"method":%q,"uri":%q,"host":"api.test"},"res":{"statusCode":%d,"headers":{"Content-Type":["application/json"]%s},"body":%q}}}`,
				i, method, uri, status, headers, body)
		}
		lines = append(lines,
			pair("POST", "/orders", 201, `,"Location":["/orders/`+id+`"]`, `{"id":"`+id+`","status":"created"}`),
			pair("GET", "/orders/"+id, 200, "", `{"id":"`+id+`","status":"created"}`),
			pair("POST", "/orders/"+id+"/pay", 200, "", `{"status":"paid","id":"`+id+`"}`))
	}
	dir := t.TempDir()
	file, transforms := filepath.Join(dir, "traffic.jsonl"), filepath.Join(dir, "transforms.yaml")
	os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	os.WriteFile(transforms, []byte("transforms:\n  - correlate: {endpoint: POST /orders, json: id}\n"), 0o644)
	for _, tt := range []struct {
		name    string
		status  string
		matched float64
	}{
		{"a correct replay", "paid", 3 * sessions},
		{"orders not paid", "declined", 2 * sessions},
	} {
		t.Run(tt.name, func(t *testing.T) {
			mu.Lock()
			status = tt.status
			mu.Unlock()
			out := filepath.Join(t.TempDir(), "summary.json")
			r := runMain(t, context.Background(), "", "run", "-f", file, "--target", srv.URL, "--transforms", transforms,
				"--compare", "body", "--compare-header", "Location", "--vus", "2", "--out", out, "--progress", "off")
			if r.code != 0 {
				t.Fatalf("exit %d: %s%s", r.code, r.stdout, r.stderr)
			}
			s := readSummary(t, out)
			c := s["compare"].(map[string]any)
			if s["succeeded"] != float64(3*sessions) || c["compared"] != float64(3*sessions) || c["matched"] != tt.matched {
				t.Fatalf("succeeded %v, compared %v, matched %v; want %d, %d, %v (%v)", s["succeeded"], c["compared"], c["matched"], 3*sessions, 3*sessions, tt.matched, c["mismatches"])
			}
			if tt.matched < 3*sessions {
				m := c["mismatches"].([]any)[0].(map[string]any)
				if m["endpoint"] != "POST /orders/{id}/pay" || !strings.Contains(m["recorded"].(string), `"id":"o-live`) || !strings.Contains(m["replayed"].(string), `"declined"`) {
					t.Errorf("mismatch %v: want the pay answer, its recorded id mapped to the live one", m)
				}
			}
		})
	}
}
