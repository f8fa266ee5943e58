package vu

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/testutil/loopback"
	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/schedule"
	"github.com/replay-dev/replay/pkg/transport"
	"github.com/replay-dev/replay/pkg/transport/conn"
	"github.com/replay-dev/replay/pkg/transport/http1"
	"github.com/rs/zerolog"
)

type nopSink struct{}

func (nopSink) Record(result.Result) {}

// BenchmarkRequest runs one VU through decode, wire write, send, read and
// record against a loopback server, with the HTTP/1.1 transport: the base
// hot path, scheduler and transport together. allocs/op must be 0, but
// for get-noreuse (--no-connection-reuse), a connection a request, whose
// dial allocates its connection's few objects.
func BenchmarkRequest(b *testing.B) {
	for _, tc := range []struct {
		name                      string
		line                      string
		timings, discard, noReuse bool
	}{
		{"get", line("GET", "/users/42/feed?limit=20", `{"Accept":["application/json"],"User-Agent":["shop-web/4.2"]}`, nil), false, false, false},
		{"get-timings", line("GET", "/users/42/feed?limit=20", `{"Accept":["application/json"],"User-Agent":["shop-web/4.2"]}`, nil), true, false, false},
		{"get-discard", line("GET", "/users/42/feed?limit=20", `{"Accept":["application/json"],"User-Agent":["shop-web/4.2"]}`, nil), false, true, false},
		{"get-noreuse", line("GET", "/users/42/feed?limit=20", `{"Accept":["application/json"],"User-Agent":["shop-web/4.2"]}`, nil), false, false, true},
		{"post-2k", line("POST", "/events", `{"Content-Type":["application/json"],"X-Request-Id":["8c1e2f4a"]}`, string(bytes.Repeat([]byte("x"), 2048))), false, false, false},
		{"post-64k", line("POST", "/events", `{"Content-Type":["application/octet-stream"]}`, bytes.Repeat([]byte{1}, 64<<10)), false, false, false},
	} {
		b.Run(tc.name, func(b *testing.B) {
			srv, err := loopback.NewCanned(loopback.Accepted202)
			if err != nil {
				b.Fatal(err)
			}
			defer srv.Close()
			url := srv.URL()
			f := openLines(b, tc.line)
			p := &Pool{File: f, Sink: nopSink{}, Config: Config{Load: schedule.Load{VUs: 1, Walk: schedule.Loop}, Log: zerolog.Nop()},
				Transport: newTransport(b, http1.Options{Conn: conn.Options{Target: url, Timeout: 10 * time.Second, Timings: tc.timings, NoConnectionReuse: tc.noReuse}, Answer: transport.AnswerOptions{DiscardBodies: tc.discard}})}
			p.Config.Iterations = int64(b.N)
			b.ReportAllocs()
			b.ResetTimer()
			if _, err := p.Run(context.Background()); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkRateAccuracy runs --rate R --duration 2s against a loopback
// server and reports the iterations begun as a fraction of R·D (want 1
// within 1%), the dropped ones and the scheduler's lag (mean, p50, p99,
// max), with timers and with PrecisePacing. Each op is a whole 2s run:
// use -benchtime 1x.
func BenchmarkRateAccuracy(b *testing.B) {
	for _, precise := range []bool{false, true} {
		for _, rate := range []float64{1000, 5000, 10000, 20000} {
			name := fmt.Sprintf("%.0f/s", rate)
			if precise {
				name += "-precise"
			}
			b.Run(name, func(b *testing.B) { rateAccuracy(b, rate, precise) })
		}
	}
}

func rateAccuracy(b *testing.B, rate float64, precise bool) {
	srv, err := loopback.NewCanned(loopback.Accepted202)
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	f := openLines(b, line("GET", "/", "", nil))
	const d = 2 * time.Second
	for b.Loop() {
		p := &Pool{File: f, Sink: nopSink{}, Config: Config{Load: schedule.Load{Model: schedule.Rate, Rate: rate, VUs: 50, MaxVUs: 500, Walk: schedule.Loop, Duration: d}, Log: zerolog.Nop(), PrecisePacing: precise}, Transport: newTransport(b, http1.Options{Conn: conn.Options{Target: srv.URL(), Timeout: 10 * time.Second}})}
		st, err := p.Run(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		want := rate * d.Seconds()
		b.ReportMetric(float64(st.Iterations)/want, "delivered/expected")
		b.ReportMetric(float64(st.Dropped), "dropped")
		b.ReportMetric(float64(st.LagMean.Microseconds()), "lag-mean-µs")
		b.ReportMetric(float64(st.LagP50.Microseconds()), "lag-p50-µs")
		b.ReportMetric(float64(st.LagP99.Microseconds()), "lag-p99-µs")
		b.ReportMetric(float64(st.LagMax.Microseconds()), "lag-max-µs")
	}
}
