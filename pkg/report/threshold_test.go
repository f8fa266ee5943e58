package report

import (
	"bytes"
	"encoding/xml"
	"math"
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
		{Name: "processed", Unique: 1000, Lost: 0, Duplicates: 2, Latency: Latency{P99: 800, P999: 900, Max: 950}},
		{Name: "settled", Unique: 997, Lost: 3, LostPct: 0.3, Latency: Latency{P99: 2500, P999: 2550, Max: 2590}},
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
		{Name: "processed", Unique: 1000, Pending: 0, Latency: Latency{P99: 800}},
		{Name: "settled", Unique: 997, Pending: 3, PendingPct: 0.3, Latency: Latency{P99: 2500}},
	}}
	for _, tt := range []struct {
		expr string
		pass bool
	}{
		{"pending<0.5%", true},
		{"pending<0.1%", false},
		{"pending<=3", true},
		{"pending<=0", false},
		{"e2e.pending<0.5%", true}, // pending's other spelling
		{"e2e.pending<0.1%", false},
		{"e2e.settled.pending<=3", true},
		{"e2e.settled.pending<3", false},
		{"e2e.processed.pending<=0", true},
		{"e2e.nowhere.pending<=0", false},
		{"e2e.duplicates<1", true},
		{"lost<=3", false},
		{"lost<1%", false},
		{"e2e.lost<1%", false},
	} {
		th, err := ParseThreshold(tt.expr)
		if err != nil {
			t.Fatalf("%s: %v", tt.expr, err)
		}
		if got := Evaluate(s, []Threshold{th}); got != tt.pass {
			t.Errorf("%s: pass %v, want %v (%+v)", tt.expr, got, tt.pass, s.Thresholds)
		}
		if strings.Contains(tt.expr, "lost") && !strings.Contains(s.Thresholds[0].Unit, "loss not known") {
			t.Errorf("%s: unit %q, want it to say loss is not known", tt.expr, s.Thresholds[0].Unit)
		}
	}
	for _, tt := range []struct{ expr, want string }{
		{"e2e.settled.errors<1", "unknown statistic"},
		{"e2e.settled.rps>1", "unknown statistic"},
	} {
		if _, err := ParseThreshold(tt.expr); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got %v, want an error with %q", tt.expr, err, tt.want)
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
		{"cpu<50%", `threshold "cpu<50%": unknown metric "cpu", want a latency statistic (p99, service p95, e2e.p99, ...), errors, rps, throughput, iteration_rate, dropped, late, status.CODE, grpc.NAME, match, pending, lost or duplicates`},
		{"step 2: match>99%", `threshold "step 2: match>99%": per step, only latency, service, e2e latency, errors%, rps, throughput, iteration_rate, dropped, late, status.CODE%, grpc.NAME%, pending% are known`},
		{"POST /events: rps>5", `threshold "POST /events: rps>5": per endpoint, only latency, errors, status.CODE, grpc.NAME and match are known`},
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

// TestStatusThresholds: status.CODE and status.Nxx measure answers as a
// share of all the requests (one that failed without an answer counts
// against status.202>99%), or as a count; grpc.NAME the gRPC answers by
// status name; for the run, an endpoint, a step or every step.
func TestStatusThresholds(t *testing.T) {
	s := rateSummary() // 1200 requests: 202 ×1100, 200 ×94, 500 ×4, 2 without an answer
	s.Steps = []Step{
		{Step: 1, Requests: 100, Answered: 100, Status: map[string]int64{"202": 100}},
		{Step: 2, Requests: 100, Answered: 98, Status: map[string]int64{"202": 90, "503": 8}, Errors: map[string]int64{"timeout": 2}},
	}
	checkMeasured(t, s, []measuredCase{
		{"status.202>91%", 1100.0 / 1200 * 100, true},
		{"status.202>92%", 1100.0 / 1200 * 100, false},
		{"status.202>=1100", 1100, true},
		{"status.2xx>99.8%", 1194.0 / 1200 * 100, false}, // the two without an answer count against it
		{"status.2xx>99.4%", 1194.0 / 1200 * 100, true},
		{"status.5xx<0.1%", 4.0 / 1200 * 100, false},
		{"status.5XX<0.5%", 4.0 / 1200 * 100, true},
		{"status.5xx<=4", 4, true},
		{"status.404<1", 0, true},
		{"POST /events: status.202>99%", 100, true},
		{"GET /users/{id}/orders: status.200>99%", 94.0 / 98 * 100, false},
		{"GET /users/{id}/orders: status.5xx<5%", 4.0 / 98 * 100, true},
		{"other: status.2xx>0%", 0, false}, // two requests, neither answered
		{"step 1: status.202>99%", 100, true},
		{"step 2: status.202>99%", 90, false},
		{"step 2: status.5xx<10%", 8, true},
	})
	each, _ := ParseThreshold("each step: status.202>95%")
	if Evaluate(s, []Threshold{each}) || len(s.Thresholds) != 2 || !s.Thresholds[0].Pass || s.Thresholds[1].Pass || s.Thresholds[1].Name() != "each step: status.202>95% (step 2)" {
		t.Errorf("each step: %+v", s.Thresholds)
	}

	g := recorded(t, "grpc") // 23 requests, 4 without an answer; 14 gRPC answers, 10 OK, all of POST /events
	checkMeasured(t, g, []measuredCase{
		{"grpc.OK>99%", 10.0 / 18 * 100, false},
		{"grpc.OK>55%", 10.0 / 18 * 100, true},
		{"grpc.ok>=10", 10, true},
		{"grpc.NOT_FOUND<=2", 2, true},
		{"POST /events: grpc.OK>70%", 10.0 / 14 * 100, true},
		{"POST /events: grpc.UNAVAILABLE<5%", 1.0 / 14 * 100, false},
	})
	// Nothing to measure fails, saying why: no gRPC answer, no request.
	for _, tt := range []struct {
		s          *Summary
		expr, unit string
	}{
		{rateSummary(), "grpc.OK>99%", "(no gRPC call was answered)"},
		{rateSummary(), "status.5xx<1%", ""},
		{recorded(t, "empty"), "status.5xx<1%", "% (no request was sent)"},
		{recorded(t, "empty"), "status.200>99%", "% (no request was sent)"},
	} {
		th, _ := ParseThreshold(tt.expr)
		Evaluate(tt.s, []Threshold{th})
		if r := tt.s.Thresholds[0]; tt.unit != "" && (r.Pass || r.Unit != tt.unit) {
			t.Errorf("%s: %+v, want a failure saying %q", tt.expr, r, tt.unit)
		}
	}
	for _, tt := range []struct{ expr, want string }{
		{"status.600>1%", `status.600: want an HTTP status from 100 to 599 (status.202) or a class from 1xx to 5xx (status.5xx)`},
		{"status.6xx<1%", `status.6xx: want an HTTP status`},
		{"status.20>1%", `status.20: want an HTTP status`},
		{"status>99%", `status: want status.CODE, CODE an HTTP status from 100 to 599`},
		{"grpc.FINE>99%", `grpc.FINE: want a gRPC status name (grpc.OK, grpc.UNAVAILABLE`},
		{"errors.5xx<1%", `unknown metric "errors.5xx"`},
	} {
		if _, err := ParseThreshold(tt.expr); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: got %v, want an error with %q", tt.expr, err, tt.want)
		}
	}
}

// measuredCase is a threshold, what it measures and whether it passes.
type measuredCase struct {
	expr     string
	measured float64
	pass     bool
}

// checkMeasured evaluates each case's threshold alone on s.
func checkMeasured(t *testing.T, s *Summary, cases []measuredCase) {
	t.Helper()
	for _, tt := range cases {
		th, err := ParseThreshold(tt.expr)
		if err != nil {
			t.Fatalf("%s: %v", tt.expr, err)
		}
		pass := Evaluate(s, []Threshold{th})
		r := s.Thresholds[0]
		if pass != tt.pass || math.Abs(r.Measured-tt.measured) > 1e-9 {
			t.Errorf("%s: measured %v %s, pass %v; want %v, pass %v", tt.expr, r.Measured, r.Unit, pass, tt.measured, tt.pass)
		}
	}
}

// TestStatusThresholdsRendered: a status threshold shows in the text, the
// JSON, the HTML and the JUnit reports as every threshold does.
func TestStatusThresholdsRendered(t *testing.T) {
	s := rateSummary()
	if err := Judge(s, []string{"POST /events: status.202>99%", "status.5xx<0.1%"}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		render Renderer
		want   []string
	}{
		{"text", WriteText, []string{"pass  POST /events: status.202>99%   measured 100.000 %", "FAIL  status.5xx<0.1%", "measured 0.333 %"}},
		{"json", WriteJSON, []string{`"threshold": "POST /events: status.202\u003e99%"`, `"threshold": "status.5xx\u003c0.1%",`, `"measured": 0.3333333333333333,`}},
		{"html", WriteHTML, []string{"<td>POST /events: status.202&gt;99%</td><td>100.00 %</td><td class=\"pass\">pass</td>", "<td>status.5xx&lt;0.1%</td><td>0.33 %</td><td class=\"fail\">FAIL</td>"}},
		{"junit", WriteJUnit, []string{`<testcase name="POST /events: status.202&gt;99%" classname="replay"></testcase>`, `<testcase name="status.5xx&lt;0.1%" classname="replay">`, `<failure message="measured 0.3333333333333333 %"></failure>`}},
	} {
		var buf bytes.Buffer
		if err := tt.render(&buf, s); err != nil {
			t.Fatal(err)
		}
		for _, w := range tt.want {
			if !strings.Contains(buf.String(), w) {
				t.Errorf("%s: no %q in\n%s", tt.name, w, buf.String())
			}
		}
	}
}
