package run

import (
	"fmt"

	"github.com/replay-dev/replay/pkg/report"
	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/schedule"
	"github.com/replay-dev/replay/pkg/transport"
	"github.com/replay-dev/replay/pkg/transport/conn"
	"github.com/replay-dev/replay/pkg/transport/negotiate"
	"github.com/replay-dev/replay/pkg/vu"
	"github.com/rs/zerolog"
)

// vuConfig is the VUs' configuration of the options for load: the one
// place that maps options onto vu.Config.
func vuConfig(o *Options, load schedule.Load, log zerolog.Logger) vu.Config {
	return vu.Config{Load: load, LateAfter: o.Load.LateAfter, Grace: o.Grace, Log: log,
		FollowRedirects: o.HTTP.FollowRedirects, PrecisePacing: o.Load.PrecisePacing}
}

// transportOptions are the transport's options: the one place that maps
// options onto negotiate.Options (HTTP/2 where it can, HTTP/1.1
// elsewhere).
func transportOptions(o *Options, hostMap map[string]string) negotiate.Options {
	h := &o.HTTP
	return negotiate.Options{HTTP2: h.HTTP2, H2C: h.H2C, Conn: conn.Options{
		Target: o.Load.Target, HostMap: hostMap, KeepHost: h.KeepHost, NoConnectionReuse: h.NoConnectionReuse,
		Timeout: h.Timeout, Insecure: h.Insecure, CA: h.CA, Cert: h.Cert, Key: h.Key, ServerName: h.ServerName,
		Proxy: h.Proxy, Timings: h.Timings, MaxConnDuration: h.MaxConnDuration,
	}, Answer: transport.AnswerOptions{MaxBody: h.MaxAnswerBody, MaxHeaderBytes: h.MaxHeaderBytes}}
}

// configure checks the configuration of the VUs for load and fills its
// defaults (no side effects; every error at once, each naming its flag).
// It is the one place the VUs' configuration is checked.
func configure(o *Options, load schedule.Load, log zerolog.Logger) (vu.Config, error) {
	cfg := vuConfig(o, load, log)
	if err := cfg.Validate(); err != nil {
		return cfg, err
	}
	cfg.SetDefaults()
	return cfg, nil
}

// Typed checks the load options and returns the load they describe, with
// its defaults: what a command needs to describe the load to another tool
// (export k6) or to run it again (a prepared run).
func (l Load) Typed() (schedule.Load, error) {
	m, err := parseLoad(&l)
	if err != nil {
		return m, err
	}
	o := Options{Load: l}
	cfg := vuConfig(&o, m, zerolog.Nop())
	if err := cfg.Validate(); err != nil {
		return m, err
	}
	cfg.SetDefaults()
	return cfg.Load, nil
}

// CheckTarget says why s is not a target a run would accept
// (scheme://host[:port], http or https), or returns nil: for commands
// that take a target without replaying.
func CheckTarget(s string) error {
	return conn.CheckTarget(s)
}

// targetRate is the rate an arrival-rate run asked for: --rate, or with
// stages the iterations due per second over the steps that ran. Other
// models have none.
func targetRate(cfg *vu.Config, plan *schedule.Schedule, st result.Counters) *float64 {
	if cfg.Model != schedule.Rate {
		return nil
	}
	r := cfg.Rate
	if span := plan.Span(); span > 0 {
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
	if cfg.Model == schedule.Rate {
		rate := fmt.Sprintf("%.2f/s (iterations; %.2f req/s)", cfg.Rate, cfg.Rate*cfg.PerIteration)
		if cfg.Unit == schedule.Requests {
			rate = fmt.Sprintf("%.2f req/s (%.2f iterations/s)", cfg.Rate*cfg.PerIteration, cfg.Rate)
		}
		set = append(set, report.Setting{Name: "rate", Value: fmt.Sprintf("%s, stages %q", rate, o.Load.Stages)})
	}
	set = append(set, report.Setting{Name: "requests an iteration", Value: fmt.Sprintf("%.2f (after the filters and the shard)", f.PerIteration())})
	if o.SUTCPUs > 0 {
		set = append(set, report.Setting{Name: "SUT vCPUs", Value: fmt.Sprint(o.SUTCPUs)})
	}
	if cfg.Model == schedule.Recorded {
		set = append(set, report.Setting{Name: "speed", Value: fmt.Sprint(cfg.Speed)})
	}
	if sh := f.Shard(); sh.Count > 1 {
		set = append(set, report.Setting{Name: "shard", Value: fmt.Sprintf("%d/%d", sh.Index, sh.Count)})
	}
	return set
}
