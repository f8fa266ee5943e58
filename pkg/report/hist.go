package report

import (
	"errors"
	"fmt"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// The geometry of every histogram in replay (DESIGN.md, Histograms): values
// in microseconds from 1 µs to one hour, 3 significant digits. One geometry
// everywhere is what lets shard summaries merge exactly.
const (
	HistLowest  = 1             // µs
	HistHighest = 3_600_000_000 // µs: one hour
	HistSigFigs = 3
)

// ErrGeometry is returned (wrapped) by DecodeHistogram for a histogram whose
// geometry is not replay's, which could not be merged exactly.
var ErrGeometry = errors.New("histogram geometry is not 1..3600000000 µs with 3 significant digits")

// newHistogram returns an empty histogram with replay's geometry. Each one
// holds about 190 KB of counts.
func newHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(HistLowest, HistHighest, HistSigFigs)
}

// recordNanos records a duration given in nanoseconds into h, rounded to
// the microsecond. A value below 1 µs (including a negative one from a
// clock step) is recorded as 1 µs; one above an hour is recorded as an hour
// and reported as clamped.
func recordNanos(h *hdrhistogram.Histogram, ns int64) (clamped bool) {
	us := (ns + 500) / 1000
	switch {
	case us < HistLowest:
		us = HistLowest
	case us > HistHighest:
		us = HistHighest
		clamped = true
	}
	// Cannot fail: us is within the geometry.
	_ = h.RecordValue(us)
	return clamped
}

// encodeHistogram returns h in the HdrHistogram V2 compressed encoding, as
// base64 text starting "HISTF".
func encodeHistogram(h *hdrhistogram.Histogram) string {
	b, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		// Encode writes only to memory; it fails only for an unknown
		// encoding version, which would be a bug here.
		panic("report: encode histogram: " + err.Error())
	}
	return string(b) // Encode already returns base64 text
}

// DecodeHistogram reads back a histogram written in a Summary (the
// "histogram" and "service_histogram" fields): HdrHistogram V2 compressed,
// base64, as in (one value of 1 ms)
//
//	HISTFAAAACZ42pJpmSzMwMDAzAABMJoRRFybvITB/gNE4Dw/EyAAAP//YWgFag==
//
// It fails, wrapping ErrGeometry, for a histogram of another geometry.
func DecodeHistogram(s string) (*hdrhistogram.Histogram, error) {
	h, err := hdrhistogram.Decode([]byte(s))
	if err != nil {
		return nil, fmt.Errorf("decode histogram: %w", err)
	}
	if h.LowestTrackableValue() != HistLowest || h.HighestTrackableValue() != HistHighest || h.SignificantFigures() != HistSigFigs {
		return nil, fmt.Errorf("decode histogram: got %d..%d with %d digits: %w",
			h.LowestTrackableValue(), h.HighestTrackableValue(), h.SignificantFigures(), ErrGeometry)
	}
	return h, nil
}
