package rrpair

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func filterFile(t *testing.T) string {
	var lines []string
	add := func(method, uri string, status int, ts string, session string) {
		tags := ""
		if session != "" {
			tags = fmt.Sprintf(`"tags":{"session":%q},`, session)
		}
		lines = append(lines, fmt.Sprintf(`{%s"ts":%q,"http":{"req":{"method":%q,"uri":%q,"host":"h"},"res":{"statusCode":%d}}}`, tags, ts, method, uri, status))
	}
	add("GET", "/health", 200, "2026-11-01T10:00:00Z", "")
	add("POST", "/events?src=web", 202, "2026-11-01T10:00:01Z", "a")
	add("GET", "/events/1", 404, "2026-11-01T10:00:02Z", "a")
	add("POST", "/admin/reset", 500, "2026-11-01T10:00:03Z", "")
	add("GET", "/users/7/feed?token=abc", 200, "2026-11-01T10:00:04Z", "b")
	return writeFile(t, strings.Join(lines, "\n"))
}

func TestFilter(t *testing.T) {
	path := filterFile(t)
	at := func(s string) time.Time { v, _ := time.Parse(time.RFC3339, s); return v }
	tests := []struct {
		name       string
		keep, drop []string
		from, to   string
		want       string // URIs kept, in order
	}{
		{"nothing", nil, nil, "", "", "/health /events?src=web /events/1 /admin/reset /users/7/feed?token=abc"},
		{"keep methods", []string{"method=post,PUT"}, nil, "", "", "/events?src=web /admin/reset"},
		{"drop path", nil, []string{"path=^/(health|admin)"}, "", "", "/events?src=web /events/1 /users/7/feed?token=abc"},
		{"uri has the query, path not", []string{"uri=token="}, nil, "", "", "/users/7/feed?token=abc"},
		{"path ignores the query", []string{"path=token="}, nil, "", "", ""},
		{"status classes and codes", []string{"status=2xx,500"}, nil, "", "", "/health /events?src=web /admin/reset /users/7/feed?token=abc"},
		{"endpoint names", nil, []string{"endpoint=GET /health;GET /events/{id}"}, "", "", "/events?src=web /admin/reset /users/7/feed?token=abc"},
		{"keep and drop", []string{"method=GET"}, []string{"status=4xx"}, "", "", "/health /users/7/feed?token=abc"},
		{"time window", nil, nil, "2026-11-01T10:00:01Z", "2026-11-01T10:00:03Z", "/events?src=web /events/1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			flt := &Filter{}
			for _, k := range tt.keep {
				r, err := ParseRule(k)
				if err != nil {
					t.Fatal(err)
				}
				flt.Keep = append(flt.Keep, r)
			}
			for _, d := range tt.drop {
				r, err := ParseRule(d)
				if err != nil {
					t.Fatal(err)
				}
				flt.Drop = append(flt.Drop, r)
			}
			if tt.from != "" {
				flt.From, flt.To = at(tt.from), at(tt.to)
			}
			f, err := Open(path, Options{Filter: flt})
			if tt.want == "" {
				if !errors.Is(err, ErrAllFiltered) {
					t.Fatalf("got %v, want ErrAllFiltered", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var got []string
			c := f.NewCursor()
			var p Pair
			for i := 0; i < f.Len(); i++ {
				c.Decode(i, &p)
				got = append(got, string(p.Req.URI))
			}
			if strings.Join(got, " ") != tt.want {
				t.Errorf("kept %q, want %q", strings.Join(got, " "), tt.want)
			}
			if f.Filtered() != 5-len(got) {
				t.Errorf("Filtered: got %d, want %d", f.Filtered(), 5-len(got))
			}
		})
	}
}

func TestSampleIsSeededAndKeepsSessionsWhole(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 2000; i++ {
		fmt.Fprintf(&b, `{"tags":{"session":"s%d"},"http":{"req":{"method":"GET","uri":"/%d","host":"h"}}}`+"\n", i/2, i)
	}
	path := writeFile(t, b.String())
	kept := func(seed uint64) []string {
		f, err := Open(path, Options{Filter: &Filter{Sample: 0.1, Seed: seed}})
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		var uris []string
		c := f.NewCursor()
		var p Pair
		for k := 0; k < f.Iterations(); k++ {
			if f.IterationLen(k) != 2 {
				t.Fatalf("a sampled session lost a pair")
			}
			c.Decode(f.PairOf(k, 0), &p)
			uris = append(uris, string(p.Req.URI))
		}
		return uris
	}
	a, again, other := kept(42), kept(42), kept(7)
	if strings.Join(a, ",") != strings.Join(again, ",") {
		t.Error("the same seed kept different iterations")
	}
	if strings.Join(a, ",") == strings.Join(other, ",") {
		t.Error("another seed kept the same iterations")
	}
	if n := len(a); n < 70 || n > 130 {
		t.Errorf("--sample 0.1 kept %d of 1000 sessions", n)
	}
}

func TestParseRuleErrors(t *testing.T) {
	for _, s := range []string{"method", "color=red", "path=(", "status=6xx", "status=abc", "uri="} {
		if _, err := ParseRule(s); err == nil {
			t.Errorf("ParseRule(%q) succeeded", s)
		}
	}
	if err := (&Filter{Sample: 1.5}).Validate(); err == nil {
		t.Error("--sample 1.5 validated")
	}
}
