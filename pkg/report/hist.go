package report

import (
	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/replay-dev/replay/pkg/hist"
)

// The geometry of every histogram in replay (docs/design.md, Histograms): values
// in microseconds from 1 µs to one hour, 3 significant digits. One geometry
// everywhere is what lets shard summaries merge exactly. Package hist owns
// it (the end-to-end tracker builds its histograms there too); these are
// its names here.
const (
	HistLowest  = hist.Lowest  // µs
	HistHighest = hist.Highest // µs: one hour
	HistSigFigs = hist.SigFigs
)

// ErrGeometry is returned (wrapped) by DecodeHistogram for a histogram whose
// geometry is not replay's, which could not be merged exactly. It is
// hist.ErrGeometry.
var ErrGeometry = hist.ErrGeometry

// newHistogram returns an empty histogram with replay's geometry. Each one
// holds about 190 KB of counts.
func newHistogram() *hdrhistogram.Histogram { return hist.New() }

// encodeHistogram returns h in the HdrHistogram V2 compressed encoding, as
// base64 text starting "HISTF".
func encodeHistogram(h *hdrhistogram.Histogram) string { return hist.Encode(h) }

// DecodeHistogram reads back a histogram written in a Summary (the
// "histogram" and "service_histogram" fields): HdrHistogram V2 compressed,
// base64, as in (one value of 1 ms)
//
//	HISTFAAAACZ42pJpmSzMwMDAzAABMJoRRFybvITB/gNE4Dw/EyAAAP//YWgFag==
//
// It fails, wrapping ErrGeometry, for a histogram of another geometry.
func DecodeHistogram(s string) (*hdrhistogram.Histogram, error) { return hist.Decode(s) }
