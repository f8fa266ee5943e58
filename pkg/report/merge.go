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
	"github.com/replay-dev/replay/pkg/hist"
	"github.com/replay-dev/replay/pkg/result"
)

// ReadSummary reads a summary JSON written by WriteJSON (run --out), of
// version 1 or 2. A version 1 summary is brought to version 2 (see
// upgradeV1).
func ReadSummary(r io.Reader) (*Summary, error) {
	var s Summary
	dec := json.NewDecoder(r)
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("read summary: %w", err)
	}
	switch s.Version {
	case SummaryVersion:
	case 1:
		upgradeV1(&s)
	default:
		return nil, fmt.Errorf("read summary: version %d, want 1 or %d", s.Version, SummaryVersion)
	}
	s.ConnectionsByProtocol = connectionsByProtocol(&s)
	return &s, nil
}

// upgradeV1 brings a version 1 summary to version 2, deriving what can be
// derived exactly and saying what cannot:
//   - answered (overall and per endpoint) is the sum of the status counts:
//     version 1 counted answers by status and the rest by error kind;
//   - wall_s is duration_s + wait_s (version 1's last end − start);
//   - rps and throughput are recomputed on them (answered / wall_s,
//     succeeded / wall_s);
//   - its latency histograms mixed the time to failure of the requests
//     without an answer with the answers' latency, and cannot be taken
//     apart: when it had such requests, latency_includes_failed is set, and
//     the text report says so.
func upgradeV1(s *Summary) {
	s.Version = SummaryVersion
	s.Answered = sumCounts(s.Status)
	for i := range s.Endpoints {
		s.Endpoints[i].Answered = sumCounts(s.Endpoints[i].Status)
	}
	s.WallS = s.DurationS + s.WaitS
	s.SetRates()
	if sumCounts(s.Errors) > 0 {
		s.LatencyWithFailed = true
	}
}

// connectionsByProtocol is s's connections by protocol. A summary written
// before HTTP/2 has none: all its connections were HTTP/1.1.
func connectionsByProtocol(s *Summary) map[string]int64 {
	if s.ConnectionsByProtocol != nil {
		return s.ConnectionsByProtocol
	}
	m := map[string]int64{}
	if s.Connections > 0 {
		m[ProtocolName(result.ProtoHTTP1)] = s.Connections
	}
	return m
}

func sumCounts(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// Merge combines the summaries of runs that ran side by side (the shards of
// a distributed run) into one, exactly: counts add, and the latency,
// service-time and per-endpoint histograms merge, so the merged p99 is the
// p99 of one histogram fed every value. The merged run spans from the
// earliest start to the latest end of the summaries that have requests: a
// summary without any (a standalone sink's, "replay sink --out") brings its
// end-to-end section but neither widens the time rates divide by nor
// changes the model or the target rate. Intervals line up on wall-clock
// seconds. Sections kept without histograms (status_latency_ms,
// timings_ms) cannot merge exactly and are left out.
func Merge(ss []*Summary) (*Summary, error) {
	if len(ss) == 0 {
		return nil, errors.New("merge: no summaries")
	}
	spans := make([]bool, len(ss)) // summary i sets the span, model and rate
	first, n := -1, 0
	for i, s := range ss {
		if s.Requests > 0 {
			spans[i] = true
			n++
			if first < 0 {
				first = i
			}
		}
	}
	if n == 0 { // only sinks: they are the run
		for i := range spans {
			spans[i] = true
		}
		first, n = 0, len(ss)
	}
	m := newMerger(ss[first].Model)
	for i, s := range ss {
		if err := m.add(i, s, spans[i]); err != nil {
			return nil, err
		}
	}
	out, err := m.finish(n)
	if out != nil {
		out.MergedFrom = len(ss)
		for _, s := range ss {
			if s.MergedFrom > 1 { // a merge of merges counts what they merged
				out.MergedFrom += s.MergedFrom - 1
			}
		}
	}
	return out, err
}

// merger folds summaries one by one; finish turns what it holds into the
// merged summary. Each section has its own pair of methods.
type merger struct {
	out          *Summary
	spanned      bool // a summary has set the span
	lat, svc     *hdrhistogram.Histogram
	end, lastDue time.Time
	rateSum      float64
	rates        int
	reqRateSum   float64 // the target rates in requests, of the summaries that have one
	reqRates     int
	perWeighted  float64 // requests_per_iteration × iterations, and the iterations
	perWeight    float64
	judged       bool // a summary's steps were judged, at tolerance
	tolerance    float64

	sched        *Schedule
	lagWeighted  float64
	intervals    map[int64]*intervalMerge
	eps          []*endpointMerge
	byName       map[string]*endpointMerge
	cmp          *Compare
	cmpEndpoints map[string]*EndpointMatch
	cmpOrder     []string
	mismatches   map[string]*Mismatch
	e2es         []*e2e.Summary // by summary, nil where it has none
	summaries    []*Summary
}

type endpointMerge struct {
	e    Endpoint
	hist *hdrhistogram.Histogram
}

type intervalMerge struct {
	iv     Interval
	hist   *hdrhistogram.Histogram
	failed *hdrhistogram.Histogram // nil until a summary has one
}

func newMerger(model string) *merger {
	return &merger{
		out: &Summary{Version: SummaryVersion, Model: model, Status: map[string]int64{}, Errors: map[string]int64{},
			ConnectionsByProtocol: map[string]int64{}},
		lat: newHistogram(), svc: newHistogram(),
		intervals: map[int64]*intervalMerge{}, byName: map[string]*endpointMerge{},
		cmpEndpoints: map[string]*EndpointMatch{}, mismatches: map[string]*Mismatch{},
	}
}

// add folds summary i; spans tells whether it sets the span (see Merge).
func (m *merger) add(i int, s *Summary, spans bool) error {
	if spans {
		m.addSpan(s)
	}
	m.summaries = append(m.summaries, s)
	m.addCounts(s)
	m.out.SUTCPUs = max(m.out.SUTCPUs, s.SUTCPUs) // one SUT, whatever the shards
	if v := s.StepsVerdict; v != nil && !m.judged {
		m.judged, m.tolerance = true, v.Tolerance
	}
	m.e2es = append(m.e2es, s.E2E)
	ws, err := mergeWebSocket(m.out.WebSocket, s.WebSocket)
	if err != nil {
		return fmt.Errorf("merge: summary %d, websocket: %w", i+1, err)
	}
	m.out.WebSocket = ws
	m.addSchedule(s)
	m.addCompare(s.Compare)
	if err := m.addIntervals(i, s.Intervals); err != nil {
		return err
	}
	if err := mergeHistogram(m.lat, s.Histogram, i, "histogram"); err != nil {
		return err
	}
	if err := mergeHistogram(m.svc, s.ServiceHistogram, i, "service_histogram"); err != nil {
		return err
	}
	return m.addEndpoints(i, s.Endpoints)
}

// addSpan widens the merged run to cover s: the earliest start, the last
// due time, the last end.
func (m *merger) addSpan(s *Summary) {
	out := m.out
	if !m.spanned || s.Started.Before(out.Started) {
		out.Started = s.Started
	}
	m.spanned = true
	if s.Model != out.Model {
		out.Model = "mixed"
	}
	due := s.Started.Add(seconds(s.DurationS))
	if due.After(m.lastDue) {
		m.lastDue = due
	}
	if e := s.Started.Add(seconds(max(s.WallS, s.DurationS+s.WaitS))); e.After(m.end) {
		m.end = e
	}
	if s.TargetRate != nil {
		m.rateSum += *s.TargetRate
		m.rates++
	}
	if s.TargetRequestRate != nil {
		m.reqRateSum += *s.TargetRequestRate
		m.reqRates++
	}
	if s.RequestsPerIteration > 0 {
		w := float64(max(s.Iterations, 1))
		m.perWeighted += s.RequestsPerIteration * w
		m.perWeight += w
	}
	if out.RateUnit == "" {
		out.RateUnit = s.RateUnit
	}
}

func (m *merger) addCounts(s *Summary) {
	out := m.out
	out.Requests += s.Requests
	out.Succeeded += s.Succeeded
	out.Failed += s.Failed
	out.Answered += s.Answered
	out.LatencyWithFailed = out.LatencyWithFailed || s.LatencyWithFailed
	out.Dropped += s.Dropped
	out.Late += s.Late
	out.Reconnects += s.Reconnects
	out.Backoffs += s.Backoffs
	out.VUsMax += s.VUsMax
	out.BytesIn += s.BytesIn
	out.BytesOut += s.BytesOut
	out.Connections += s.Connections
	out.Downgraded += s.Downgraded
	out.Upgraded += s.Upgraded
	out.Retried += s.Retried
	out.Unsent += s.Unsent
	out.Clamped += s.Clamped
	out.Redirects += s.Redirects
	out.Unsolicited += s.Unsolicited
	out.RedirectLimit += s.RedirectLimit
	out.Iterations += s.Iterations
	out.OutOfOrder += s.OutOfOrder
	addCounts(out.Status, s.Status)
	addCounts(out.Errors, s.Errors)
	out.GRPCStatus = addOptCounts(out.GRPCStatus, s.GRPCStatus)
	addCounts(out.ConnectionsByProtocol, connectionsByProtocol(s))
	out.Transforms = mergeTransforms(out.Transforms, s.Transforms)
	out.Skipped = mergeSkipped(out.Skipped, s.Skipped)
}

// mergeSkipped takes the skipped counts once: they describe the traffic
// file, and every shard read the same one, so they agree and the merge
// keeps them as they are. It takes the largest count of each kind, so a
// merge of runs over different files never adds a file's lines twice
// (and never fails for it); a summary without the section (a sink's, an
// older one) changes nothing.
func mergeSkipped(a, b *Skipped) *Skipped {
	if b == nil {
		return a
	}
	if a == nil {
		a = &Skipped{}
	}
	for k, v := range b.Protocol {
		if a.Protocol == nil {
			a.Protocol = map[string]int{}
		}
		a.Protocol[k] = max(a.Protocol[k], v)
	}
	a.Signature = max(a.Signature, b.Signature)
	a.ResponseOnly = max(a.ResponseOnly, b.ResponseOnly)
	a.DirectionOut = max(a.DirectionOut, b.DirectionOut)
	return a
}

func (m *merger) addSchedule(s *Summary) {
	sc := s.Schedule
	if sc == nil {
		return
	}
	if m.sched == nil {
		m.sched = &Schedule{LateAfterMS: sc.LateAfterMS}
	}
	m.sched.Scheduled += sc.Scheduled
	m.sched.LagMaxMS = max(m.sched.LagMaxMS, sc.LagMaxMS)
	m.sched.LagP50MS = max(m.sched.LagP50MS, sc.LagP50MS)
	m.sched.LagP99MS = max(m.sched.LagP99MS, sc.LagP99MS)
	m.lagWeighted += sc.LagMeanMS * float64(sc.Scheduled)
}

func (m *merger) addCompare(c *Compare) {
	if c == nil {
		return
	}
	if m.cmp == nil {
		m.cmp = &Compare{Body: c.Body}
	}
	m.cmp.Compared += c.Compared
	m.cmp.Matched += c.Matched
	m.cmp.NotRecorded += c.NotRecorded
	m.cmp.GRPCCompared += c.GRPCCompared
	m.cmp.MessagesCompared += c.MessagesCompared
	m.cmp.MessagesMatched += c.MessagesMatched
	for _, e := range c.Endpoints {
		em := m.cmpEndpoints[e.Name]
		if em == nil {
			em = &EndpointMatch{Name: e.Name}
			m.cmpEndpoints[e.Name] = em
			m.cmpOrder = append(m.cmpOrder, e.Name)
		}
		em.Compared += e.Compared
		em.Matched += e.Matched
	}
	for _, mm := range c.Mismatches {
		key := mm.Endpoint + "\x00" + mm.Kind + "\x00" + mm.Recorded + "\x00" + mm.Replayed
		if prev := m.mismatches[key]; prev != nil {
			prev.Count += mm.Count
		} else {
			copied := mm
			m.mismatches[key] = &copied
		}
	}
}

func (m *merger) addIntervals(i int, ivs []Interval) error {
	for _, iv := range ivs {
		im := m.intervals[iv.T]
		if im == nil {
			im = &intervalMerge{iv: Interval{T: iv.T, Status: map[string]int64{}}, hist: newHistogram()}
			m.intervals[iv.T] = im
		}
		im.iv.Requests += iv.Requests
		im.iv.Errors += iv.Errors
		im.iv.VUs += iv.VUs // shards have VUs of their own
		addCounts(im.iv.Status, iv.Status)
		im.iv.GRPCStatus = addOptCounts(im.iv.GRPCStatus, iv.GRPCStatus)
		im.iv.GRPCFailed += iv.GRPCFailed
		if err := mergeHistogram(im.hist, iv.Histogram, i, fmt.Sprintf("interval %d", iv.T)); err != nil {
			return err
		}
		if iv.FailedHistogram == "" && len(iv.Failed) == 0 {
			continue
		}
		if im.failed == nil {
			im.iv.Failed, im.failed = map[string]int64{}, newHistogram()
		}
		addCounts(im.iv.Failed, iv.Failed)
		if err := mergeHistogram(im.failed, iv.FailedHistogram, i, fmt.Sprintf("interval %d, failed", iv.T)); err != nil {
			return err
		}
	}
	return nil
}

func (m *merger) addEndpoints(i int, es []Endpoint) error {
	for _, e := range es {
		em := m.byName[e.Name]
		if em == nil {
			em = &endpointMerge{e: Endpoint{Name: e.Name, Status: map[string]int64{}, Errors: map[string]int64{}}, hist: newHistogram()}
			m.byName[e.Name] = em
			m.eps = append(m.eps, em)
		}
		em.e.Requests += e.Requests
		em.e.Succeeded += e.Succeeded
		em.e.Failed += e.Failed
		em.e.Answered += e.Answered
		addCounts(em.e.Status, e.Status)
		addCounts(em.e.Errors, e.Errors)
		em.e.GRPCStatus = addOptCounts(em.e.GRPCStatus, e.GRPCStatus)
		if err := mergeHistogram(em.hist, e.Histogram, i, "endpoint "+e.Name); err != nil {
			return err
		}
	}
	return nil
}

// finish completes the merged summary of n summaries.
func (m *merger) finish(n int) (*Summary, error) {
	out := m.out
	out.Started = out.Started.UTC()
	out.DurationS = m.lastDue.Sub(out.Started).Seconds()
	out.WaitS = max(m.end.Sub(m.lastDue).Seconds(), 0)
	out.WallS = max(m.end.Sub(out.Started).Seconds(), 0)
	out.SetRates()
	if out.DurationS > 0 {
		out.IterationRate = float64(out.Iterations) / out.DurationS
		out.RequestRate = float64(out.Requests) / out.DurationS
	}
	if m.rates == n {
		out.TargetRate = &m.rateSum
	}
	switch {
	case m.rates == n && m.reqRates == n && m.rateSum > 0:
		out.TargetRequestRate = &m.reqRateSum
		out.RequestsPerIteration = m.reqRateSum / m.rateSum
	case m.perWeight > 0:
		out.RequestsPerIteration = m.perWeighted / m.perWeight
		out.SetTargetRequestRate()
	}
	if sched := m.sched; sched != nil {
		if sched.Scheduled > 0 {
			sched.LagMeanMS = m.lagWeighted / float64(sched.Scheduled)
		}
		out.Schedule = sched
	}
	out.Compare = m.finishCompare()
	e, err := e2e.Merge(m.e2es)
	if err != nil {
		return nil, err
	}
	out.E2E = e
	m.finishIntervals()
	steps, err := mergeSteps(m.summaries)
	if err != nil {
		return nil, err
	}
	out.Steps = steps
	out.SetStepWindows() // from the merged series: exact, as the counts are
	if len(steps) > 0 && m.judged {
		out.JudgeSteps(m.tolerance) // its thresholds are judged again, if asked (Judge)
	}
	out.Latency, out.Service = latencyOf(m.lat), latencyOf(m.svc)
	out.Histogram, out.ServiceHistogram = encodeHistogram(m.lat), encodeHistogram(m.svc)
	out.Endpoints = make([]Endpoint, 0, len(m.eps))
	for _, em := range m.eps {
		em.e.Latency = latencyOf(em.hist)
		em.e.Histogram = encodeHistogram(em.hist)
		out.Endpoints = append(out.Endpoints, em.e)
	}
	return out, nil
}

func (m *merger) finishCompare() *Compare {
	cmp := m.cmp
	if cmp == nil {
		return nil
	}
	cmp.Endpoints = []EndpointMatch{}
	for _, name := range m.cmpOrder {
		cmp.Endpoints = append(cmp.Endpoints, *m.cmpEndpoints[name])
	}
	cmp.Mismatches = []Mismatch{}
	for _, mm := range m.mismatches {
		cmp.Mismatches = append(cmp.Mismatches, *mm)
	}
	cmp.Finish()
	return cmp
}

func (m *merger) finishIntervals() {
	out := m.out
	for _, im := range m.intervals {
		h := im.hist
		im.iv.Latency = IntervalLatencyOf(h)
		im.iv.Histogram = encodeHistogram(h)
		if im.failed != nil {
			im.iv.FailedHistogram = encodeHistogram(im.failed)
		}
		out.Intervals = append(out.Intervals, im.iv)
	}
	sort.Slice(out.Intervals, func(i, j int) bool { return out.Intervals[i].T < out.Intervals[j].T })
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func addCounts(dst, src map[string]int64) {
	for k, n := range src {
		dst[k] += n
	}
}

// addOptCounts adds src to dst, making dst only when src has counts: a
// section the summaries leave out stays out of the merge.
func addOptCounts(dst, src map[string]int64) map[string]int64 {
	if len(src) == 0 {
		return dst
	}
	if dst == nil {
		dst = make(map[string]int64, len(src))
	}
	addCounts(dst, src)
	return dst
}

// mergeHistogram adds the encoded histogram enc (of summary i) into h.
func mergeHistogram(h *hdrhistogram.Histogram, enc string, i int, what string) error {
	if err := hist.MergeEncoded(h, enc); err != nil {
		return fmt.Errorf("merge: summary %d, %s: %w", i+1, what, err)
	}
	return nil
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
				a[i].SkippedGRPC += t.SkippedGRPC
				continue next
			}
		}
		a = append(a, t)
	}
	return a
}
