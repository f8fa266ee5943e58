package run

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/replay-dev/replay/pkg/report"
)

// TestSettingsByModel: the HTML report's configuration says, for each
// model, only what the run uses, rates with their unit: no "duration 0s"
// or first rate for a staged run, no stages without any, no VU cap for a
// closed model. Ready stops each run before it sends anything.
func TestSettingsByModel(t *testing.T) {
	srv := newSUT(t, 0, 202)
	file := trafficFile(t, 30)
	for _, tc := range []struct {
		name    string
		set     func(o *Options)
		want    []string
		wantNot []string
	}{
		{"closed", func(o *Options) { o.Load.Mode, o.Load.Duration = "loop", 3*time.Second },
			[]string{"VUs: 2", "length: 3s"}, []string{"rate:", "stages:", "at most"}},
		{"closed stages", func(o *Options) { o.Load.Mode, o.Load.Stages = "", "2s:5,5@1s" },
			[]string{"VUs: 2 at the start, then as the stages say", "stages: 2→5 VUs 2s, 5 VUs 1s", "length: 3s"}, []string{"rate:", "0s,"}},
		{"rate", func(o *Options) { o.Load.Mode, o.Load.Rate, o.Load.Duration = "", "50/s", 2*time.Second },
			[]string{"rate: 50 iterations/s (214.29 requests/s)", "length: 2s", "at most"}, []string{"stages:"}},
		{"rate stages", func(o *Options) { o.Load.Mode, o.Load.Rate, o.Load.Stages = "", "50/s", "50/s@2s,2s:150/s" },
			[]string{"stages: 50/s 2s, 50/s→150/s 2s (iterations a second)", "length: 4s"}, []string{"rate:", "length: 0s"}},
		{"requests", func(o *Options) { o.Load.Mode, o.Load.Rate, o.Load.Stages = "", "40req/s", "40req/s@1s,1s:80req/s" },
			[]string{"stages: 40req/s 1s, 40req/s→80req/s 1s (requests a second)"}, []string{"rate:"}},
		{"once", func(o *Options) {}, []string{"length: one pass over the file"}, []string{"length: 0s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := options(file, srv.URL)
			tc.set(&o)
			var got []report.Setting
			stop := errors.New("stop before sending")
			o.Ready = func(p Plan) error { got = p.Settings; return stop }
			if _, err := execute(t, context.Background(), o, time.Minute); !errors.Is(err, stop) {
				t.Fatalf("run: %v, want Ready's error", err)
			}
			var lines []string
			for _, s := range got {
				lines = append(lines, s.Name+": "+s.Value)
			}
			all := strings.Join(lines, "\n")
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("the settings lack %q:\n%s", w, all)
				}
			}
			for _, w := range tc.wantNot {
				if strings.Contains(all, w) {
					t.Errorf("the settings have %q:\n%s", w, all)
				}
			}
		})
	}
}
