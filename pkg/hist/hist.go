// Package hist owns replay's one histogram geometry (docs/design.md,
// Histograms) and what is read out of such a histogram: recording a
// duration, the HdrHistogram V2 text encoding the summaries carry, and
// Latency, the distribution in milliseconds that every latency section of
// a summary shows.
//
// Values are microseconds from 1 µs to one hour, with 3 significant
// digits, everywhere: one geometry is what lets any two histograms (of
// shards, stages, endpoints) merge exactly. Both report and e2e build
// their histograms here, so neither can drift from the other.
package hist

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// The geometry of every histogram in replay.
const (
	Lowest  = 1             // µs
	Highest = 3_600_000_000 // µs: one hour
	SigFigs = 3
)

// ErrGeometry is returned (wrapped) by Decode for a histogram whose
// geometry is not replay's, which could not be merged exactly.
var ErrGeometry = errors.New("histogram geometry is not 1..3600000000 µs with 3 significant digits")

// New returns an empty histogram with replay's geometry. Each one holds
// about 190 KB of counts.
func New() *hdrhistogram.Histogram {
	return hdrhistogram.New(Lowest, Highest, SigFigs)
}

// RecordNanos records a duration given in nanoseconds into h, rounded to
// the microsecond. A value below 1 µs (including a negative one from a
// clock step) is recorded as 1 µs; one above an hour is recorded as an hour
// and reported as clamped.
func RecordNanos(h *hdrhistogram.Histogram, ns int64) (clamped bool) {
	us := (ns + 500) / 1000
	switch {
	case us < Lowest:
		us = Lowest
	case us > Highest:
		us = Highest
		clamped = true
	}
	// Cannot fail: us is within the geometry.
	_ = h.RecordValue(us)
	return clamped
}

// Encode returns h in the HdrHistogram V2 compressed encoding, as base64
// text starting "HISTF".
func Encode(h *hdrhistogram.Histogram) string {
	b, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		// Encode writes only to memory; it fails only for an unknown
		// encoding version, which would be a bug here.
		panic("hist: encode histogram: " + err.Error())
	}
	return string(b) // Encode already returns base64 text
}

// Decode reads back a histogram written by Encode: HdrHistogram V2
// compressed, base64, as in (one value of 1 ms)
//
//	HISTFAAAACZ42pJpmSzMwMDAzAABMJoRRFybvITB/gNE4Dw/EyAAAP//YWgFag==
//
// It fails, wrapping ErrGeometry, for a histogram of another geometry.
func Decode(s string) (*hdrhistogram.Histogram, error) {
	h, err := hdrhistogram.Decode([]byte(s))
	if err != nil {
		return nil, fmt.Errorf("decode histogram: %w", err)
	}
	if h.LowestTrackableValue() != Lowest || h.HighestTrackableValue() != Highest || h.SignificantFigures() != SigFigs {
		return nil, fmt.Errorf("decode histogram: got %d..%d with %d digits: %w",
			h.LowestTrackableValue(), h.HighestTrackableValue(), h.SignificantFigures(), ErrGeometry)
	}
	return h, nil
}

// Latency is a latency distribution in milliseconds, as in
//
//	{"min": 0.2, "mean": 1.1, "p50": 0.9, "p90": 1.8, "p95": 2.3, "p99": 4.9, "p999": 12.0, "max": 40.1}
//
// All zero when nothing was recorded.
type Latency struct {
	Min  float64 `json:"min"`
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
	Max  float64 `json:"max"`
}

// quantiles are the percentiles of a Latency after min and mean.
var quantiles = []float64{50, 90, 95, 99, 99.9}

// LatencyOf summarizes a histogram of µs in milliseconds.
func LatencyOf(h *hdrhistogram.Histogram) Latency {
	if h.TotalCount() == 0 {
		return Latency{}
	}
	q := h.ValueAtPercentilesSlice(quantiles)
	return Latency{
		Min:  msOf(h.Min()),
		Mean: math.Round(h.Mean()) / 1000,
		P50:  msOf(q[0]),
		P90:  msOf(q[1]),
		P95:  msOf(q[2]),
		P99:  msOf(q[3]),
		P999: msOf(q[4]),
		Max:  msOf(h.Max()),
	}
}

// msOf converts µs to ms.
func msOf(us int64) float64 { return float64(us) / 1000 }

// Pool keeps histograms for reuse, so that a per-second view costs about
// as many histograms as seconds are open at once, not one a second. Not
// safe for concurrent use.
type Pool struct{ free []*hdrhistogram.Histogram }

// Get returns an empty histogram of the one geometry.
func (p *Pool) Get() *hdrhistogram.Histogram {
	if n := len(p.free); n > 0 {
		h := p.free[n-1]
		p.free = p.free[:n-1]
		return h
	}
	return New()
}

// Put resets h and keeps it for a later Get.
func (p *Pool) Put(h *hdrhistogram.Histogram) {
	h.Reset()
	p.free = append(p.free, h)
}

// SecondsUpTo returns the seconds of open (Unix second → its state) up to
// and including upTo, in order: those a per-second view can close.
func SecondsUpTo[V any](open map[int64]V, upTo int64) []int64 {
	var secs []int64
	for s := range open {
		if s <= upTo {
			secs = append(secs, s)
		}
	}
	slices.Sort(secs)
	return secs
}

// MergeEncoded adds the histogram enc, as Encode writes it, into h: what a
// merge of summaries does with each of theirs. An empty enc (a summary
// written before the histogram was kept) adds nothing. It fails for enc
// that does not decode (wrapping ErrGeometry for another geometry) and for
// values h could not hold.
func MergeEncoded(h *hdrhistogram.Histogram, enc string) error {
	if enc == "" {
		return nil
	}
	src, err := Decode(enc)
	if err != nil {
		return err
	}
	if dropped := h.Merge(src); dropped != 0 {
		return fmt.Errorf("%d values out of range", dropped)
	}
	return nil
}
