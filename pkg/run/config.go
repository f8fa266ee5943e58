package run

import (
	"fmt"
	"math"
	"strconv"
	"strings"

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
	return negotiate.Options{HTTP2: h.HTTP2, H2C: h.H2C, Streams: h.Streams, Conn: conn.Options{
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

// settings is the run's configuration for the HTML report: only what the
// run's model uses (VUs and their cap, the rate, the stages, the length or
// what ends the run instead), rates with their unit.
func settings(f *rrpair.File, cfg *vu.Config, o *Options) []report.Setting {
	skipped := f.Skipped()
	set := []report.Setting{
		{Name: "file", Value: fmt.Sprintf("%s (%d pairs, %d iterations, %d filtered out, %d skipped)", f.Name(), f.Len(), f.Iterations(), f.Filtered(), skipped.Total())},
		{Name: "target", Value: o.Load.Target},
		{Name: "model", Value: cfg.Model.String()},
		{Name: "walk", Value: cfg.Walk.String()},
		vusSetting(cfg),
	}
	if cfg.Model == schedule.Rate && len(cfg.Stages) == 0 {
		set = append(set, report.Setting{Name: "rate", Value: settingRate(cfg, cfg.Rate)})
	}
	if len(cfg.Stages) > 0 {
		set = append(set, report.Setting{Name: "stages", Value: stagesText(cfg)})
	}
	set = append(set, report.Setting{Name: "length", Value: lengthText(cfg)},
		report.Setting{Name: "timeout · grace", Value: o.HTTP.Timeout.String() + " · " + cfg.Grace.String()},
		report.Setting{Name: "requests an iteration", Value: fmt.Sprintf("%.2f (after the filters and the shard)", f.PerIteration())})
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

// vusSetting is the VUs as the model uses them: a closed model's users
// (ramped by its stages), an open model's starting pool and its cap.
func vusSetting(cfg *vu.Config) report.Setting {
	switch {
	case cfg.Model == schedule.Closed && len(cfg.Stages) > 0:
		return report.Setting{Name: "VUs", Value: fmt.Sprintf("%d at the start, then as the stages say", cfg.VUs)}
	case cfg.Model == schedule.Closed:
		return report.Setting{Name: "VUs", Value: fmt.Sprint(cfg.VUs)}
	}
	return report.Setting{Name: "VUs", Value: fmt.Sprintf("%d at the start, at most %d", cfg.VUs, cfg.MaxVUs)}
}

// settingRate is an iterations-a-second rate of cfg in the unit the user
// wrote it in, then in the other: "50 iterations/s (303 requests/s)".
func settingRate(cfg *vu.Config, it float64) string {
	n := func(v float64) string { return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64) }
	if cfg.PerIteration <= 0 {
		return n(it) + " iterations/s"
	}
	if cfg.Unit == schedule.Requests {
		return fmt.Sprintf("%s requests/s (%s iterations/s)", n(it*cfg.PerIteration), n(it))
	}
	return fmt.Sprintf("%s iterations/s (%s requests/s)", n(it), n(it*cfg.PerIteration))
}

// stagesText is cfg's stages as the report's header writes them, in the
// unit they were written in: "50/s 2s, 50/s→150/s 2s", "5→15 VUs 2s",
// "1800req/s 1m".
func stagesText(cfg *vu.Config) string {
	vus, unit, scale := cfg.Model == schedule.Closed, "/s", 1.0
	if !vus && cfg.Unit == schedule.Requests && cfg.PerIteration > 0 {
		unit, scale = "req/s", cfg.PerIteration
	}
	from := cfg.Rate
	if vus {
		from = float64(cfg.VUs)
	}
	parts := make([]string, len(cfg.Stages))
	for i, st := range cfg.Stages {
		if st.Hold {
			from = st.Target
		}
		parts[i] = report.TargetTextIn(from*scale, st.Target*scale, !st.Hold && from != st.Target, vus, unit) + " " + st.Duration.String()
		from = st.Target
	}
	s := strings.Join(parts, ", ")
	switch {
	case vus:
		return s
	case unit == "req/s":
		return s + " (requests a second)"
	}
	return s + " (iterations a second)"
}

// lengthText says what ends the run: its duration (the stages' for a
// staged run), a number of iterations, or one pass over the file.
func lengthText(cfg *vu.Config) string {
	d := cfg.Duration
	if len(cfg.Stages) > 0 {
		d = schedule.StagesDuration(cfg.Stages)
	}
	var parts []string
	if d > 0 {
		parts = append(parts, d.String())
	}
	if cfg.Iterations > 0 {
		parts = append(parts, fmt.Sprintf("%d iterations", cfg.Iterations))
	}
	if len(parts) == 0 {
		if cfg.Walk == schedule.Once {
			return "one pass over the file"
		}
		return "until interrupted"
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return strings.Join(parts, " or ") + ", whichever comes first"
}
