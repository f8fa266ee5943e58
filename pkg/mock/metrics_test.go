package mock

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestServeMetrics: --metrics is bound as the mock's own addresses are
// (beyond loopback only with --allow-remote, the error naming the flag)
// and serves the mock's families.
func TestServeMetrics(t *testing.T) {
	t.Run("beyond loopback without --allow-remote", func(t *testing.T) {
		o := Options{File: file(t, polled()...), Listen: "127.0.0.1:0", Latency: "0"}
		err := Serve(context.Background(), o, Run{Metrics: "0.0.0.0:0", Duration: 5 * time.Second, Grace: time.Second})
		if err == nil || !strings.Contains(err.Error(), "--metrics 0.0.0.0:0 listens beyond loopback") || !strings.Contains(err.Error(), "--allow-remote") {
			t.Fatalf("got %v, want the --metrics address refused, naming --allow-remote", err)
		}
	})
	t.Run("on loopback", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		o := Options{File: file(t, polled()...), Listen: "127.0.0.1:0", Latency: "0"}
		go func() { done <- Serve(ctx, o, Run{Metrics: addr, Duration: 30 * time.Second, Grace: time.Second}) }()
		var body string
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			res, err := http.Get("http://" + addr + "/metrics")
			if err != nil {
				continue
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			body = string(b)
			break
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Serve: %v", err)
		}
		if want := `replay_mock_requests_total{result="hit"} 0`; !strings.Contains(body, want) {
			t.Errorf("scrape of %s:\n%s\nwant %s", addr, body, want)
		}
	})
}
