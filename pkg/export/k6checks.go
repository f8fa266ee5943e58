package export

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/replay-dev/replay/pkg/report"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/transform"
)

// K6Checks are --threshold expressions as a k6 script carries them: a
// status threshold (status.202>99%, status.5xx<0.1%, on the run or one
// endpoint) becomes a check every request (or the endpoint's) is given,
// tagged with its endpoint, and a threshold on that check's rate; errors%
// becomes a threshold on http_req_failed (of the endpoint's requests by
// their name tag). k6 exits 99 when one is crossed, as replay does.
type K6Checks struct {
	checks     []k6Check
	thresholds map[string][]string // options.thresholds
	order      []string            // its keys, in the order given
}

// k6Check is one check of the script: passes when the status is (or,
// negated, is not) code or in its class ("5xx"), given to every request
// (all) or to those of endpoints.
type k6Check struct {
	Name      string   `json:"name"`
	Code      string   `json:"code"`
	Not       bool     `json:"not"`
	All       bool     `json:"all"`
	Endpoints []string `json:"endpoints"`
}

// K6ChecksOf carries ts into a k6 script, or refuses, all at once and each
// named, what k6 cannot express: a threshold on one step or on each (k6
// has no steps), a status count (k6 checks are rates), gRPC statuses (no
// gRPC pair is exported), and the metrics whose k6 counterpart measures
// something else (latency: k6 times a request from its start, replay
// from when it was due; rates, drops, comparisons, end-to-end).
func K6ChecksOf(ts []report.Threshold) (*K6Checks, error) {
	k := &K6Checks{thresholds: map[string][]string{}}
	var errs []error
	for _, t := range ts {
		if err := k.add(t); err != nil {
			errs = append(errs, fmt.Errorf("--threshold %q: %w", t.Text, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return k, nil
}

// add carries threshold t.
func (k *K6Checks) add(t report.Threshold) error {
	switch {
	case t.Step != 0:
		return errors.New("k6 has no steps: a threshold on one step (or each) is replay's; judge it with replay run --stages")
	case strings.ContainsAny(t.Endpoint, ",'\""):
		return fmt.Errorf("k6 cannot name the endpoint %q in a threshold (a comma or quote in it)", t.Endpoint)
	case t.Metric == "errors%":
		k.threshold(submetric("http_req_failed", "name", t.Endpoint), "rate"+t.Op+rate(t.Value/100))
		return nil
	case t.Metric == "status":
		return fmt.Errorf("k6 thresholds on checks are rates: write it as a share (status.%s%s1%%)", t.Arg, t.Op)
	case strings.HasPrefix(t.Metric, "grpc"):
		return errors.New("k6's http module replays no gRPC call (gRPC pairs are not exported)")
	case t.Metric != "status%":
		return fmt.Errorf("export k6 carries status checks (status.CODE, status.Nxx, as shares) and errors%% only: k6's own metrics measure %s otherwise than replay; give the script k6 thresholds of its own", t.Metric)
	}
	// share < x holds when the share of requests not so answered is > 1 − x:
	// the check passes for the requests that keep the threshold, as a k6
	// user reads a check.
	name, op, value := "status."+t.Arg, t.Op, t.Value/100
	not := op == "<" || op == "<="
	if not {
		name, op, value = "not "+name, map[string]string{"<": ">", "<=": ">="}[op], 1-value
	}
	c := k.check(name, t.Arg, not)
	if t.Endpoint == "" {
		c.All = true
	} else if !slices.Contains(c.Endpoints, t.Endpoint) {
		c.Endpoints = append(c.Endpoints, t.Endpoint)
	}
	key := "checks{check:" + name + "}"
	if t.Endpoint != "" {
		key = "checks{check:" + name + ",endpoint:" + t.Endpoint + "}"
	}
	k.threshold(key, "rate"+op+rate(value))
	return nil
}

// check is the check of that name, made when new.
func (k *K6Checks) check(name, code string, not bool) *k6Check {
	for i := range k.checks {
		if k.checks[i].Name == name {
			return &k.checks[i]
		}
	}
	k.checks = append(k.checks, k6Check{Name: name, Code: code, Not: not, Endpoints: []string{}})
	return &k.checks[len(k.checks)-1]
}

func (k *K6Checks) threshold(metric, expr string) {
	if _, ok := k.thresholds[metric]; !ok {
		k.order = append(k.order, metric)
	}
	k.thresholds[metric] = append(k.thresholds[metric], expr)
}

// submetric is metric{tag:value}, or metric for an empty value.
func submetric(metric, tag, value string) string {
	if value == "" {
		return metric
	}
	return metric + "{" + tag + ":" + value + "}"
}

// rate writes a share (0 to 1) as a k6 threshold takes it.
func rate(v float64) string {
	return strconv.FormatFloat(math.Round(v*1e9)/1e9, 'f', -1, 64)
}

// K6Extras reads what replay export k6 adds to a script beside the load:
// the transforms file (--transforms), compiled for the script (the keys
// embedded with embed, --embed-secrets), and the thresholds
// (--threshold), carried as checks; nil for what is not asked. Every
// error names its flag; nothing is written when one is refused.
func K6Extras(f *rrpair.File, transformsFile string, embed bool, thresholds []string) (*K6Transforms, *K6Checks, error) {
	var tr *K6Transforms
	var checks *K6Checks
	var errs []error
	if transformsFile != "" {
		spec, err := transform.ReadFile(transformsFile)
		if err == nil {
			tr, err = K6TransformsOf(spec, f, embed)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("--transforms: %w", err))
		}
	} else if embed {
		errs = append(errs, errors.New("--embed-secrets: embeds the JWT keys of --transforms; give --transforms"))
	}
	if len(thresholds) > 0 {
		ts, err := report.ParseThresholds(thresholds)
		if err == nil {
			err = report.CheckEndpoints(ts, f.Endpoints())
		}
		if err == nil {
			checks, err = K6ChecksOf(ts)
		} else {
			err = fmt.Errorf("--threshold: %w", err)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return tr, checks, errors.Join(errs...)
}
