package hist

import (
	"errors"
	"math"
	"testing"

	"github.com/HdrHistogram/hdrhistogram-go"
)

func TestRecordNanos(t *testing.T) {
	tests := []struct {
		name    string
		ns      int64
		want    int64 // µs recorded
		clamped bool
	}{
		{name: "rounded down", ns: 1_499, want: 1},
		{name: "rounded up", ns: 2_500, want: 3},
		{name: "below 1 µs", ns: 10, want: Lowest},
		{name: "negative (clock step)", ns: -5_000, want: Lowest},
		{name: "an hour", ns: Highest * 1000, want: Highest},
		{name: "past an hour", ns: 2 * Highest * 1000, want: Highest, clamped: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := New()
			if got := RecordNanos(h, tt.ns); got != tt.clamped {
				t.Errorf("clamped: got %v, want %v", got, tt.clamped)
			}
			if got := h.Max(); !h.ValuesAreEquivalent(got, tt.want) {
				t.Errorf("recorded: got %d µs, want %d µs", got, tt.want)
			}
		})
	}
}

func TestEncodeDecode(t *testing.T) {
	h := New()
	for v := int64(1); v <= 1000; v++ {
		RecordNanos(h, v*1_000_000) // 1 ms .. 1 s
	}
	got, err := Decode(Encode(h))
	if err != nil {
		t.Fatal(err)
	}
	if !got.Equals(h) {
		t.Errorf("round trip: got %d values up to %d µs, want %d up to %d", got.TotalCount(), got.Max(), h.TotalCount(), h.Max())
	}
	foreign, err := hdrhistogram.New(1, 1000, 2).Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Decode(string(foreign)); !errors.Is(err, ErrGeometry) {
		t.Errorf("other geometry: got %v, want %v", err, ErrGeometry)
	}
}

func TestLatencyOf(t *testing.T) {
	if got := LatencyOf(New()); got != (Latency{}) {
		t.Errorf("empty: got %+v, want all zero", got)
	}
	h := New()
	for v := int64(1); v <= 1000; v++ {
		_ = h.RecordValue(v * 1000) // 1 ms .. 1 s
	}
	// Exact values, which 3 significant digits keep within 0.1%.
	got, want := LatencyOf(h), Latency{Min: 1, Mean: 500.5, P50: 500, P90: 900, P95: 950, P99: 990, P999: 999, Max: 1000}
	gotF := []float64{got.Min, got.Mean, got.P50, got.P90, got.P95, got.P99, got.P999, got.Max}
	wantF := []float64{want.Min, want.Mean, want.P50, want.P90, want.P95, want.P99, want.P999, want.Max}
	for i := range wantF {
		if math.Abs(gotF[i]-wantF[i]) > wantF[i]/1000 {
			t.Errorf("got %+v, want %+v within 0.1%%", got, want)
			break
		}
	}
}

func TestMergeEncoded(t *testing.T) {
	a, b := New(), New()
	RecordNanos(a, 1e6)
	RecordNanos(b, 2e6)
	RecordNanos(b, 3e6)
	h := New()
	for _, enc := range []string{Encode(a), "", Encode(b)} {
		if err := MergeEncoded(h, enc); err != nil {
			t.Fatalf("%.10q: %v", enc, err)
		}
	}
	if h.TotalCount() != 3 || h.Max() < 2999 || h.Min() > 1001 {
		t.Errorf("merged: %d values from %d to %d µs, want 3 from 1000 to 3000", h.TotalCount(), h.Min(), h.Max())
	}
	foreign, err := hdrhistogram.New(1, 1000, 2).Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		t.Fatal(err)
	}
	if err := MergeEncoded(h, string(foreign)); !errors.Is(err, ErrGeometry) {
		t.Errorf("another geometry: got %v, want %v", err, ErrGeometry)
	}
	if err := MergeEncoded(h, "HISTFAAAAnot"); err == nil || h.TotalCount() != 3 {
		t.Errorf("a corrupt histogram: %v, %d values; want an error and nothing added", err, h.TotalCount())
	}
}
