package schedule

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

// count is how many iterations s has due before t.
func count(s *Schedule, t time.Duration) int64 {
	var k int64
	for {
		due, ok := s.Due(k)
		if !ok || due >= t {
			return k
		}
		k++
	}
}

// rate is the schedule of an arrival rate starting at r through stages,
// cut at limit.
func rate(t *testing.T, r float64, stages string, limit time.Duration) *Schedule {
	t.Helper()
	l := Load{Model: Rate, VUs: 1, Rate: r, Duration: limit}
	if stages != "" {
		var err error
		if l.Stages, _, err = ParseStages(stages, true); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Validate(); err != nil {
		t.Fatal(err)
	}
	l.SetDefaults()
	return New(l)
}

func TestDueConstant(t *testing.T) {
	s := rate(t, 2000, "", 10*time.Second)
	for _, k := range []int64{0, 1, 1999, 2000, 19999} {
		due, ok := s.Due(k)
		want := time.Duration(k) * time.Second / 2000
		if !ok || absDur(due-want) > time.Microsecond {
			t.Errorf("Due(%d) = %v %v, want %v", k, due, ok, want)
		}
	}
	if _, ok := s.Due(20000); ok {
		t.Error("Due(20000) is within a 10s run at 2000/s")
	}
	if got := count(s, 10*time.Second); got != 20000 {
		t.Errorf("got %d iterations in 10s, want 20000", got)
	}
}

func TestDueStages(t *testing.T) {
	s := rate(t, 0, "10s:1000,1000@10s,10s:0", 0)
	tests := []struct {
		at   time.Duration
		want int64
	}{
		{5 * time.Second, 1250},  // ramp 0→1000: ∫ = 1000·t²/(2·10) = 1250 at 5s
		{10 * time.Second, 5000}, // the whole ramp
		{20 * time.Second, 15000},
		{25 * time.Second, 18750},
		{30 * time.Second, 20000},
		{40 * time.Second, 20000}, // the schedule ended
	}
	for _, tt := range tests {
		if got := count(s, tt.at); math.Abs(float64(got-tt.want)) > 1 {
			t.Errorf("iterations before %v: got %d, want %d", tt.at, got, tt.want)
		}
	}
	var prev time.Duration
	for k := int64(0); ; k++ {
		due, ok := s.Due(k)
		if !ok {
			break
		}
		if due < prev {
			t.Fatalf("Due(%d) = %v before Due(%d) = %v", k, due, k-1, prev)
		}
		prev = due
	}
}

func TestDueKnativePace(t *testing.T) {
	s := rate(t, 0, "1000@60s,1200@60s,1400/s@60s", 0)
	if got := count(s, 60*time.Second); got != 60000 {
		t.Errorf("first step: got %d, want 60000", got)
	}
	if got := count(s, 180*time.Second); got != 60000+72000+84000 {
		t.Errorf("three steps: got %d, want %d", got, 60000+72000+84000)
	}
	// A --duration shorter than the stages cuts them.
	s = rate(t, 0, "1000@60s,1200@60s,1400/s@60s", 30*time.Second)
	if got := count(s, time.Hour); got != 30000 {
		t.Errorf("cut at 30s: got %d, want 30000", got)
	}
}

// Due is an arrival rate's: the other models have no iteration due on a
// clock.
func TestDueOnlyUnderARate(t *testing.T) {
	for _, l := range []Load{{VUs: 1, Duration: time.Second}, {Model: Recorded, VUs: 1}} {
		if _, ok := New(l).Due(0); ok {
			t.Errorf("%v: an iteration due", l.Model)
		}
	}
}

func TestParseStagesErrors(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"", "at least one stage"},
		{"30s", "want DURATION:TARGET"},
		{"30x:100", "positive duration"},
		{"-5s:100", "positive duration"},
		{"30s:fast", "rate such as"},
		{"30s:100/d", "rate such as"},
		{"10s:100,,10s:0", "stage 2"},
		{"100@", "positive duration"},
	} {
		_, _, err := ParseStages(tt.in, true)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseStages(%q): got %v, want an error with %q", tt.in, err, tt.want)
		}
	}
	if _, _, err := ParseStages("10s:-3", false); err == nil {
		t.Error("negative VUs accepted")
	}
	if st, _, err := ParseStages("10s:60/m", true); err != nil || st[0].Target != 1 {
		t.Errorf("60/m: got %v %v, want 1/s", st, err)
	}
}

func TestVUs(t *testing.T) {
	stages, _, err := ParseStages("10s:10,5@10s,10s:0", false)
	if err != nil {
		t.Fatal(err)
	}
	l := Load{VUs: 2, Stages: stages}
	l.SetDefaults()
	s := New(l)
	for _, tt := range []struct {
		at   time.Duration
		want int
	}{{0, 2}, {5 * time.Second, 6}, {10 * time.Second, 5}, {19 * time.Second, 5}, {25 * time.Second, 3}, {time.Hour, 0}} {
		if got := s.VUs(tt.at); got != tt.want {
			t.Errorf("at %v: got %d VUs, want %d", tt.at, got, tt.want)
		}
	}
}

// Target moves linearly through a ramp from the previous target (or the
// start rate), jumps at a hold, and holds the last target after the
// stages; StepOf says which step an offset is in.
func TestTargetAndStep(t *testing.T) {
	l := Load{Model: Rate, VUs: 1, Rate: 20, Stages: []Stage{{Duration: 10 * time.Second, Target: 100}, {Duration: 5 * time.Second, Target: 300, Hold: true}, {Duration: 10 * time.Second, Target: 0}}}
	s := New(l)
	for _, tt := range []struct {
		at   time.Duration
		step int
		rate float64
	}{
		{0, 0, 20}, {5 * time.Second, 0, 60}, {10 * time.Second, 1, 300}, {15 * time.Second, 2, 300}, {20 * time.Second, 2, 150}, {time.Minute, 2, 0},
	} {
		rate, ok := s.Target(tt.at)
		if step := s.StepOf(tt.at); step != tt.step || rate != tt.rate || !ok {
			t.Errorf("at %v: step %d rate %v %v, want %d %v", tt.at, step, rate, ok, tt.step, tt.rate)
		}
	}
	flat := New(Load{Model: Rate, VUs: 1, Rate: 50})
	if rate, ok := flat.Target(time.Hour); !ok || rate != 50 || flat.StepOf(time.Hour) != -1 {
		t.Errorf("without stages: rate %v %v step %d, want 50 true -1", rate, ok, flat.StepOf(time.Hour))
	}
	if _, ok := New(Load{Model: Recorded, VUs: 1}).Target(0); ok {
		t.Error("recorded pacing has a target")
	}
}

// Steps: a ramp step starts at the previous target (or --rate, or --vus),
// a hold does not ramp, and --duration cuts the steps (a step that would
// begin after it does not run).
func TestSteps(t *testing.T) {
	tests := []struct {
		name   string
		load   Load
		stages string
		want   string
	}{
		{"rate ramps", Load{Model: Rate, Rate: 100}, "2s:500/s,500/s@1s,1s:0", "0s-2s 100→500 ramp, 2s-3s 500→500, 3s-4s 500→0 ramp"},
		{"held from the start", Load{Model: Rate}, "100/s@1s,300/s@2s", "0s-1s 100→100, 1s-3s 300→300"},
		{"vus", Load{VUs: 4}, "1s:10,10@2s", "0s-1s 4→10 ramp, 1s-3s 10→10"},
		{"cut by duration", Load{Model: Rate, Duration: 2 * time.Second}, "100/s@1s,300/s@2s,500/s@2s", "0s-1s 100→100, 1s-2s 300→300"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := tc.load
			var err error
			if l.Stages, _, err = ParseStages(tc.stages, l.Model == Rate); err != nil {
				t.Fatal(err)
			}
			l.VUs = max(l.VUs, 1)
			l.SetDefaults()
			var got []string
			for _, st := range New(l).Steps() {
				ramp := ""
				if st.Ramp {
					ramp = " ramp"
				}
				got = append(got, st.Start.String()+"-"+st.End.String()+" "+trim(st.From)+"→"+trim(st.To)+ramp)
			}
			if strings.Join(got, ", ") != tc.want {
				t.Errorf("got %q, want %q", strings.Join(got, ", "), tc.want)
			}
		})
	}
}

// End is when issuing stops: the duration, else the stages' length, else
// the file decides (0); Span is where the last step that runs ends.
func TestEndAndSpan(t *testing.T) {
	stages := []Stage{{Duration: 2 * time.Second, Target: 10, Hold: true}, {Duration: 3 * time.Second, Target: 20, Hold: true}}
	for _, tt := range []struct {
		name      string
		load      Load
		end, span time.Duration
	}{
		{"a walk of the file", Load{VUs: 1}, 0, 0},
		{"duration", Load{VUs: 1, Duration: 7 * time.Second}, 7 * time.Second, 0},
		{"rate stages", Load{Model: Rate, VUs: 1, Stages: stages}, 5 * time.Second, 5 * time.Second},
		{"stages cut", Load{Model: Rate, VUs: 1, Stages: stages, Duration: 3 * time.Second}, 3 * time.Second, 3 * time.Second},
		{"closed stages", Load{VUs: 1, Stages: stages}, 5 * time.Second, 5 * time.Second},
	} {
		l := tt.load
		l.SetDefaults()
		s := New(l)
		if s.End() != tt.end || s.Span() != tt.span {
			t.Errorf("%s: end %v span %v, want %v %v", tt.name, s.End(), s.Span(), tt.end, tt.span)
		}
	}
}

func TestShare(t *testing.T) {
	for _, tt := range []struct{ total, n int }{{10, 3}, {1, 4}, {500, 7}, {0, 2}} {
		sum := 0
		for i := 0; i < tt.n; i++ {
			sum += share(tt.total, i, tt.n)
		}
		if sum != tt.total {
			t.Errorf("shares of %d over %d add to %d", tt.total, tt.n, sum)
		}
	}
	l := Load{Model: Rate, VUs: 10, MaxVUs: 100, Iterations: 7, Rate: 300, Stages: []Stage{{Duration: time.Second, Target: 600}}}
	var vus, maxVUs int
	var its int64
	var r, target float64
	for i := range 3 {
		s := l.Share(i, 3)
		vus, maxVUs, its, r, target = vus+s.VUs, maxVUs+s.MaxVUs, its+s.Iterations, r+s.Rate, target+s.Stages[0].Target
	}
	if vus != 10 || maxVUs != 100 || its != 7 || math.Abs(r-300) > 1e-9 || math.Abs(target-600) > 1e-9 {
		t.Errorf("shares add to %d VUs, %d max, %d iterations, %v/s, stage %v/s; want the whole load", vus, maxVUs, its, r, target)
	}
	if l.Stages[0].Target != 600 {
		t.Error("Share changed the load's stages")
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		load Load
		want string
	}{
		{"no vus", Load{}, "--vus"},
		{"max-vus with closed", Load{VUs: 1, MaxVUs: 5}, "--max-vus"},
		{"rate without a rate", Load{VUs: 1, Model: Rate}, "--rate"},
		{"think with rate", Load{VUs: 1, Model: Rate, Rate: 5, Think: true}, "--think"},
		{"max below vus", Load{VUs: 5, MaxVUs: 2, Model: Rate, Rate: 5}, "--max-vus"},
		{"recorded stages", Load{VUs: 1, Model: Recorded, Stages: []Stage{{Duration: time.Second}}}, "--stages"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.load.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error mentioning %q", err, tt.want)
			}
		})
	}
}

func trim(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// FuzzParseStages: any input either fails or gives stages whose schedule
// is monotonic and ends.
func FuzzParseStages(f *testing.F) {
	for _, s := range []string{"30s:1000", "1000@60s,1200/s@1m", "10s:5/m,2s:0", "1h:1e9", "0.5s:3.25"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		stages, _, err := ParseStages(s, true)
		if err != nil {
			return
		}
		for _, st := range stages {
			if st.Duration <= 0 || st.Target < 0 || math.IsNaN(st.Target) || math.IsInf(st.Target, 0) {
				t.Fatalf("%q: bad stage %+v", s, st)
			}
		}
		p := New(Load{Model: Rate, VUs: 1, Stages: stages, Duration: time.Second})
		var prev time.Duration
		for k := int64(0); k < 1000; k++ {
			due, ok := p.Due(k)
			if !ok {
				return
			}
			if due < prev || due >= time.Second {
				t.Fatalf("%q: Due(%d) = %v after %v", s, k, due, prev)
			}
			prev = due
		}
	})
}

// StepOf's boundaries: a step ends where the next begins; before the
// start is the first step, after the end the last.
func TestStepOfBoundaries(t *testing.T) {
	s := New(Load{Model: Rate, VUs: 1, Stages: []Stage{{Duration: 100, Target: 1, Hold: true}, {Duration: 100, Target: 1, Hold: true}, {Duration: 100, Target: 1, Hold: true}}})
	for off, want := range map[time.Duration]int{-5: 0, 0: 0, 99: 0, 100: 1, 199: 1, 200: 2, 299: 2, 300: 2, 1000: 2} {
		if got := s.StepOf(off); got != want {
			t.Errorf("StepOf(%d) = %d, want %d", off, got, want)
		}
	}
}

// Rates are iterations a second unless written in requests: req/s, req/m,
// req/h; the time units are those of iterations.
func TestParseRateUnits(t *testing.T) {
	for _, tt := range []struct {
		in   string
		v    float64
		unit Unit
	}{
		{"2000/s", 2000, Iterations}, {"2000", 2000, Iterations}, {"120000/m", 2000, Iterations}, {"7200/h", 2, Iterations},
		{"1000req/s", 1000, Requests}, {"60000req/m", 1000, Requests}, {"3600req/h", 1, Requests}, {"1000 req/s", 1000, Requests},
	} {
		v, u, err := ParseRate(tt.in)
		if err != nil || v != tt.v || u != tt.unit {
			t.Errorf("ParseRate(%q) = %v %v %v, want %v %v", tt.in, v, u, err, tt.v, tt.unit)
		}
	}
	for _, bad := range []string{"1000req", "1000req/d", "req/s", "1000rq/s", "-5req/s"} {
		if _, _, err := ParseRate(bad); err == nil || !strings.Contains(err.Error(), "2000req/s (requests)") {
			t.Errorf("ParseRate(%q): got %v, want an error naming both units", bad, err)
		}
	}
}

// A stage list is in one unit; a list that mixes them is refused, naming
// the stage.
func TestParseStagesUnits(t *testing.T) {
	stages, unit, err := ParseStages("500req/s@10s,30s:1500req/s", true)
	if err != nil || unit != Requests || len(stages) != 2 || stages[1].Target != 1500 {
		t.Fatalf("got %v %v %v, want two stages in requests", stages, unit, err)
	}
	if _, unit, err := ParseStages("500@10s,30s:1500/s", true); err != nil || unit != Iterations {
		t.Errorf("bare and /s: got %v %v, want iterations", unit, err)
	}
	_, _, err = ParseStages("500req/s@10s,1000@10s", true)
	if err == nil || !strings.Contains(err.Error(), `stage 2 "1000@10s": in iterations a second, stage 1 in requests`) {
		t.Errorf("mixed units: got %v", err)
	}
}

// InIterations divides a load written in requests by the requests an
// iteration holds, once, and leaves one in iterations as it is.
func TestInIterations(t *testing.T) {
	l := Load{Model: Rate, VUs: 1, Rate: 600, Unit: Requests, Stages: []Stage{{Duration: time.Second, Target: 1200, Hold: true}}}
	c := l.InIterations(6)
	if c.Rate != 100 || c.Stages[0].Target != 200 || c.PerIteration != 6 || c.Unit != Requests {
		t.Errorf("converted: %+v, want rate 100, stage 200, 6 a iteration", c)
	}
	if l.Stages[0].Target != 1200 {
		t.Error("InIterations changed the stages of the load it was given")
	}
	if again := c.InIterations(3); again.Rate != 100 || again.PerIteration != 6 {
		t.Errorf("converted twice: %+v", again)
	}
	it := Load{Model: Rate, VUs: 1, Rate: 600}.InIterations(6)
	if it.Rate != 600 || it.PerIteration != 6 {
		t.Errorf("iterations: %+v, want the rate kept and the ratio noted", it)
	}
	if z := (Load{Model: Rate, Rate: 5, Unit: Requests}).InIterations(0); z.Rate != 5 || z.PerIteration != 1 {
		t.Errorf("no iteration: %+v, want 1 request an iteration", z)
	}
}
