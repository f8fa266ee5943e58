package mock

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Faults are the faults a mock injects on purpose, to see how the service
// under test behaves when a dependency degrades: as the flags give them.
//
//	ErrorRate  "5%:503"     5% of the answers are status 503 instead
//	Delay      "10%:200ms"  10% of the answers come 200 ms later
//	ResetRate  "1%"         1% of the requests have their connection reset
//
// Which requests: a draw from --seed, the request's signature and its
// call number, so that the same traffic meets the same faults run after
// run, whatever else goes on concurrently. Faults apply to answered
// requests (hits and passed-through misses), never to misses.
type Faults struct {
	ErrorRate, Delay, ResetRate string
}

// faults are Faults parsed.
type faults struct {
	errRate, delayRate, resetRate float64
	errStatus                     int
	delay                         time.Duration
}

func (f faults) any() bool { return f.errRate > 0 || f.delayRate > 0 || f.resetRate > 0 }

// parse reads the flags' values; errors name the flag.
func (f Faults) parse() (faults, error) {
	var out faults
	var err error
	if f.ErrorRate != "" {
		rate, status, ok := strings.Cut(f.ErrorRate, ":")
		if out.errRate, err = parseRate(rate); err != nil || !ok {
			return out, fmt.Errorf("--error-rate: want PERCENT:STATUS such as 5%%:503, got %q", f.ErrorRate)
		}
		if out.errStatus, err = strconv.Atoi(status); err != nil || out.errStatus < 400 || out.errStatus > 599 {
			return out, fmt.Errorf("--error-rate %s: want an error status from 400 to 599, got %q", f.ErrorRate, status)
		}
	}
	if f.Delay != "" {
		rate, d, ok := strings.Cut(f.Delay, ":")
		if out.delayRate, err = parseRate(rate); err != nil || !ok {
			return out, fmt.Errorf("--delay: want PERCENT:DURATION such as 10%%:200ms, got %q", f.Delay)
		}
		if out.delay, err = time.ParseDuration(d); err != nil || out.delay <= 0 {
			return out, fmt.Errorf("--delay %s: want a positive duration such as 200ms, got %q", f.Delay, d)
		}
	}
	if f.ResetRate != "" {
		if out.resetRate, err = parseRate(f.ResetRate); err != nil {
			return out, fmt.Errorf("--reset-rate: want a percentage such as 1%%, got %q", f.ResetRate)
		}
	}
	return out, nil
}

// parseRate reads "5%" (or "0.5%") as 0.05.
func parseRate(s string) (float64, error) {
	num, ok := strings.CutSuffix(strings.TrimSpace(s), "%")
	if !ok {
		return 0, fmt.Errorf("no %%")
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 || v > 100 {
		return 0, fmt.Errorf("want 0%% to 100%%")
	}
	return v / 100, nil
}

// Fault kinds, as reports count them.
const (
	faultError = iota
	faultDelay
	faultReset
	faultKinds
)

var faultNames = [faultKinds]string{"error", "delay", "reset"}

// draw is a number in [0, 1) for fault kind of the k-th call of
// signature sig under seed.
func draw(seed, sig uint64, k uint32, kind int) float64 {
	x := mix(seed ^ mix(sig+uint64(kind)*0x9e3779b97f4a7c15) ^ uint64(k)*0xbf58476d1ce4e5b9)
	return float64(x>>11) / (1 << 53)
}
