package run

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/replay-dev/replay/pkg/report"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/schedule"
	"github.com/replay-dev/replay/pkg/transform"
)

// parsed are the options, checked: what they mean. parse fills it from
// the options alone; load adds what the files they name hold.
type parsed struct {
	load       schedule.Load // the load as the options give it, whole: no defaults, not the shard's share
	shard      rrpair.Shard
	startAt    time.Time // zero: at once
	filter     *rrpair.Filter
	thresholds []report.Threshold
	edits      []edit                  // the transform flags, in order
	stamp      *transform.StampOptions // nil: requests are not stamped
	sinks      *sinkSet

	// Filled by load.
	hostMap map[string]string
	spec    *transform.Spec
}

// edit is a transform a flag asks for, and the flag.
type edit struct {
	entry transform.Entry
	flag  string
}

// parse checks every option and says what each means. It reads no file
// and starts nothing; its errors name the flag to fix, all of them at
// once. The checks of the VUs' own configuration come after the files
// are loaded (configure).
func parse(o *Options) (*parsed, error) {
	p := &parsed{}
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	var err error
	p.load, err = parseLoad(&o.Load)
	add(err)
	add(checkHTTP(&o.HTTP))
	p.shard, err = parseShard(&o.Shard)
	add(err)
	p.startAt, err = parseTime("--start-at", o.Shard.StartAt)
	add(err)
	p.filter, err = parseFilter(&o.Filter)
	add(err)
	p.thresholds, err = parseThresholds(o.Thresholds)
	add(err)
	add(checkCompare(&o.Compare, p.thresholds))
	p.edits, err = parseEdits(&o.Transforms)
	add(err)
	p.stamp, p.sinks, err = parseEvents(&o.Events)
	add(err)
	if err == nil {
		add(checkLossThresholds(p.thresholds, p.sinks))
	}
	add(checkOutputs(o))
	add(checkJudging(o, p.thresholds))
	if o.DecodeCacheMiB < 0 || o.DecodeCacheMiB > 1<<20 {
		add(fmt.Errorf("--decode-cache: want MiB from 0 (off) to %d, got %d", 1<<20, o.DecodeCacheMiB))
	}
	return p, errors.Join(errs...)
}

// parseLoad resolves the load model, the walk and their parameters: the
// typed load of the options, checked for what each flag says alone and
// against the others it would silently change (the load as a whole is
// checked by vu.Config.Validate; against the file, by checkAsked).
func parseLoad(l *Load) (schedule.Load, error) {
	m := schedule.Load{VUs: l.VUs, MaxVUs: l.MaxVUs, Duration: l.Duration, Iterations: l.Iterations, Speed: l.Speed}
	var err error
	if m.Model, m.Think, err = parsePace(l); err != nil {
		return m, err
	}
	if m.Walk, err = parseWalk(l); err != nil {
		return m, err
	}
	if l.Rate != "" || rateStages(l.Stages) {
		if m.Model == schedule.Recorded {
			return m, errors.New("--rate: choose an arrival rate or --pace recorded, not both")
		}
		m.Model = schedule.Rate
	}
	if err := parseRates(l, &m); err != nil {
		return m, err
	}
	if l.DurationGiven && l.Duration <= 0 {
		return m, fmt.Errorf("--duration: want a positive duration such as 1m, got %v (leave it out to walk the file once)", l.Duration)
	}
	if l.MaxVUsGiven && l.MaxVUs <= 0 {
		return m, fmt.Errorf("--max-vus: want at least 1, got %d (leave it out for the default)", l.MaxVUs)
	}
	if l.Speed <= 0 {
		return m, fmt.Errorf("--speed: want a positive factor such as 2, got %v", l.Speed)
	}
	return m, checkLength(l, &m)
}

// parseRates reads --rate and --stages, in one unit: iterations a second
// (2000/s) or requests a second (2000req/s), never both.
func parseRates(l *Load, m *schedule.Load) error {
	var rateUnit schedule.Unit
	var err error
	if l.Rate != "" {
		if m.Rate, rateUnit, err = schedule.ParseRate(l.Rate); err != nil {
			return fmt.Errorf("--rate: %w", err)
		}
		m.Unit = rateUnit
	}
	if l.Stages == "" {
		return nil
	}
	var stagesUnit schedule.Unit
	if m.Stages, stagesUnit, err = schedule.ParseStages(l.Stages, m.Model == schedule.Rate); err != nil {
		return fmt.Errorf("--stages: %w", err)
	}
	if m.Model != schedule.Rate {
		return nil
	}
	if l.Rate != "" && stagesUnit != rateUnit {
		return fmt.Errorf("--rate %s and --stages %s: the rate in %s a second, the stages in %s; write both in iterations (/s) or both in requests (req/s)",
			l.Rate, l.Stages, rateUnit, stagesUnit)
	}
	m.Unit = stagesUnit
	// --rate is where a first ramp begins; 0/s, or the first hold's own
	// rate, only says that the stages are rates.
	if first := m.Stages[0]; l.Rate != "" && first.Hold && m.Rate != 0 && first.Target != m.Rate {
		return fmt.Errorf("--rate %s: the first stage holds %s from the start, so --rate would never be used (it is where a first ramp begins); leave it out, or give the first stage's rate",
			l.Rate, schedule.FormatRate(first.Target, m.Unit))
	}
	return nil
}

// parsePace reads --pace and --think.
func parsePace(l *Load) (model schedule.Model, think bool, err error) {
	switch l.Pace {
	case "", "closed":
	case "recorded":
		model = schedule.Recorded
	default:
		return model, false, flagError("--pace", "recorded", l.Pace)
	}
	switch l.Think {
	case "", "none":
	case "recorded":
		think = true
	default:
		return model, false, flagError("--think", "recorded or none", l.Think)
	}
	return model, think, nil
}

// rateStages reports whether a stage list speaks of rates (a "/" unit).
func rateStages(stages string) bool {
	return strings.Contains(stages, "/")
}

// parseWalk resolves --mode: explicit, else loop when a duration, an
// iteration count or stages say how long to run, else once.
func parseWalk(l *Load) (schedule.Walk, error) {
	if l.Mode != "" {
		w, err := schedule.ParseWalk(l.Mode)
		if err != nil {
			return w, fmt.Errorf("--mode: %w", err)
		}
		return w, nil
	}
	if l.Duration > 0 || l.Iterations > 0 || l.Stages != "" {
		return schedule.Loop, nil
	}
	return schedule.Once, nil
}

// checkHTTP checks what the VUs' configuration does not: the timeout,
// and the host map's HOST=URL items (its @FILEs are read by load).
func checkHTTP(h *HTTP) error {
	if h.Timeout <= 0 {
		return fmt.Errorf("--timeout: want a positive duration, got %v", h.Timeout)
	}
	if h.MaxAnswerBody < 1 {
		return fmt.Errorf("--max-answer-body: want a number of bytes ≥ 1, got %d", h.MaxAnswerBody)
	}
	if h.MaxHeaderBytes < 1024 {
		return fmt.Errorf("--max-header-bytes: want at least 1024 bytes, got %d", h.MaxHeaderBytes)
	}
	m := map[string]string{}
	for _, v := range h.HostMap {
		if !strings.HasPrefix(v, "@") {
			if err := addHostMapEntry(m, "", v); err != nil {
				return err
			}
		}
	}
	return nil
}

// parseFilter builds the rrpair filter of the filter options.
func parseFilter(o *Filter) (*rrpair.Filter, error) {
	f := &rrpair.Filter{Sample: o.Sample, Seed: o.Seed}
	for _, s := range o.Keep {
		r, err := rrpair.ParseRule(s)
		if err != nil {
			return nil, fmt.Errorf("--keep: %w", err)
		}
		f.Keep = append(f.Keep, r)
	}
	for _, s := range o.Drop {
		r, err := rrpair.ParseRule(s)
		if err != nil {
			return nil, fmt.Errorf("--drop: %w", err)
		}
		f.Drop = append(f.Drop, r)
	}
	var err error
	if f.From, err = parseTime("--from", o.From); err != nil {
		return nil, err
	}
	if f.To, err = parseTime("--to", o.To); err != nil {
		return nil, err
	}
	if o.Sample <= 0 || o.Sample > 1 {
		return nil, fmt.Errorf("--sample: want a fraction in (0, 1], such as 0.1, got %v", o.Sample)
	}
	return f, f.Validate()
}

// Compile builds the rrpair filter the options describe, checked, for
// commands that read a file as a run would (inspect).
func (o Filter) Compile() (*rrpair.Filter, error) {
	return parseFilter(&o)
}

// parseTime reads an RFC 3339 time; "" is the zero time.
func parseTime(flag, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return t, fmt.Errorf("%s: want an RFC 3339 time such as 2026-11-01T10:00:00Z, got %q", flag, s)
	}
	return t, nil
}

// parseThresholds checks the --threshold expressions.
func parseThresholds(exprs []string) ([]report.Threshold, error) {
	ts, err := report.ParseThresholds(exprs)
	if err != nil {
		return nil, fmt.Errorf("--threshold: %w", err)
	}
	return ts, nil
}

// checkCompare checks the comparison options against each other and the
// thresholds.
func checkCompare(c *Compare, ts []report.Threshold) error {
	switch c.Mode {
	case "", "status", "body":
	default:
		return flagError("--compare", "status or body", c.Mode)
	}
	switch {
	case report.NeedsCompare(ts) && c.Mode == "":
		return errors.New("--threshold: match needs --compare status or --compare body")
	case len(c.Ignore) > 0 && c.Mode != "body":
		return errors.New("--compare-ignore: only with --compare body")
	case len(c.Headers) > 0 && c.Mode == "":
		return errors.New("--compare-header: only with --compare status or body")
	}
	return nil
}

// parseEdits turns the transform flags into transforms, in this order:
// host, headers, timestamps, jwt.
func parseEdits(o *Transforms) ([]edit, error) {
	var edits []edit
	if o.HostHeader != "" {
		host := o.HostHeader
		edits = append(edits, edit{transform.Entry{Host: &host}, "--host-header"})
	}
	if len(o.SetHeaders)+len(o.RemoveHeaders) > 0 {
		h := &transform.HeaderSpec{Remove: o.RemoveHeaders}
		for _, s := range o.SetHeaders {
			name, value, ok := strings.Cut(s, ":")
			if !ok {
				return nil, flagError("--set-header", "'Name: value'", s)
			}
			h.Set = append(h.Set, transform.Pair{Name: strings.TrimSpace(name), Value: strings.TrimSpace(value)})
		}
		edits = append(edits, edit{transform.Entry{Headers: h}, "--set-header/--remove-header"})
	}
	if o.ShiftTime {
		edits = append(edits, edit{transform.Entry{Timestamps: &transform.TimestampSpec{Auto: true}}, "--shift-time"})
	}
	switch {
	case o.JWTSecret != "" && o.JWTKey != "":
		return nil, errors.New("--jwt-secret and --jwt-key: give one")
	case o.JWTSecret != "":
		edits = append(edits, edit{transform.Entry{JWT: &transform.JWTSpec{Secret: o.JWTSecret}}, "--jwt-secret"})
	case o.JWTKey != "":
		edits = append(edits, edit{transform.Entry{JWT: &transform.JWTSpec{KeyFile: o.JWTKey}}, "--jwt-key"})
	}
	return edits, nil
}

// checkOutputs checks the options of what the run writes besides the
// summary.
func checkOutputs(o *Options) error {
	switch {
	case o.DryRun < 0:
		return fmt.Errorf("--dry-run: want a number of requests ≥ 1, got %d", o.DryRun)
	case o.DryRun > 0 && o.DryRunTo == nil:
		return errors.New("--dry-run: no writer for the requests")
	case o.DumpFailures != "" && o.DumpMax < 1:
		return fmt.Errorf("--dump-max: want at least 1, got %d", o.DumpMax)
	}
	return nil
}

// checkJudging checks what judges the run beside its thresholds: the
// step tolerance, the SUT's vCPUs, and --abort-on-fail, which watches the
// thresholds and would watch nothing without one.
func checkJudging(o *Options, ts []report.Threshold) error {
	switch {
	case !(o.Tolerance >= 0 && o.Tolerance < 1):
		return fmt.Errorf("--tolerance: want a fraction from 0 to below 1 such as 0.1, got %v", o.Tolerance)
	case o.SUTCPUs < 0 || math.IsInf(o.SUTCPUs, 0) || math.IsNaN(o.SUTCPUs):
		return fmt.Errorf("--sut-cpus: want the SUT's number of vCPUs, above 0, got %v", o.SUTCPUs)
	case o.AbortOnFail && len(ts) == 0:
		return errors.New("--abort-on-fail: stops the run once a --threshold can no longer pass, and none is given, so it would never act; give a threshold such as errors<100")
	}
	return nil
}

// flagError is the error for a flag value that is not one of the allowed.
func flagError(flag, want, got string) error {
	return fmt.Errorf("%s: want %s, got %q", flag, want, got)
}
