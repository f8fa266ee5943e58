package demo

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
)

func start(t *testing.T) *Server {
	t.Helper()
	s, err := Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func do(t *testing.T, method, url, body string, hdr map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func TestEndpoints(t *testing.T) {
	s := start(t)
	tests := []struct {
		name, method, path, body string
		hdr                      map[string]string
		status                   int
		contains                 string
	}{
		{"ingest", "POST", "/events", `{"type":"click"}`, nil, 202, `"status":"accepted"`},
		{"ingest bad JSON", "POST", "/events", `{"type":`, nil, 400, "not a JSON object"},
		{"batch", "POST", "/events/batch", `[{"a":1},{"b":2}]`, nil, 202, `"count":2`},
		{"batch not an array", "POST", "/events/batch", `{}`, nil, 400, "array"},
		{"event", "GET", "/events/42", "", nil, 200, `"id":"42"`},
		{"feed", "GET", "/users/7/feed?limit=3", "", nil, 200, `"evt-3"`},
		{"feed bad limit", "GET", "/users/7/feed?limit=x", "", nil, 400, "limit"},
		{"health", "GET", "/health", "", nil, 200, "ok"},
		{"unknown", "GET", "/nope", "", nil, 404, "not found"},
		{"wrong method", "GET", "/events", "", nil, 405, "method not allowed"},
		{"forced failure", "POST", "/events", `{}`, map[string]string{"X-Demo-Fail": "1"}, 503, "unavailable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := do(t, tt.method, s.URL()+tt.path, tt.body, tt.hdr)
			if status != tt.status || !strings.Contains(body, tt.contains) {
				t.Errorf("got %d %q, want %d containing %q", status, body, tt.status, tt.contains)
			}
		})
	}
	if got := s.Requests(); got != int64(len(tests)) {
		t.Errorf("Requests: got %d, want %d", got, len(tests))
	}
}

func TestLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "192.0.2.1:0", ":0", "example.com:80"} {
		if s, err := Start(addr); err == nil {
			s.Close()
			t.Errorf("Start(%q) succeeded, want a refusal", addr)
		}
	}
}

func TestCloseStopsListening(t *testing.T) {
	s, err := Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := s.URL()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(url + "/health"); err == nil {
		t.Error("the server still answers after Close")
	}
}

// TestDemoTrafficReplaysCleanly sends every recorded request to the demo
// SUT and expects the recorded status back, so the demo's report shows
// what the recording shows.
func TestDemoTrafficReplaysCleanly(t *testing.T) {
	s := start(t)
	f, err := os.Open(trafficPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		n++
		var p struct {
			HTTP struct {
				Req struct {
					Method     string              `json:"method"`
					URI        string              `json:"uri"`
					Headers    map[string][]string `json:"headers"`
					Body       string              `json:"body"`
					BodyBase64 string              `json:"bodyBase64"`
				} `json:"req"`
				Res struct {
					StatusCode int `json:"statusCode"`
				} `json:"res"`
			} `json:"http"`
		}
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			t.Fatalf("line %d: %v", n, err)
		}
		body := []byte(p.HTTP.Req.Body)
		if p.HTTP.Req.BodyBase64 != "" {
			if body, err = base64.StdEncoding.DecodeString(p.HTTP.Req.BodyBase64); err != nil {
				t.Fatalf("line %d: %v", n, err)
			}
		}
		req, err := http.NewRequest(p.HTTP.Req.Method, s.URL()+p.HTTP.Req.URI, bytes.NewReader(body))
		if err != nil {
			t.Fatalf("line %d: %v", n, err)
		}
		for k, vs := range p.HTTP.Req.Headers {
			for _, v := range vs {
				req.Header.Add(k, v)
			}
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("line %d: %v", n, err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != p.HTTP.Res.StatusCode {
			t.Errorf("line %d %s %s: got %d, recorded %d", n, p.HTTP.Req.Method, p.HTTP.Req.URI, res.StatusCode, p.HTTP.Res.StatusCode)
		}
	}
	if n < 250 {
		t.Errorf("only %d lines of demo traffic", n)
	}
}
