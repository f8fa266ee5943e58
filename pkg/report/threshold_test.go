package report

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"

	"github.com/replay-dev/replay/pkg/e2e"
)

func TestThresholds(t *testing.T) {
	s := rateSummary() // p99 4.93ms, service p95 2ms, 6 of 1200 failed, rps 400, dropped 3
	tests := []struct {
		expr string
		pass bool
	}{
		{"p99<5ms", true},
		{"p99<4.9", false},
		{"latency p999<=12.05ms", true},
		{"service p95<2ms", false},
		{"service p95<=2ms", true},
		{"max<1s", false}, // 3 600 000 ms
		{"p50<1000us", true},
		{"errors<1%", true},
		{"errors<0.4%", false},
		{"errors<=6", true},
		{"errors<6", false},
		{"rps>399", true},
		{"rps>=401", false},
		{"dropped<=0", false},
		{"POST /events: p99<5ms", true},
		{"GET /users/{id}/orders: errors<1%", false}, // 4 of 98
		{"GET /users/{id}/orders: p90<2.5ms", false},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			th, err := ParseThreshold(tt.expr)
			if err != nil {
				t.Fatal(err)
			}
			if got := Evaluate(s, []Threshold{th}); got != tt.pass {
				t.Errorf("got pass=%v (measured %v %s), want %v", got, s.Thresholds[0].Measured, s.Thresholds[0].Unit, tt.pass)
			}
		})
	}
}

func TestThresholdSyntax(t *testing.T) {
	for _, tt := range []struct{ expr, want string }{
		{"p99", "want METRIC<VALUE"},
		{"<5ms", "want METRIC<VALUE"},
		{"p98<5ms", "unknown metric"},
		{"latency p97<5ms", "unknown statistic"},
		{"p99<fast", "want a number"},
		{"cpu<50%", "unknown metric"},
		{"POST /events: rps>5", "per endpoint"},
		{"POST /events: service p99<5ms", "per endpoint"},
	} {
		_, err := ParseThreshold(tt.expr)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: got %v, want an error with %q", tt.expr, err, tt.want)
		}
	}
	th, _ := ParseThreshold("GET /nope: p99<1ms")
	if err := CheckEndpoints([]Threshold{th}, []string{"GET /a"}); err == nil || !strings.Contains(err.Error(), `no endpoint "GET /nope"`) {
		t.Errorf("got %v", err)
	}
}

func TestJUnit(t *testing.T) {
	s := rateSummary()
	a, _ := ParseThreshold("p99<5ms")
	b, _ := ParseThreshold("errors<0.1%")
	Evaluate(s, []Threshold{a, b})
	var buf bytes.Buffer
	if err := WriteJUnit(&buf, s); err != nil {
		t.Fatal(err)
	}
	var suite struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Cases    []struct {
			Name    string    `xml:"name,attr"`
			Failure *struct{} `xml:"failure"`
		} `xml:"testcase"`
	}
	if err := xml.Unmarshal(buf.Bytes(), &suite); err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	if suite.Tests != 2 || suite.Failures != 1 || suite.Cases[0].Failure != nil || suite.Cases[1].Failure == nil || suite.Cases[1].Name != "errors<0.1%" {
		t.Errorf("got %+v\n%s", suite, buf.String())
	}
}

func TestE2EThresholds(t *testing.T) {
	s := rateSummary()
	none, _ := ParseThreshold("e2e.p99<2s")
	if Evaluate(s, []Threshold{none}) || !strings.Contains(s.Thresholds[0].Unit, "no event") {
		t.Errorf("e2e threshold without a sink: %+v, want a failure saying why", s.Thresholds)
	}
	s.E2E = &e2e.Summary{Accepted: 1000, LossKnown: true, Stages: []e2e.Stage{
		{Name: "processed", Lost: 0, Duplicates: 2, Latency: Latency{P99: 800}},
		{Name: "settled", Lost: 3, LostPct: 0.3, Latency: Latency{P99: 2500}},
	}}
	for _, tt := range []struct {
		expr string
		pass bool
	}{
		{"e2e.p99<2s", false}, // the worst stage: settled
		{"e2e.p99<2600ms", true},
		{"e2e.processed.p99<1s", true},
		{"e2e.settled.p99<1s", false},
		{"e2e.nowhere.p99<1s", false},
		{"lost<0.5%", true},
		{"lost<0.1%", false},
		{"lost<=3", true},
		{"lost<3", false},
		{"duplicates<1", false},
		{"duplicates<=2", true},
	} {
		th, err := ParseThreshold(tt.expr)
		if err != nil {
			t.Fatalf("%s: %v", tt.expr, err)
		}
		if got := Evaluate(s, []Threshold{th}); got != tt.pass {
			t.Errorf("%s: pass %v, want %v (%+v)", tt.expr, got, tt.pass, s.Thresholds)
		}
	}
	// Unseen events the sinks cannot prove lost are pending: a pending
	// threshold measures them, a lost one fails saying loss is not known.
	s.E2E = &e2e.Summary{Accepted: 1000, Stages: []e2e.Stage{
		{Name: "processed", Pending: 0, Latency: Latency{P99: 800}},
		{Name: "settled", Pending: 3, PendingPct: 0.3, Latency: Latency{P99: 2500}},
	}}
	for _, tt := range []struct {
		expr string
		pass bool
	}{
		{"pending<0.5%", true},
		{"pending<0.1%", false},
		{"pending<=3", true},
		{"pending<=0", false},
		{"lost<=3", false},
		{"lost<1%", false},
	} {
		th, err := ParseThreshold(tt.expr)
		if err != nil {
			t.Fatalf("%s: %v", tt.expr, err)
		}
		if got := Evaluate(s, []Threshold{th}); got != tt.pass {
			t.Errorf("%s: pass %v, want %v (%+v)", tt.expr, got, tt.pass, s.Thresholds)
		}
		if strings.HasPrefix(tt.expr, "lost") && !strings.Contains(s.Thresholds[0].Unit, "loss not known") {
			t.Errorf("%s: unit %q, want it to say loss is not known", tt.expr, s.Thresholds[0].Unit)
		}
	}
	for _, perStage := range []string{"e2e.settled.lost<1", "e2e.settled.pending<1", "e2e.settled.duplicates<1"} { // not per stage
		if _, err := ParseThreshold(perStage); err == nil {
			t.Errorf("%s parsed", perStage)
		}
	}
	if _, err := ParseThreshold("POST /events: e2e.p99<1s"); err == nil {
		t.Error("an endpoint's e2e threshold parsed")
	}
}

// TestThresholdMessages pins the messages that list what the table of
// metrics takes, word for word: they are built from the table.
func TestThresholdMessages(t *testing.T) {
	for _, tt := range []struct{ expr, want string }{
		{"cpu<50%", `threshold "cpu<50%": unknown metric "cpu", want a latency statistic (p99, service p95, e2e.p99, ...), errors, rps, throughput, iteration_rate, dropped, late, match, pending, lost or duplicates`},
		{"step 2: match>99%", `threshold "step 2: match>99%": per step, only latency, service, e2e latency, errors%, rps, throughput, iteration_rate, dropped, late are known`},
		{"POST /events: rps>5", `threshold "POST /events: rps>5": per endpoint, only latency, errors and match are known`},
		{"latency p97<5ms", `threshold "latency p97<5ms": unknown statistic "p97", want one of min mean p50 p90 p95 p99 p999 max`},
		{"rps>5%", `threshold "rps>5%": want a number after >, got "5%"`},
	} {
		if _, err := ParseThreshold(tt.expr); err == nil || err.Error() != tt.want {
			t.Errorf("%q: got %v\nwant %s", tt.expr, err, tt.want)
		}
	}
}

// TestHopeless: only a threshold that bounds from above, on the whole run,
// a count that only grows (errors as a count, dropped, late) can become
// hopeless, once the count breaks it.
func TestHopeless(t *testing.T) {
	for _, tt := range []struct {
		expr                  string
		failed, dropped, late int64
		want                  bool
	}{
		{"errors<10", 10, 0, 0, true},
		{"errors<10", 9, 99, 99, false},
		{"errors<=10", 10, 0, 0, false},
		{"errors<=10", 11, 0, 0, true},
		{"dropped<=0", 0, 1, 0, true},
		{"late<5", 0, 0, 5, true},
		{"errors<1%", 1000, 0, 0, false},        // a share may fall again
		{"errors>10", 1000, 0, 0, false},        // a bound from below
		{"step 1: errors<1", 1000, 0, 0, false}, // a step's count is not the live one
		{"POST /events: errors<1", 1000, 0, 0, false},
		{"p99<1ms", 1000, 1000, 1000, false},
		{"pending<1", 1000, 1000, 1000, false},
	} {
		th, err := ParseThreshold(tt.expr)
		if err != nil {
			t.Fatal(err)
		}
		if got := th.Hopeless(tt.failed, tt.dropped, tt.late); got != tt.want {
			t.Errorf("%s with %d failed, %d dropped, %d late: hopeless %v, want %v", tt.expr, tt.failed, tt.dropped, tt.late, got, tt.want)
		}
	}
}
