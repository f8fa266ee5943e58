package run

import (
	"errors"
	"fmt"
	"time"

	"github.com/replay-dev/replay/pkg/report"
	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/transport"
	"github.com/replay-dev/replay/pkg/transport/conn"
	"github.com/replay-dev/replay/pkg/transport/negotiate"
	"github.com/replay-dev/replay/pkg/vu"
	"github.com/rs/zerolog"
)

// vuConfig is the VUs' configuration of the options: the one place that
// maps options onto vu.Config.
func vuConfig(o *Options, m *loadModel, log zerolog.Logger) vu.Config {
	return vu.Config{
		Model: m.model, Walk: m.walk, Rate: m.rate, Stages: m.stages, Think: m.think,
		VUs: o.Load.VUs, MaxVUs: o.Load.MaxVUs, Duration: o.Load.Duration, Iterations: o.Load.Iterations,
		Speed: o.Load.Speed, LateAfter: o.Load.LateAfter, Grace: o.Grace, Log: log,
		FollowRedirects: o.HTTP.FollowRedirects, PrecisePacing: o.Load.PrecisePacing,
	}
}

// transportOptions are the transport's options: the one place that maps
// options onto negotiate.Options (HTTP/2 where it can, HTTP/1.1 elsewhere).
func transportOptions(o *Options, hostMap map[string]string) negotiate.Options {
	h := &o.HTTP
	return negotiate.Options{HTTP2: h.HTTP2, H2C: h.H2C, Conn: conn.Options{
		Target: o.Load.Target, HostMap: hostMap, KeepHost: h.KeepHost, NoConnectionReuse: h.NoConnectionReuse,
		Timeout: h.Timeout, Insecure: h.Insecure, CA: h.CA, Cert: h.Cert, Key: h.Key, ServerName: h.ServerName,
		Proxy: h.Proxy, Timings: h.Timings, MaxConnDuration: h.MaxConnDuration,
	}, Answer: transport.AnswerOptions{MaxBody: h.MaxAnswerBody, MaxHeaderBytes: h.MaxHeaderBytes}}
}

// configure builds the configuration of the VUs and of the transport and
// checks both (no side effects; every error at once, each naming its
// flag), then fills the VUs' defaults. It is the one place either is
// checked. The transport is built once the run knows whether anything
// reads the answers' bodies (prepare), by negotiate.New, which reads the
// TLS files.
func configure(o *Options, p *parsed) (vu.Config, negotiate.Options, error) {
	cfg := vuConfig(o, &p.load, o.Log)
	topt := transportOptions(o, p.hostMap)
	if err := errors.Join(cfg.Validate(), topt.Validate()); err != nil {
		return cfg, topt, err
	}
	cfg.SetDefaults()
	return cfg, topt, nil
}

// Shape is a load as the load options describe it, checked, with its
// defaults: what a command needs to describe the load to another tool
// (export k6).
type Shape struct {
	VUs int
	// MostVUs is the most VUs the run can have: --vus, the highest VU
	// stage, or an open model's pool cap.
	MostVUs    int
	Duration   time.Duration
	Iterations int64
	// ArrivalRate: iterations start at Rate per second (ramped by Stages)
	// rather than on free VUs; Stages then ramp rates, else VUs.
	ArrivalRate bool
	Rate        float64
	Stages      []Stage
}

// Stage is a step of a ramp: to Target over Duration (Hold: at once, then
// held).
type Stage struct {
	Duration time.Duration
	Target   float64
	Hold     bool
}

// Shape checks the load options and returns the load they describe.
func (l Load) Shape() (Shape, error) {
	m, err := parseLoad(&l)
	if err != nil {
		return Shape{}, err
	}
	o := Options{Load: l}
	cfg := vuConfig(&o, &m, zerolog.Nop())
	if err := cfg.Validate(); err != nil {
		return Shape{}, err
	}
	cfg.SetDefaults()
	s := Shape{VUs: cfg.VUs, MostVUs: cfg.MostVUs(), Duration: cfg.Duration, Iterations: cfg.Iterations, ArrivalRate: cfg.Model == vu.Rate}
	if s.ArrivalRate {
		s.Rate = cfg.Rate
	}
	for _, st := range cfg.Stages {
		s.Stages = append(s.Stages, Stage(st))
	}
	return s, nil
}

// CheckTarget says why s is not a target a run would accept
// (scheme://host[:port], http or https), or returns nil: for commands
// that take a target without replaying.
func CheckTarget(s string) error {
	return conn.CheckTarget(s)
}

// planned is how long a run with cfg issues: its duration, or its
// stages'; 0 when the file decides.
func planned(cfg *vu.Config) time.Duration {
	if cfg.Duration == 0 && len(cfg.Stages) > 0 {
		return vu.StagesDuration(cfg.Stages)
	}
	return cfg.Duration
}

// targetRate is the rate an arrival-rate run asked for: --rate, or with
// stages the iterations due per second of the schedule. Other models have
// none.
func targetRate(cfg *vu.Config, st result.Counters) *float64 {
	if cfg.Model != vu.Rate {
		return nil
	}
	r := cfg.Rate
	if len(cfg.Stages) > 0 {
		span := vu.StagesDuration(cfg.Stages)
		if cfg.Duration > 0 {
			span = min(span, cfg.Duration)
		}
		r = float64(st.Scheduled) / span.Seconds()
	}
	return &r
}

// settings is the run's configuration for the HTML report.
func settings(f *rrpair.File, cfg *vu.Config, o *Options) []report.Setting {
	skipped := f.Skipped()
	set := []report.Setting{
		{Name: "file", Value: fmt.Sprintf("%s (%d pairs, %d iterations, %d filtered out, %d skipped)", f.Name(), f.Len(), f.Iterations(), f.Filtered(), skipped.Total())},
		{Name: "target", Value: o.Load.Target},
		{Name: "model", Value: cfg.Model.String()},
		{Name: "walk", Value: cfg.Walk.String()},
		{Name: "VUs", Value: fmt.Sprintf("%d (max %d)", cfg.VUs, cfg.MaxVUs)},
		{Name: "duration", Value: cfg.Duration.String()},
		{Name: "timeout · grace", Value: o.HTTP.Timeout.String() + " · " + cfg.Grace.String()},
	}
	if cfg.Model == vu.Rate {
		set = append(set, report.Setting{Name: "rate", Value: fmt.Sprintf("%.2f/s, stages %q", cfg.Rate, o.Load.Stages)})
	}
	if cfg.Model == vu.Recorded {
		set = append(set, report.Setting{Name: "speed", Value: fmt.Sprint(cfg.Speed)})
	}
	if sh := f.Shard(); sh.Count > 1 {
		set = append(set, report.Setting{Name: "shard", Value: fmt.Sprintf("%d/%d", sh.Index, sh.Count)})
	}
	return set
}
