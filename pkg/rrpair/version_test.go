package rrpair

import "testing"

// TestIsHTTP2Spellings: every spelling recorders write for HTTP/2 and 3
// counts; HTTP/1.x and nothing do not.
func TestIsHTTP2Spellings(t *testing.T) {
	for v, want := range map[string]bool{
		"2": true, "3": true, "2.0": true, "HTTP/2": true, "HTTP/2.0": true, "http/2.0": true, "Http/2": true,
		"HTTP/3": true, "http/3.0": true, "h2": true, "H2": true, "h2c": true, "h3": true, "h3-29": true,
		"": false, "1.1": false, "1.0": false, "HTTP/1.1": false, "http/1.0": false, "h1": false, "unknown": false, "HTTP/": false, "h": false,
	} {
		p := Pair{Version: []byte(v)}
		if got := p.IsHTTP2(); got != want {
			t.Errorf("IsHTTP2(%q) = %v, want %v", v, got, want)
		}
	}
}
