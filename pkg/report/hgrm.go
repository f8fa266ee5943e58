package report

import "io"

// WriteHgrm writes the latency distribution (from due time) in
// HdrHistogram's percentile format (.hgrm), in milliseconds, readable by its
// plotter.
func WriteHgrm(w io.Writer, s *Summary) error {
	h, err := DecodeHistogram(s.Histogram)
	if err != nil {
		return err
	}
	_, err = h.PercentilesPrint(w, 5, 1000) // µs -> ms
	return err
}
