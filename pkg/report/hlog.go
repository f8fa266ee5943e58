package report

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// WriteHlog writes the intervals' latency histograms as an HdrHistogram
// interval log (.hlog), readable by HdrHistogram's log tools: per second,
// the answered requests' latency (untagged) and, in a second that had
// requests fail without an answer, their time to failure, tagged "failed";
// and for a run followed to sinks, each e2e stage's end-to-end latency of
// the events first seen in a second, tagged "e2e.STAGE".
func WriteHlog(w io.Writer, s *Summary) error {
	lw := hdrhistogram.NewHistogramLogWriter(w)
	if err := lw.OutputLogFormatVersion(); err != nil {
		return err
	}
	start := s.Started.UnixMilli()
	if len(s.Intervals) > 0 {
		start = min(start, s.Intervals[0].T*1000)
	}
	lw.SetBaseTime(start)
	if err := lw.OutputStartTime(start); err != nil {
		return err
	}
	if err := lw.OutputComment(fmt.Sprintf("replay: latency from due time in µs of answered requests, one histogram a second; Tag=failed: time to failure of requests without an answer; Tag=e2e.STAGE: end-to-end latency of the events first seen at that stage in the second (%s)", time.UnixMilli(start).UTC().Format(time.RFC3339))); err != nil {
		return err
	}
	if err := lw.OutputLegend(); err != nil {
		return err
	}
	for _, iv := range s.Intervals {
		h, err := DecodeHistogram(iv.Histogram)
		if err != nil {
			return fmt.Errorf("interval %d: %w", iv.T, err)
		}
		h.SetStartTimeMs(iv.T * 1000)
		h.SetEndTimeMs(iv.T*1000 + 1000)
		if err := lw.OutputIntervalHistogram(h); err != nil {
			return err
		}
		if iv.FailedHistogram == "" {
			continue
		}
		fh, err := DecodeHistogram(iv.FailedHistogram)
		if err != nil {
			return fmt.Errorf("interval %d, failed: %w", iv.T, err)
		}
		fh.SetStartTimeMs(iv.T * 1000)
		fh.SetEndTimeMs(iv.T*1000 + 1000)
		fh.SetTag("failed")
		if err := lw.OutputIntervalHistogram(fh); err != nil {
			return err
		}
	}
	return writeE2EHlog(lw, s)
}

// writeE2EHlog writes the per-second end-to-end histograms of each e2e
// stage, tagged "e2e.STAGE" (a tag holds no comma or space, so those
// become "_").
func writeE2EHlog(lw *hdrhistogram.HistogramLogWriter, s *Summary) error {
	if s.E2E == nil {
		return nil
	}
	for _, st := range s.E2E.Stages {
		tag := "e2e." + strings.Map(func(r rune) rune {
			if r == ',' || r == ' ' || r == '=' {
				return '_'
			}
			return r
		}, st.Name)
		for _, iv := range st.Intervals {
			if iv.Histogram == "" {
				continue
			}
			h, err := DecodeHistogram(iv.Histogram)
			if err != nil {
				return fmt.Errorf("e2e stage %s, interval %d: %w", st.Name, iv.T, err)
			}
			h.SetStartTimeMs(iv.T * 1000)
			h.SetEndTimeMs(iv.T*1000 + 1000)
			h.SetTag(tag)
			if err := lw.OutputIntervalHistogram(h); err != nil {
				return err
			}
		}
	}
	return nil
}
