package e2e

import (
	"fmt"
	"sort"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/replay-dev/replay/pkg/hist"
)

// Merge adds up the end-to-end sections of summaries made side by side
// (shards, or runs and standalone sinks): counts by stage name, histograms
// merged exactly (each stage's, each of its seconds', each delta's),
// per-second counts and series (accepted, seen at each stage) added slice
// by slice; the sinks counted up to the earliest SeenUntilMS. es[i] is the section of summary i, nil where it
// has none; errors name the summary from 1 ("merge: summary 2, e2e stage
// done: ..."). It returns nil when no summary has a section.
//
// Loss is known only if every section knew it (a standalone sink's never
// does); else what no sink saw is pending, and the lost of a section that
// did not know loss (a summary written before pending was) counts as
// pending. A standalone sink's section knows nothing of what was accepted:
// the runs' accepted events tell what each stage did not see.
func Merge(es []*Summary) (*Summary, error) {
	out := &Summary{LossKnown: true}
	stages := stageMerges{byName: map[string]*stageMerge{}}
	deltas := newDeltaMerge()
	n := 0
	for i, e := range es {
		if e == nil {
			continue
		}
		n++
		if err := deltas.add(i, e); err != nil {
			return nil, err
		}
		out.addCounts(e)
		if err := out.addSeries(i, e); err != nil {
			return nil, err
		}
		if err := stages.add(i, e); err != nil {
			return nil, err
		}
	}
	if n == 0 {
		return nil, nil
	}
	for _, m := range stages.order {
		// Shards that ran their own sinks counted what they missed; a
		// standalone sink's summary knows nothing of what was
		// accepted, which the runs' accepted events tell.
		unseen := max(m.st.Pending+m.st.Lost, out.Accepted-m.st.Unique)
		m.st.SetUnseen(unseen, out.Accepted, out.LossKnown)
		out.Stages = append(out.Stages, m.finish())
	}
	deltas.finish(out)
	return out, nil
}

// addCounts adds a shard's counts to the merged summary's: sums, the
// longest drain, loss known only when known everywhere, and the earliest
// end of counting.
func (out *Summary) addCounts(e *Summary) {
	out.Sent += e.Sent
	out.Accepted += e.Accepted
	out.Foreign += e.Foreign
	out.DrainS = max(out.DrainS, e.DrainS)
	out.LossKnown = out.LossKnown && e.LossKnown
	if e.SeenUntilMS != 0 && (out.SeenUntilMS == 0 || e.SeenUntilMS < out.SeenUntilMS) {
		out.SeenUntilMS = e.SeenUntilMS // counted everywhere up to the earliest end
	}
}

// addSeries adds the accepted series of shard i (from 0), when it has one.
func (out *Summary) addSeries(i int, e *Summary) error {
	if e.AcceptedSeries == nil {
		return nil
	}
	if out.AcceptedSeries == nil {
		out.AcceptedSeries = &Series{}
	}
	if err := out.AcceptedSeries.AddSeries(e.AcceptedSeries); err != nil {
		return fmt.Errorf("merge: summary %d, e2e accepted_series: %w", i+1, err)
	}
	return nil
}

// stageMerges are the stages being merged, by name and in order of first
// appearance.
type stageMerges struct {
	order  []*stageMerge
	byName map[string]*stageMerge
}

// add merges the stages of shard i (from 0).
func (s *stageMerges) add(i int, e *Summary) error {
	for _, st := range e.Stages {
		m := s.byName[st.Name]
		if m == nil {
			m = &stageMerge{st: Stage{Name: st.Name}, hist: hist.New(), secs: map[int64]*secondMerge{}}
			s.byName[st.Name] = m
			s.order = append(s.order, m)
		}
		if err := m.add(i, st, e.LossKnown); err != nil {
			return err
		}
	}
	return nil
}

// mergeHistogram adds the encoded histogram enc of summary i into h.
func mergeHistogram(h *hdrhistogram.Histogram, enc string, i int, what string) error {
	if err := hist.MergeEncoded(h, enc); err != nil {
		return fmt.Errorf("merge: summary %d, %s: %w", i+1, what, err)
	}
	return nil
}

// stageMerge is one stage of a merge.
type stageMerge struct {
	st   Stage
	hist *hdrhistogram.Histogram
	secs map[int64]*secondMerge
}

// add adds stage st of summary i, whose sinks proved loss or not.
func (m *stageMerge) add(i int, st Stage, lossKnown bool) error {
	if err := mergeHistogram(m.hist, st.Histogram, i, "e2e stage "+st.Name); err != nil {
		return err
	}
	m.st.Received += st.Received
	m.st.Unique += st.Unique
	m.st.Duplicates += st.Duplicates
	m.st.Pending += st.Pending
	if lossKnown {
		m.st.Lost += st.Lost
	} else {
		m.st.Pending += st.Lost
	}
	for _, iv := range st.Intervals {
		if err := mergeSecond(m.secs, iv, i, st.Name); err != nil {
			return err
		}
	}
	if st.SeenSeries != nil {
		if m.st.SeenSeries == nil {
			m.st.SeenSeries = &Series{}
		}
		if err := m.st.SeenSeries.AddSeries(st.SeenSeries); err != nil {
			return fmt.Errorf("merge: summary %d, e2e stage %s, seen_series: %w", i+1, st.Name, err)
		}
	}
	return nil
}

// finish returns the merged stage, its seconds in order.
func (m *stageMerge) finish() Stage {
	m.st.Latency = hist.LatencyOf(m.hist)
	m.st.Histogram = hist.Encode(m.hist)
	for t, sm := range m.secs {
		iv := Interval{T: t, Received: sm.received}
		if sm.hist != nil {
			lat := hist.LatencyOf(sm.hist)
			iv.Latency, iv.Histogram = &lat, hist.Encode(sm.hist)
		}
		m.st.Intervals = append(m.st.Intervals, iv)
	}
	sort.Slice(m.st.Intervals, func(i, j int) bool { return m.st.Intervals[i].T < m.st.Intervals[j].T })
	return m.st
}

// deltaMerge merges the --e2e-deltas of summaries by pair of stages.
type deltaMerge struct {
	order []*Delta
	hists map[[2]string]*hdrhistogram.Histogram
	byKey map[[2]string]*Delta
	peak  int
}

func newDeltaMerge() *deltaMerge {
	return &deltaMerge{hists: map[[2]string]*hdrhistogram.Histogram{}, byKey: map[[2]string]*Delta{}}
}

func (d *deltaMerge) add(i int, e *Summary) error {
	d.peak += e.DeltasPeakInFlight // shards follow their own events
	for _, dl := range e.Deltas {
		k := [2]string{dl.From, dl.To}
		if d.byKey[k] == nil {
			d.byKey[k], d.hists[k] = &Delta{From: dl.From, To: dl.To}, hist.New()
			d.order = append(d.order, d.byKey[k])
		}
		d.byKey[k].Events += dl.Events
		if err := mergeHistogram(d.hists[k], dl.Histogram, i, "e2e delta "+dl.From+"→"+dl.To); err != nil {
			return err
		}
	}
	return nil
}

func (d *deltaMerge) finish(out *Summary) {
	out.DeltasPeakInFlight = d.peak
	for _, dl := range d.order {
		h := d.hists[[2]string{dl.From, dl.To}]
		dl.Latency, dl.Histogram = hist.LatencyOf(h), hist.Encode(h)
		out.Deltas = append(out.Deltas, *dl)
	}
}

// secondMerge is one second of an e2e stage in a merge; hist is nil while
// no summary had a histogram for it (summaries before per-second latency).
type secondMerge struct {
	received int64
	hist     *hdrhistogram.Histogram
}

// mergeSecond adds one second of stage of summary i into secs.
func mergeSecond(secs map[int64]*secondMerge, iv Interval, i int, stage string) error {
	sm := secs[iv.T]
	if sm == nil {
		sm = &secondMerge{}
		secs[iv.T] = sm
	}
	sm.received += iv.Received
	if iv.Histogram == "" {
		return nil
	}
	if sm.hist == nil {
		sm.hist = hist.New()
	}
	return mergeHistogram(sm.hist, iv.Histogram, i, fmt.Sprintf("e2e stage %s, second %d", stage, iv.T))
}
