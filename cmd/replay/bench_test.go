package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/loopback"
	"github.com/replay-dev/replay/pkg/report"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/vu"
	"github.com/rs/zerolog"
)

// BenchmarkHotPath is the base hot path as a run wires it: decode from the
// mapped file, write, read, and record into the report's HDR histograms.
// allocs/op must be 0.
func BenchmarkHotPath(b *testing.B) {
	srv, err := loopback.NewCanned(loopback.Accepted202)
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	path := filepath.Join(b.TempDir(), "traffic.jsonl")
	line := `{"ts":"2026-11-01T10:00:00.1Z","tags":{"session":"s-1"},"http":{"req":{"method":"POST","uri":"/events?src=web","host":"ingest:8080","headers":{"Content-Type":["application/json"],"User-Agent":["shop-web/4.2"]},"body":"{\"type\":\"page_view\",\"user_id\":\"u-0012345\",\"ts\":1793527200123}"},"res":{"statusCode":202}}}` + "\n"
	if err := os.WriteFile(path, []byte(line+line), 0o644); err != nil {
		b.Fatal(err)
	}
	f, err := rrpair.Open(path, rrpair.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	rec := report.NewRecorder(f.Endpoints())
	pool := &vu.Pool{File: f, Sink: rec, Config: vu.Config{
		VUs: 1, Walk: vu.Loop, Iterations: int64(b.N), Target: srv.URL(), Timeout: 10 * time.Second, Log: zerolog.Nop(),
	}}
	b.ReportAllocs()
	b.ResetTimer()
	if _, err := pool.Run(context.Background()); err != nil {
		b.Fatal(err)
	}
	rec.Close()
	b.StopTimer()
	if s := rec.Summary(report.Meta{Model: "closed"}); s.Succeeded != int64(2*b.N) {
		b.Fatalf("succeeded %d of %d", s.Succeeded, 2*b.N)
	}
}
