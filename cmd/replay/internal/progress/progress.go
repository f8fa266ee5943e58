// Package progress shows a run while it goes: on a terminal a bar
// (elapsed against the planned length, the current rate, p99 of the last
// second, failures, VUs, and for an open model the target rate and dropped
// iterations), elsewhere (CI, a pod) a structured log line every few
// seconds, never carriage returns in a log. Whether the output is a
// terminal is the command's to say.
package progress

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/replay-dev/replay/pkg/recording"
	"github.com/rs/zerolog"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
)

// progressLine is one look at a run under way.
type progressLine struct {
	elapsed  time.Duration
	rps      float64 // since the previous look
	p99      float64 // ms, of the newest closed second; -1 before the first
	requests int64
	failed   int64
	vus      int
	inFlight int64
	open     bool
	target   float64 // iterations per second asked for now; -1 when none
	reqs     float64 // the same in requests per second; -1 when not known
	dropped  int64
}

// errorPct is the failed share of the requests, in percent.
func (p progressLine) errorPct() float64 {
	if p.requests == 0 {
		return 0
	}
	return 100 * float64(p.failed) / float64(p.requests)
}

// sampler turns successive Live snapshots into progress lines.
type sampler struct {
	src      recording.LiveView
	start    time.Time
	lastAt   time.Time
	lastReqs int64
}

func (s *sampler) sample(now time.Time) progressLine {
	l := s.src.Now()
	p := progressLine{elapsed: now.Sub(s.start), requests: l.Requests, failed: l.Failed, p99: -1,
		vus: l.VUs, inFlight: l.InFlight, open: s.src.Open(), dropped: l.Dropped, target: -1, reqs: -1}
	if dt := now.Sub(s.lastAt).Seconds(); dt > 0 {
		p.rps = float64(l.Requests-s.lastReqs) / dt
	}
	s.lastAt, s.lastReqs = now, l.Requests
	if l.LastInterval != nil {
		p.p99 = l.LastInterval.Latency.P99
	}
	if l.HasTarget {
		p.target = l.Target
	}
	if reqs, ok := l.TargetRequests(); ok {
		p.reqs = reqs
	}
	return p
}

func (p progressLine) String() string {
	p99 := "-"
	if p.p99 >= 0 {
		p99 = fmt.Sprintf("%.2fms", p.p99)
	}
	rate := fmt.Sprintf("%.0f req/s", p.rps)
	if p.reqs >= 0 { // the target in the unit of the rate beside it
		rate += fmt.Sprintf(" of %.0f req/s", p.reqs)
	}
	failed := fmt.Sprintf("failed %d (%.2f%%)", p.failed, p.errorPct())
	if p.open {
		return fmt.Sprintf("%s p99 %s %s dropped %d VUs %d", rate, p99, failed, p.dropped, p.vus)
	}
	return fmt.Sprintf("%s p99 %s %s VUs %d", rate, p99, failed, p.vus)
}

// Start shows the run while it goes until stop is called, every so often:
// with tty an mpb bar on w (elapsed / total when the run has a planned
// length) with the current rate, p99 of the last second, failures and
// VUs; without, a structured log line on log — never carriage returns in
// a log.
func Start(ctx context.Context, tty bool, w io.Writer, every, total time.Duration, src recording.LiveView, log zerolog.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	s := &sampler{src: src, start: time.Now(), lastAt: time.Now()}
	show, done := logProgress(log), func() {}
	if tty {
		show, done = barProgress(ctx, w, every, total, s.start)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-t.C:
				show(s.sample(now))
			}
		}
	}()
	return func() { cancel(); wg.Wait(); done() }
}

// logProgress shows progress as structured log lines.
func logProgress(log zerolog.Logger) func(progressLine) {
	return func(p progressLine) {
		e := log.Info().Dur("elapsed", p.elapsed.Round(time.Millisecond)).Float64("rps", p.rps).Float64("p99_ms", p.p99).
			Int64("requests", p.requests).Int64("failed", p.failed).Float64("error_pct", p.errorPct()).Int("vus", p.vus).Int64("in_flight", p.inFlight)
		if p.open {
			e = e.Int64("dropped", p.dropped)
		}
		if p.target >= 0 {
			e = e.Float64("target_rate", p.target)
		}
		if p.reqs >= 0 {
			e = e.Float64("target_request_rate", p.reqs)
		}
		e.Msg("progress")
	}
}

// barProgress shows progress as an mpb bar on w; done removes it.
func barProgress(ctx context.Context, w io.Writer, every, total time.Duration, start time.Time) (show func(progressLine), done func()) {
	bars := mpb.NewWithContext(ctx, mpb.WithOutput(w), mpb.WithWidth(100), mpb.WithRefreshRate(every), mpb.WithAutoRefresh())
	size := max(int64(total/time.Millisecond), 0) // 0: unknown length, elapsed time only
	var mu sync.Mutex                             // guards line
	line := ""
	bar := bars.AddBar(size, mpb.BarWidth(20),
		mpb.PrependDecorators(decor.Name("replay "), decor.Any(func(decor.Statistics) string {
			elapsed := time.Since(start).Round(time.Second)
			if total > 0 {
				return fmt.Sprintf("%v/%v", elapsed, total)
			}
			return elapsed.String()
		}, decor.WCSyncSpace)),
		mpb.AppendDecorators(decor.Any(func(decor.Statistics) string {
			mu.Lock()
			defer mu.Unlock()
			return line
		})),
	)
	show = func(p progressLine) {
		mu.Lock()
		line = p.String()
		mu.Unlock()
		if size > 0 {
			bar.SetCurrent(min(int64(p.elapsed/time.Millisecond), size))
		}
	}
	return show, func() { bar.Abort(false); bars.Wait() }
}

// Mode is how a command shows progress (--progress): "auto" (a bar on a
// terminal, log lines elsewhere), "bar", "log" or "off"; Every is how
// often (0: a second for the bar, 5 s for log lines).
type Mode struct {
	Name  string
	Every time.Duration
}

// Check refuses a mode that is none of the four, naming the flag.
func (m Mode) Check() error {
	switch m.Name {
	case "auto", "bar", "log", "off":
		return nil
	}
	return fmt.Errorf("--progress: want auto, bar, log or off, got %q", m.Name)
}

// Show starts progress as m says on w, whether it is a terminal or not
// (the command's to tell): nothing with off, else Start with a bar or log
// lines. Call the stop it returns when the run ends.
func (m Mode) Show(ctx context.Context, w io.Writer, terminal bool, total time.Duration, src recording.LiveView, log zerolog.Logger) (stop func()) {
	if m.Name == "off" {
		return func() {}
	}
	tty := m.Name == "bar" || (m.Name == "auto" && terminal)
	every := m.Every
	if every <= 0 {
		every = 5 * time.Second
		if tty {
			every = time.Second
		}
	}
	return Start(ctx, tty, w, every, total, src, log)
}
