package mock

import (
	"errors"
	"strings"
	"testing"
)

// TestReadBody: a body is read up to its limit and no further; an
// announced length past the limit is refused before a byte is read.
func TestReadBody(t *testing.T) {
	for _, tt := range []struct {
		name    string
		body    string
		length  int64
		limit   int
		want    string
		wantErr error
		left    int // bytes of the body not read
	}{
		{"within", "hello", 5, 10, "hello", nil, 0},
		{"exactly the limit", "hello", -1, 5, "hello", nil, 0},
		{"unknown length over", strings.Repeat("x", 40000), -1, 10000, "", errBodyOverLimit, 10000},
		{"announced over", strings.Repeat("x", 100), 100, 10, "", errBodyOverLimit, 100},
		{"none", "", 0, 10, "", nil, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := strings.NewReader(tt.body)
			got, err := readBody(r, tt.length, tt.limit, nil)
			if !errors.Is(err, tt.wantErr) || string(got) != tt.want {
				t.Errorf("got %q, %v; want %q, %v", got, err, tt.want, tt.wantErr)
			}
			if tt.wantErr != nil && r.Len() < tt.left {
				t.Errorf("%d bytes left unread, want at least %d", r.Len(), tt.left)
			}
		})
	}
}

// TestBodyLimit: a body a little longer than the recorded one (the same
// JSON pretty-printed) still matches; one past twice the longest recorded
// body of its route plus 64 KiB is answered 413, counted, without being
// matched.
func TestBodyLimit(t *testing.T) {
	s := start(t, Options{File: file(t,
		rec{method: "POST", uri: "/v1/charges", host: "api.test", reqBody: `{"amount":5,"currency":"eur"}`, status: 201, resBody: `{"id":"ch_1"}`})})
	c := through(s, nil, false)
	if st, _, body := do(t, c, "POST", "http://api.test/v1/charges", "{\n  \"currency\": \"eur\",\n  \"amount\": 5\n}"); st != 201 || body != `{"id":"ch_1"}` {
		t.Errorf("pretty-printed: %d %s, want 201", st, body)
	}
	big := `{"amount":5,"currency":"eur","pad":"` + strings.Repeat("x", bodySlack+100) + `"}`
	st, _, body := do(t, c, "POST", "http://api.test/v1/charges", big)
	if st != 413 || !strings.Contains(body, "request body over 65594 bytes") {
		t.Errorf("over the limit: %d %.300s, want 413 naming the limit", st, body)
	}
	if r := s.Report(); r.BodiesOverLimit != 1 || r.Misses != 1 || r.Hits != 1 {
		t.Errorf("report: %d over the limit, %d misses, %d hits; want 1, 1, 1", r.BodiesOverLimit, r.Misses, r.Hits)
	}
}
