package report

import (
	"fmt"
	"os"
)

// ParseThresholds reads threshold expressions (see Threshold); its error
// names the expression that is wrong.
func ParseThresholds(exprs []string) ([]Threshold, error) {
	var ts []Threshold
	for _, expr := range exprs {
		t, err := ParseThreshold(expr)
		if err != nil {
			return nil, err
		}
		ts = append(ts, t)
	}
	return ts, nil
}

// Judge checks threshold expressions against s, a saved or merged
// summary, and stores the verdict in s.Thresholds (a run judges its own
// summary: pkg/run); the steps are judged again with them
// (JudgeSteps, at the tolerance the run was judged at). A threshold that
// names an endpoint s does not have is an error.
func Judge(s *Summary, exprs []string) error {
	ts, err := ParseThresholds(exprs)
	if err != nil {
		return err
	}
	if err := CheckEndpoints(ts, s.EndpointNames()); err != nil {
		return err
	}
	Evaluate(s, ts)
	if len(s.Steps) > 0 {
		tolerance := DefaultTolerance
		if v := s.StepsVerdict; v != nil {
			tolerance = v.Tolerance
		}
		s.JudgeSteps(tolerance)
	}
	return nil
}

// FailedThresholds lists the thresholds s failed (its verdict), each with what it
// measured: "p99<200ms (measured 250.000 ms)", "e2e.p99<2s (no event
// seen (120 pending))"; nil when all passed or none was judged.
func (s *Summary) FailedThresholds() []string {
	var failed []string
	for _, t := range s.Thresholds {
		if !t.Pass {
			failed = append(failed, fmt.Sprintf("%s (%s)", t.Name(), t.MeasuredText(3)))
		}
	}
	return failed
}

// EndpointNames are the names of s's endpoints, in order.
func (s *Summary) EndpointNames() []string {
	names := make([]string, len(s.Endpoints))
	for i, e := range s.Endpoints {
		names[i] = e.Name
	}
	return names
}

// ReadSummaryFile reads the summary JSON at path (ReadSummary); its error
// names the file.
func ReadSummaryFile(path string) (*Summary, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s, err := ReadSummary(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}
