package metrics

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/replay-dev/replay/pkg/e2e"
	"github.com/replay-dev/replay/pkg/recording"
	"github.com/replay-dev/replay/pkg/result"
)

// TestGrafanaDashboards: every metric a dashboard in deploy/grafana
// queries is one --metrics serves (a family, or a histogram's or a
// summary's _bucket, _sum, _count), so that a renamed metric cannot leave
// a panel empty; and every family served is on some panel.
func TestGrafanaDashboards(t *testing.T) {
	rec := recording.NewRecorder([]string{"POST /events"})
	rec.Record(result.Result{End: 1e6, Status: 202})
	rec.Record(result.Result{End: 2e6, Err: result.ErrTimeout})
	rec.Close()
	s, err := Listen("127.0.0.1:0", withRecorder(rec, func(l *recording.Live) {
		l.VUs = 1
		l.HasTarget, l.Step, l.Target = true, 1, 10
		l.Events = []e2e.StageCount{{Name: "queued", Unique: 1}}
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fams, _ := scrape(t, s)
	served := map[string]bool{}
	for name, f := range fams {
		served[name] = true
		switch f.GetType().String() {
		case "HISTOGRAM":
			served[name+"_bucket"], served[name+"_sum"], served[name+"_count"] = true, true, true
		case "SUMMARY":
			served[name+"_sum"], served[name+"_count"] = true, true
		}
	}

	files, err := filepath.Glob("../../deploy/grafana/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboard in deploy/grafana (%v)", err)
	}
	metric := regexp.MustCompile(`\breplay_[a-z0-9_]+`)
	used := map[string]bool{}
	for _, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var dash struct {
			Title  string `json:"title"`
			Panels []struct {
				Title   string `json:"title"`
				Targets []struct {
					Expr string `json:"expr"`
				} `json:"targets"`
			} `json:"panels"`
			Templating struct {
				List []struct {
					Query any `json:"query"`
				} `json:"list"`
			} `json:"templating"`
		}
		if err := json.Unmarshal(b, &dash); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if dash.Title == "" || len(dash.Panels) == 0 {
			t.Fatalf("%s: a dashboard without a title or panels", path)
		}
		var exprs []string
		for _, p := range dash.Panels {
			if len(p.Targets) == 0 {
				t.Errorf("%s: panel %q queries nothing", path, p.Title)
			}
			for _, tg := range p.Targets {
				exprs = append(exprs, tg.Expr)
			}
		}
		for _, v := range dash.Templating.List {
			if q, ok := v.Query.(string); ok {
				exprs = append(exprs, q)
			}
		}
		for _, e := range exprs {
			for _, m := range metric.FindAllString(e, -1) {
				used[m] = true
				if !served[m] {
					t.Errorf("%s queries %s, which --metrics does not serve (it serves %s)", filepath.Base(path), m, strings.Join(sortedNames(fams), ", "))
				}
			}
		}
	}
	for name := range fams {
		if !used[name] && !used[name+"_bucket"] {
			t.Errorf("--metrics serves %s, which no dashboard shows", name)
		}
	}
}

func sortedNames[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
