package main

import (
	"context"
	"strings"
	"testing"
)

// TestFlagsCheckedAsTheFileIs: values a flag cannot mean are refused
// before anything is sent, naming the flag.
func TestFlagsCheckedAsTheFileIs(t *testing.T) {
	srv := newSUT(t, 0, 200)
	good := trafficFile(t, 5)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"port out of range", []string{"run", "-f", good, "--target", "http://127.0.0.1:99999"}, "--target: want a port in 1..65535"},
		{"port zero", []string{"run", "-f", good, "--target", "http://127.0.0.1:0"}, "--target: want a port in 1..65535"},
		{"host-map port out of range", []string{"run", "-f", good, "--target", srv.URL, "--host-map", "recorded:80=http://127.0.0.1:70000"}, "--host-map"},
		{"explicit zero duration", []string{"run", "-f", good, "--target", srv.URL, "--duration", "0s"}, "--duration: want a positive duration"},
		{"explicit zero max-vus", []string{"run", "-f", good, "--target", srv.URL, "--rate", "10/s", "--duration", "1s", "--max-vus", "0"}, "--max-vus: want at least 1"},
		{"export k6 zero duration", []string{"export", "k6", "-f", good, "--target", srv.URL, "--duration", "0s", "-o", t.TempDir() + "/x.js"}, "--duration: want a positive duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runMain(t, context.Background(), "", tt.args...)
			if r.code != 1 || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want 1 and %q", r.code, r.stderr, tt.want)
			}
			if n := srv.count.Load(); n != 0 {
				t.Fatalf("the SUT received %d requests, want 0", n)
			}
		})
	}
}
