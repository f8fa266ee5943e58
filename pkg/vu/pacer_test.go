package vu

import (
	"math"
	"strings"
	"testing"
	"time"
)

// count is how many iterations p has due before t.
func count(p Pacer, t time.Duration) int64 {
	var k int64
	for {
		due, ok := p.Due(k)
		if !ok || due >= t {
			return k
		}
		k++
	}
}

func TestRatePacerConstant(t *testing.T) {
	p := NewRatePacer(2000, nil, 10*time.Second)
	for _, k := range []int64{0, 1, 1999, 2000, 19999} {
		due, ok := p.Due(k)
		want := time.Duration(k) * time.Second / 2000
		if !ok || absDur(due-want) > time.Microsecond {
			t.Errorf("Due(%d) = %v %v, want %v", k, due, ok, want)
		}
	}
	if _, ok := p.Due(20000); ok {
		t.Error("Due(20000) is within a 10s run at 2000/s")
	}
	if got := count(p, 10*time.Second); got != 20000 {
		t.Errorf("got %d iterations in 10s, want 20000", got)
	}
}

func TestRatePacerStages(t *testing.T) {
	stages, err := ParseStages("10s:1000,1000@10s,10s:0", true)
	if err != nil {
		t.Fatal(err)
	}
	p := NewRatePacer(0, stages, 0)
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
		if got := count(p, tt.at); math.Abs(float64(got-tt.want)) > 1 {
			t.Errorf("iterations before %v: got %d, want %d", tt.at, got, tt.want)
		}
	}
	var prev time.Duration
	for k := int64(0); ; k++ {
		due, ok := p.Due(k)
		if !ok {
			break
		}
		if due < prev {
			t.Fatalf("Due(%d) = %v before Due(%d) = %v", k, due, k-1, prev)
		}
		prev = due
	}
}

func TestRatePacerKnativePace(t *testing.T) {
	stages, err := ParseStages("1000@60s,1200@60s,1400/s@60s", true)
	if err != nil {
		t.Fatal(err)
	}
	p := NewRatePacer(0, stages, 0)
	if got := count(p, 60*time.Second); got != 60000 {
		t.Errorf("first step: got %d, want 60000", got)
	}
	if got := count(p, 180*time.Second); got != 60000+72000+84000 {
		t.Errorf("three steps: got %d, want %d", got, 60000+72000+84000)
	}
	// A --duration shorter than the stages cuts them.
	p = NewRatePacer(0, stages, 30*time.Second)
	if got := count(p, time.Hour); got != 30000 {
		t.Errorf("cut at 30s: got %d, want 30000", got)
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
		_, err := ParseStages(tt.in, true)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseStages(%q): got %v, want an error with %q", tt.in, err, tt.want)
		}
	}
	if _, err := ParseStages("10s:-3", false); err == nil {
		t.Error("negative VUs accepted")
	}
	if st, err := ParseStages("10s:60/m", true); err != nil || st[0].Target != 1 {
		t.Errorf("60/m: got %v %v, want 1/s", st, err)
	}
}

func TestRecordedPacer(t *testing.T) {
	offsets := []time.Duration{0, 100 * time.Millisecond, 100 * time.Millisecond, 400 * time.Millisecond}
	once := NewRecordedPacer(offsets, false, 0)
	for k, want := range offsets {
		if due, ok := once.Due(int64(k)); !ok || due != want {
			t.Errorf("Due(%d) = %v, want %v", k, due, want)
		}
	}
	if _, ok := once.Due(4); ok {
		t.Error("a once walk goes past the file")
	}
	loop := NewRecordedPacer(offsets, true, time.Second)
	// span 400ms + mean gap 133ms: the second walk starts at 533ms.
	if due, ok := loop.Due(4); !ok || due != 533333333*time.Nanosecond {
		t.Errorf("Due(4) = %v, want 533.333333ms", due)
	}
	if got := count(loop, time.Hour); got != 8 { // 0 100 100 400, then 533 633 633 933
		t.Errorf("loop for 1s: got %d iterations, want 8", got)
	}
}

func TestVUTarget(t *testing.T) {
	stages, err := ParseStages("10s:10,5@10s,10s:0", false)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		at   time.Duration
		want int
	}{{0, 2}, {5 * time.Second, 6}, {10 * time.Second, 5}, {19 * time.Second, 5}, {25 * time.Second, 3}, {time.Hour, 0}} {
		if got := VUTarget(2, stages, tt.at); got != tt.want {
			t.Errorf("at %v: got %d VUs, want %d", tt.at, got, tt.want)
		}
	}
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// FuzzParseStages: any input either fails or gives stages whose pacer is
// monotonic and ends.
func FuzzParseStages(f *testing.F) {
	for _, s := range []string{"30s:1000", "1000@60s,1200/s@1m", "10s:5/m,2s:0", "1h:1e9", "0.5s:3.25"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		stages, err := ParseStages(s, true)
		if err != nil {
			return
		}
		for _, st := range stages {
			if st.Duration <= 0 || st.Target < 0 || math.IsNaN(st.Target) || math.IsInf(st.Target, 0) {
				t.Fatalf("%q: bad stage %+v", s, st)
			}
		}
		p := NewRatePacer(0, stages, time.Second)
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
