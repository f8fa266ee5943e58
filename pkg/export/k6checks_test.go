package export

import (
	"reflect"
	"testing"

	"github.com/replay-dev/replay/pkg/report"
)

// TestK6ChecksOf: status thresholds become checks that pass for the
// requests keeping them (a share below x: "not status.5xx" above 1 − x),
// one check per name whatever the endpoints, thresholds on their rates,
// by endpoint tag; errors% a threshold on http_req_failed.
func TestK6ChecksOf(t *testing.T) {
	ts, err := report.ParseThresholds([]string{"status.202>99%", "POST /events: status.202>=99.5%", "status.5xx<0.1%",
		"GET /users/{id}: status.5xx<=1%", "errors<1%", "POST /events: errors<0.5%"})
	if err != nil {
		t.Fatal(err)
	}
	k, err := K6ChecksOf(ts)
	if err != nil {
		t.Fatal(err)
	}
	wantChecks := []k6Check{
		{Name: "status.202", Code: "202", All: true, Endpoints: []string{"POST /events"}},
		{Name: "not status.5xx", Code: "5xx", Not: true, All: true, Endpoints: []string{"GET /users/{id}"}},
	}
	if !reflect.DeepEqual(k.checks, wantChecks) {
		t.Errorf("checks %+v\nwant %+v", k.checks, wantChecks)
	}
	want := map[string][]string{
		"checks{check:status.202}":                              {"rate>0.99"},
		"checks{check:status.202,endpoint:POST /events}":        {"rate>=0.995"},
		"checks{check:not status.5xx}":                          {"rate>0.999"},
		"checks{check:not status.5xx,endpoint:GET /users/{id}}": {"rate>=0.99"},
		"http_req_failed":                                       {"rate<0.01"},
		"http_req_failed{name:POST /events}":                    {"rate<0.005"},
	}
	if !reflect.DeepEqual(k.thresholds, want) || len(k.order) != len(want) || k.order[0] != "checks{check:status.202}" {
		t.Errorf("thresholds %v (order %v)\nwant %v", k.thresholds, k.order, want)
	}
}
