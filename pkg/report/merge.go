package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/replay-dev/replay/pkg/e2e"
)

// ReadSummary reads a summary JSON written by WriteJSON (run --out).
func ReadSummary(r io.Reader) (*Summary, error) {
	var s Summary
	dec := json.NewDecoder(r)
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("read summary: %w", err)
	}
	if s.Version != SummaryVersion {
		return nil, fmt.Errorf("read summary: version %d, want %d", s.Version, SummaryVersion)
	}
	return &s, nil
}

// Merge combines the summaries of runs that ran side by side (the shards of
// a distributed run) into one, exactly: counts add, and the latency,
// service-time and per-endpoint histograms merge, so the merged p99 is the
// p99 of one histogram fed every value. The merged run spans from the
// earliest start to the latest end; intervals line up on wall-clock
// seconds. Sections kept without histograms
// (status_latency_ms, timings_ms) cannot merge exactly and are left out.
func Merge(ss []*Summary) (*Summary, error) {
	if len(ss) == 0 {
		return nil, errors.New("merge: no summaries")
	}
	out := &Summary{Version: SummaryVersion, Model: ss[0].Model, Status: map[string]int64{}, Errors: map[string]int64{}}
	lat, svc := newHistogram(), newHistogram()
	type epMerge struct {
		e    Endpoint
		hist *hdrhistogram.Histogram
	}
	var eps []*epMerge
	byName := map[string]*epMerge{}
	var end, lastDue time.Time
	var rateSum float64
	rates := 0
	var sched *Schedule
	var lagWeighted float64
	type ivMerge struct {
		iv   Interval
		hist *hdrhistogram.Histogram
	}
	intervals := map[int64]*ivMerge{}
	var cmp *Compare
	cmpEndpoints := map[string]*EndpointMatch{}
	var cmpOrder []string
	mismatches := map[string]*Mismatch{}
	var e2es []indexedE2E
	for i, s := range ss {
		if i == 0 || s.Started.Before(out.Started) {
			out.Started = s.Started
		}
		if s.Model != out.Model {
			out.Model = "mixed"
		}
		due := s.Started.Add(seconds(s.DurationS))
		if due.After(lastDue) {
			lastDue = due
		}
		if e := due.Add(seconds(s.WaitS)); e.After(end) {
			end = e
		}
		out.Requests += s.Requests
		out.Succeeded += s.Succeeded
		out.Failed += s.Failed
		out.Dropped += s.Dropped
		out.Late += s.Late
		out.Reconnects += s.Reconnects
		out.VUsMax += s.VUsMax
		out.BytesIn += s.BytesIn
		out.BytesOut += s.BytesOut
		out.Connections += s.Connections
		out.Downgraded += s.Downgraded
		out.Unsent += s.Unsent
		out.Clamped += s.Clamped
		out.Redirects += s.Redirects
		out.Iterations += s.Iterations
		out.OutOfOrder += s.OutOfOrder
		addCounts(out.Status, s.Status)
		addCounts(out.Errors, s.Errors)
		out.Transforms = mergeTransforms(out.Transforms, s.Transforms)
		if s.E2E != nil {
			e2es = append(e2es, indexedE2E{i, s.E2E})
		}
		if s.TargetRate != nil {
			rateSum += *s.TargetRate
			rates++
		}
		if sc := s.Schedule; sc != nil {
			if sched == nil {
				sched = &Schedule{LateAfterMS: sc.LateAfterMS}
			}
			sched.Scheduled += sc.Scheduled
			sched.LagMaxMS = max(sched.LagMaxMS, sc.LagMaxMS)
			lagWeighted += sc.LagMeanMS * float64(sc.Scheduled)
		}
		if c := s.Compare; c != nil {
			if cmp == nil {
				cmp = &Compare{Body: c.Body}
			}
			cmp.Compared += c.Compared
			cmp.Matched += c.Matched
			cmp.NotRecorded += c.NotRecorded
			for _, e := range c.Endpoints {
				m := cmpEndpoints[e.Name]
				if m == nil {
					m = &EndpointMatch{Name: e.Name}
					cmpEndpoints[e.Name] = m
					cmpOrder = append(cmpOrder, e.Name)
				}
				m.Compared += e.Compared
				m.Matched += e.Matched
			}
			for _, mm := range c.Mismatches {
				key := mm.Endpoint + "\x00" + mm.Kind + "\x00" + mm.Recorded + "\x00" + mm.Replayed
				if prev := mismatches[key]; prev != nil {
					prev.Count += mm.Count
				} else {
					copied := mm
					mismatches[key] = &copied
				}
			}
		}
		for _, iv := range s.Intervals {
			m := intervals[iv.T]
			if m == nil {
				m = &ivMerge{iv: Interval{T: iv.T, Status: map[string]int64{}}, hist: newHistogram()}
				intervals[iv.T] = m
			}
			m.iv.Requests += iv.Requests
			m.iv.Errors += iv.Errors
			m.iv.VUs += iv.VUs // shards have VUs of their own
			addCounts(m.iv.Status, iv.Status)
			if err := mergeHistogram(m.hist, iv.Histogram, i, fmt.Sprintf("interval %d", iv.T)); err != nil {
				return nil, err
			}
		}
		if err := mergeHistogram(lat, s.Histogram, i, "histogram"); err != nil {
			return nil, err
		}
		if err := mergeHistogram(svc, s.ServiceHistogram, i, "service_histogram"); err != nil {
			return nil, err
		}
		for _, e := range s.Endpoints {
			m := byName[e.Name]
			if m == nil {
				m = &epMerge{e: Endpoint{Name: e.Name, Status: map[string]int64{}, Errors: map[string]int64{}}, hist: newHistogram()}
				byName[e.Name] = m
				eps = append(eps, m)
			}
			m.e.Requests += e.Requests
			m.e.Succeeded += e.Succeeded
			m.e.Failed += e.Failed
			addCounts(m.e.Status, e.Status)
			addCounts(m.e.Errors, e.Errors)
			if err := mergeHistogram(m.hist, e.Histogram, i, "endpoint "+e.Name); err != nil {
				return nil, err
			}
		}
	}
	out.Started = out.Started.UTC()
	out.DurationS = lastDue.Sub(out.Started).Seconds()
	out.WaitS = max(end.Sub(lastDue).Seconds(), 0)
	if out.DurationS > 0 {
		out.RPS = float64(out.Requests) / out.DurationS
		out.IterationRate = float64(out.Iterations) / out.DurationS
	}
	if total := out.DurationS + out.WaitS; total > 0 {
		out.Throughput = float64(out.Succeeded) / total
	}
	if rates == len(ss) {
		out.TargetRate = &rateSum
	}
	if sched != nil {
		if sched.Scheduled > 0 {
			sched.LagMeanMS = lagWeighted / float64(sched.Scheduled)
		}
		out.Schedule = sched
	}
	if cmp != nil {
		cmp.MatchPct = pct(cmp.Matched, cmp.Compared)
		cmp.Endpoints = []EndpointMatch{}
		for _, name := range cmpOrder {
			e := cmpEndpoints[name]
			e.MatchPct = pct(e.Matched, e.Compared)
			cmp.Endpoints = append(cmp.Endpoints, *e)
		}
		cmp.Mismatches = []Mismatch{}
		for _, m := range mismatches {
			cmp.Mismatches = append(cmp.Mismatches, *m)
		}
		cmp.Mismatches = sortMismatches(cmp.Mismatches)
		out.Compare = cmp
	}
	if len(e2es) > 0 {
		e, err := mergeE2E(e2es)
		if err != nil {
			return nil, err
		}
		out.E2E = e
	}
	for _, m := range intervals {
		m.iv.Latency = IntervalLatency{P50: msOf(m.hist.ValueAtQuantile(50)), P90: msOf(m.hist.ValueAtQuantile(90)),
			P99: msOf(m.hist.ValueAtQuantile(99)), Max: msOf(m.hist.Max())}
		m.iv.Histogram = encodeHistogram(m.hist)
		out.Intervals = append(out.Intervals, m.iv)
	}
	sort.Slice(out.Intervals, func(i, j int) bool { return out.Intervals[i].T < out.Intervals[j].T })
	out.Latency, out.Service = latencyOf(lat), latencyOf(svc)
	out.Histogram, out.ServiceHistogram = encodeHistogram(lat), encodeHistogram(svc)
	out.Endpoints = make([]Endpoint, 0, len(eps))
	for _, m := range eps {
		m.e.Latency = latencyOf(m.hist)
		m.e.Histogram = encodeHistogram(m.hist)
		out.Endpoints = append(out.Endpoints, m.e)
	}
	return out, nil
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func addCounts(dst, src map[string]int64) {
	for k, n := range src {
		dst[k] += n
	}
}

// mergeHistogram adds the encoded histogram enc (of summary i) into h.
func mergeHistogram(h *hdrhistogram.Histogram, enc string, i int, what string) error {
	if enc == "" {
		return nil
	}
	src, err := DecodeHistogram(enc)
	if err != nil {
		return fmt.Errorf("merge: summary %d, %s: %w", i+1, what, err)
	}
	if dropped := h.Merge(src); dropped != 0 {
		return fmt.Errorf("merge: summary %d, %s: %d values out of range", i+1, what, dropped)
	}
	return nil
}

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

// mergeTransforms adds the counts of b to a, by name, keeping a's order
// and adding b's new names after.
func mergeTransforms(a, b []Transform) []Transform {
next:
	for _, t := range b {
		for i := range a {
			if a[i].Name == t.Name {
				a[i].Changed += t.Changed
				a[i].Failed += t.Failed
				continue next
			}
		}
		a = append(a, t)
	}
	return a
}

// indexedE2E is the end-to-end section of summary i of a merge.
type indexedE2E struct {
	i int
	e *e2e.Summary
}

// mergeE2E adds up the end-to-end sections of shards (or of runs and
// standalone sinks): counts by stage name, histograms merged exactly,
// per-second counts added.
func mergeE2E(es []indexedE2E) (*e2e.Summary, error) {
	out := &e2e.Summary{}
	type stageMerge struct {
		st   e2e.Stage
		hist *hdrhistogram.Histogram
		secs map[int64]int64
	}
	var order []*stageMerge
	byName := map[string]*stageMerge{}
	for _, ie := range es {
		e := ie.e
		out.Sent += e.Sent
		out.Accepted += e.Accepted
		out.Foreign += e.Foreign
		out.DrainS = max(out.DrainS, e.DrainS)
		for _, st := range e.Stages {
			m := byName[st.Name]
			if m == nil {
				m = &stageMerge{st: e2e.Stage{Name: st.Name}, hist: newHistogram(), secs: map[int64]int64{}}
				byName[st.Name] = m
				order = append(order, m)
			}
			if err := mergeHistogram(m.hist, st.Histogram, ie.i, "e2e stage "+st.Name); err != nil {
				return nil, err
			}
			m.st.Received += st.Received
			m.st.Unique += st.Unique
			m.st.Duplicates += st.Duplicates
			m.st.Lost += st.Lost
			for _, iv := range st.Intervals {
				m.secs[iv.T] += iv.Received
			}
		}
	}
	for _, m := range order {
		// Shards that ran their own sinks counted their losses; a
		// standalone sink's summary knows none, which the runs'
		// accepted events tell.
		m.st.Lost = max(m.st.Lost, out.Accepted-m.st.Unique)
		m.st.LostPct = pct(m.st.Lost, out.Accepted)
		m.st.Latency = latencyOf(m.hist)
		m.st.Histogram = encodeHistogram(m.hist)
		for t, n := range m.secs {
			m.st.Intervals = append(m.st.Intervals, e2e.Interval{T: t, Received: n})
		}
		sort.Slice(m.st.Intervals, func(i, j int) bool { return m.st.Intervals[i].T < m.st.Intervals[j].T })
		out.Stages = append(out.Stages, m.st)
	}
	return out, nil
}
