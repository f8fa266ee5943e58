package run

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/testutil/loopback"
	"github.com/replay-dev/replay/pkg/recording"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/schedule"
	"github.com/replay-dev/replay/pkg/transform"
	"github.com/replay-dev/replay/pkg/transport/conn"
	"github.com/replay-dev/replay/pkg/transport/negotiate"
	"github.com/replay-dev/replay/pkg/vu"
	"github.com/rs/zerolog"
)

// hotPathLine is a realistic pair: an event POST with a bearer JWT (expired
// since the recording), a request id and two timestamps in the body.
const hotPathLine = `{"ts":"2026-11-01T10:00:00.1Z","tags":{"session":"s-1"},"http":{"req":{"method":"POST","uri":"/events?src=web","host":"ingest:8080","headers":{"Content-Type":["application/json"],"User-Agent":["shop-web/4.2"],"Authorization":["Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJzaG9wLXdlYiIsInVpZCI6MTIzNDU2Nzg5MDEyMzQ1Njc4OTAsImlhdCI6MTc5MzUyNzIwMCwiZXhwIjoxNzkzNTMwODAwfQ.Hk2F2m0s1a7l3QnNnJ0rYl3QXk0m3v5Q2Q1m1c1nq0U"],"X-Request-Id":["fcb94022-1e89-4ac5-a653-e360828c4282"]},"body":"{\"type\":\"page_view\",\"user_id\":\"u-0012345\",\"ts\":1793527200123,\"sent_at\":\"2026-11-01T10:00:00.123Z\"}"},"res":{"statusCode":202}}}` + "\n"

// BenchmarkHotPath is the base hot path as a run wires it: decode from the
// mapped file, write, read, and record into the report's HDR histograms.
// allocs/op must be 0.
func BenchmarkHotPath(b *testing.B) { hotPath(b, "") }

// BenchmarkHotPathTransforms is the same with the common transforms:
// timestamps shifted, a header set, the JWT re-signed (cached). allocs/op
// must be 0; ns/op against BenchmarkHotPath's is their cost.
func BenchmarkHotPathTransforms(b *testing.B) {
	hotPath(b, "transforms:\n  - timestamps: {auto: true}\n  - headers: {set: {X-Env: bench}}\n  - jwt: {secret: bench}\n")
}

func hotPath(b *testing.B, transforms string) {
	srv, err := loopback.NewCanned(loopback.Accepted202)
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	path := filepath.Join(b.TempDir(), "traffic.jsonl")
	if err := os.WriteFile(path, []byte(hotPathLine+hotPathLine), 0o644); err != nil {
		b.Fatal(err)
	}
	// As a run opens it: the escaped body unescaped once (--decode-cache).
	f, err := rrpair.Open(path, rrpair.Options{BodyCache: DefaultDecodeCacheMiB << 20})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	rec := recording.NewRecorder(f.Endpoints())
	// The transport a run builds: HTTP/2 where it may, here HTTP/1.1.
	tr, err := negotiate.New(negotiate.Options{Conn: conn.Options{Target: srv.URL(), Timeout: 10 * time.Second}})
	if err != nil {
		b.Fatal(err)
	}
	pool := &vu.Pool{File: f, Sink: rec, Transport: tr, Config: vu.Config{Load: schedule.Load{VUs: 1, Walk: schedule.Loop, Iterations: int64(b.N)}, Log: zerolog.Nop()}}
	var chain *transform.Chain
	if transforms != "" {
		spec, err := transform.Parse([]byte(transforms), "bench.yaml", "")
		if err != nil {
			b.Fatal(err)
		}
		if chain, err = transform.Build(spec, f.SetsCookies(), transform.Options{VUs: 1, Endpoints: f.Endpoints()}); err != nil {
			b.Fatal(err)
		}
		pool.Rewriter = chain
	}
	b.ReportAllocs()
	b.ResetTimer()
	if _, err := pool.Run(context.Background()); err != nil {
		b.Fatal(err)
	}
	rec.Close()
	b.StopTimer()
	if s := rec.Summary(recording.Meta{Model: "closed"}); s.Succeeded != int64(2*b.N) {
		b.Fatalf("succeeded %d of %d", s.Succeeded, 2*b.N)
	}
	if chain != nil {
		for _, c := range chain.Counts() {
			if c.Changed != int64(2*b.N) {
				b.Fatalf("%s changed %d of %d requests", c.Name, c.Changed, 2*b.N)
			}
		}
	}
}
