package e2e

import (
	"context"
	"math/bits"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/replay-dev/replay/pkg/hist"
	"github.com/replay-dev/replay/pkg/schedule"
)

// maxStages bounds the stages a Tracker keeps; later ones are counted
// under "other".
const maxStages = 32

// Tracker keeps the score of events followed out of an event-driven SUT: the
// requests the API accepted (by VU and sequence number), the events sinks
// saw at each stage, the end-to-end latency per stage (seen − sent) in HDR
// histograms of replay's geometry, duplicates, loss, and events received
// per second.
//
// Memory: one bit per stamped request per VU for what was accepted, one
// bit per event per stage for what was seen, a histogram (about 190 KB)
// and a count per second per stage. Nothing else is kept per event.
type Tracker struct {
	nonce uint32 // 0: any run's events (a standalone sink)
	start time.Time
	now   func() time.Time
	// slots maps (nonce, shard, VU) to a slot of the seen sets, for a
	// standalone sink that sees many runs and shards.
	slots map[[3]uint64]int

	// accepted[vu] is written by that VU's goroutine only, read once the
	// run is over; so is marks[vu], where the VU's accepted events fall in
	// the steps (SetSteps).
	accepted []bitset
	marks    []stepMarks
	sent     []int64 // per VU: requests stamped
	// acceptedAt[vu] counts the VU's accepted events by the slice of
	// their send time; written by that VU's goroutine only.
	acceptedAt []Series
	// provesLoss: the sinks can prove an event will never come, so what
	// is unseen at the end of the drain is lost, not pending. Set before
	// the run (ProveLoss).
	provesLoss bool

	mu     sync.Mutex // guards what follows
	stages []*stageScore
	// drained is when Drain ended (Unix ms; 0 before): the series count
	// no event seen after it, so that they are exact up to it.
	drained  int64
	foreign  int64 // IDs seen that this run did not send
	lastSeen time.Time
	// fallback is the stage listed when no event was seen at all (an
	// HTTP sink's default stage): Expect.
	fallback string

	// Steps (SetSteps): the run's start, Unix ns, the schedule that says
	// which step an offset from it falls in, and how many steps it has.
	stepBase int64
	plan     *schedule.Schedule
	nSteps   int

	// Deltas (Deltas): the events in flight, the histograms by pair of
	// stage indexes in the order first met, the window.
	deltaWindow  time.Duration
	inFlight     map[[2]uint64]sighting
	deltas       map[[2]int]*hdrhistogram.Histogram
	deltaOrder   [][2]int
	swept        int64 // Unix ns of the last sweep of inFlight
	peakInFlight int
}

// stageScore is what a Tracker keeps of one stage.
type stageScore struct {
	name   string
	seen   []bitset // per VU
	unique int64
	dups   int64 // deliveries of an event seen already (deliveries: unique + dups)
	hist   *hdrhistogram.Histogram
	// Seconds: the closed ones, compressed, and the open ones.
	secs               []Interval
	open               map[int64]*openSecond
	closedUpTo, newest int64
	spare              hist.Pool
	// steps[i] is the latency of the events sent in step i (SetSteps).
	steps []*hdrhistogram.Histogram
	// seenAt counts the distinct events by the slice they were first
	// seen in.
	seenAt Series
}

// bitset is a growable set of sequence numbers.
type bitset struct {
	words []uint64
	n     int64
}

// set adds i and reports whether it was new.
func (b *bitset) set(i uint64) bool {
	w := int(i / 64)
	if w >= len(b.words) {
		b.words = append(b.words, make([]uint64, max(w+1-len(b.words), len(b.words)))...)
	}
	m := uint64(1) << (i % 64)
	if b.words[w]&m != 0 {
		return false
	}
	b.words[w] |= m
	b.n++
	return true
}

// bothIn counts the members of a in [from, to) that are in b too.
func bothIn(a, b *bitset, from, to uint64) int64 {
	n := 0
	for i := range min(len(a.words), len(b.words)) {
		w := a.words[i] & b.words[i]
		lo := uint64(i) * 64
		if w == 0 || lo+64 <= from || lo >= to {
			continue
		}
		if from > lo {
			w &^= (uint64(1) << (from - lo)) - 1
		}
		if to < lo+64 {
			w &= (uint64(1) << (to - lo)) - 1
		}
		n += bits.OnesCount64(w)
	}
	return int64(n)
}

// both counts the members of a that are in b too.
func both(a, b *bitset) int64 {
	n := 0
	for i := range min(len(a.words), len(b.words)) {
		n += bits.OnesCount64(a.words[i] & b.words[i])
	}
	return int64(n)
}

// NewTracker returns a tracker for a run with this nonce and at most vus VUs,
// started at start. now is the clock (time.Now when nil).
func NewTracker(nonce uint32, vus int, start time.Time, now func() time.Time) *Tracker {
	if now == nil {
		now = time.Now
	}
	return &Tracker{nonce: nonce, start: start, now: now, accepted: make([]bitset, vus), marks: make([]stepMarks, vus), sent: make([]int64, vus),
		acceptedAt: make([]Series, vus)}
}

// Expect names the stages the run's sinks will see before any event
// arrives (those named on the command line: a Redis list or stream, a
// NATS subject, their stage=), so that a stage no event reaches is listed
// with every accepted event pending, not left out; fallback (an HTTP
// sink's default stage, "" for none) is listed only when no event was
// seen at any stage. Call it before the run.
func (t *Tracker) Expect(named []string, fallback string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, name := range named {
		t.stage(name)
	}
	t.fallback = fallback
}

// reported are the stages a summary lists: those seen or named, or the
// fallback when there are none; t.mu is held.
func (t *Tracker) reported() []*stageScore {
	if len(t.stages) == 0 && t.fallback != "" {
		return []*stageScore{{name: t.fallback, hist: hist.New()}}
	}
	return t.stages
}

// NewSinkTracker returns a tracker for a standalone sink (replay sink): it
// counts the events of any run and shard, and knows nothing of what was
// accepted (a merge with the runs' summaries works loss out). It has no
// clock: only Drain reads one, and a standalone sink does not drain.
func NewSinkTracker(start time.Time) *Tracker {
	t := NewTracker(0, 0, start, nil)
	t.slots = map[[3]uint64]int{}
	return t
}

// ProveLoss says whether the run's sinks can prove that an event will
// never come (see Prover): then an accepted event unseen at the end of the
// drain is lost; otherwise it is pending. Call it before the run.
func (t *Tracker) ProveLoss(proves bool) { t.provesLoss = proves }

// Prover is what a sink says of loss: ProvesLoss reports whether it can
// prove that an event it has not delivered never will be (a queue that
// acknowledges every event it drops could). A Redis list or stream, a NATS
// subject or an HTTP endpoint cannot: an event not there yet may be
// delayed, not lost.
type Prover interface {
	ProvesLoss() bool
}

// Nonce is the run's nonce, for stamping IDs.
func (t *Tracker) Nonce() uint32 { return t.nonce }

// Stamped counts a stamped request of VU vu. Called on that VU's goroutine.
func (t *Tracker) Stamped(vu int) {
	if vu >= 0 && vu < len(t.sent) {
		t.sent[vu]++
	}
}

// Accepted records that the API answered the stamped request seq of VU vu,
// sent at Unix µs sent, below 400, so its event is expected downstream.
// Called on that VU's goroutine; it allocates only when the VU's set or
// its series of accepted events (by the slice of time sent) grows, and
// at the VU's first event of a step.
func (t *Tracker) Accepted(vu int, seq uint64, sent int64) {
	if vu < 0 || vu >= len(t.accepted) || !t.accepted[vu].set(seq) {
		return
	}
	t.acceptedAt[vu].Add(sent / 1000)
	if t.nSteps > 0 {
		t.marks[vu].add(t.stepOf(sent), seq)
	}
}

// A Tracker is what sinks report to.
var _ Receiver = (*Tracker)(nil)

// Seen records an event seen at a stage (the Receiver interface).
func (t *Tracker) Seen(idText []byte, stage string, at time.Time) {
	id, ok := ParseID(idText)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lastSeen = at
	slot := id.VU
	switch {
	case ok && t.slots != nil:
		key := [3]uint64{uint64(id.Nonce), uint64(id.Shard), uint64(id.VU)}
		var known bool
		if slot, known = t.slots[key]; !known {
			slot = len(t.slots)
			t.slots[key] = slot
		}
	case !ok || id.Nonce != t.nonce || id.VU >= len(t.accepted):
		t.foreign++
		return
	}
	st, idx := t.stage(stage)
	for slot >= len(st.seen) {
		st.seen = append(st.seen, bitset{})
	}
	if !st.seen[slot].set(id.Seq) {
		st.dups++
		return
	}
	st.unique++
	ns := at.Sub(time.UnixMicro(id.Sent)).Nanoseconds()
	hist.RecordNanos(st.hist, ns)
	st.recordSecond(at.Unix(), ns)
	if ms := at.UnixMilli(); t.drained == 0 || ms < t.drained {
		st.seenAt.Add(ms)
	}
	t.recordStep(st, id.Sent, ns)
	t.recordDelta(slot, id.Seq, idx, at.UnixNano())
}

// stage returns the named stage and its index, creating it; t.mu is held.
func (t *Tracker) stage(name string) (*stageScore, int) {
	for i, st := range t.stages {
		if st.name == name {
			return st, i
		}
	}
	if len(t.stages) >= maxStages-1 && name != "other" { // the last place is other's
		return t.stage("other")
	}
	st := &stageScore{name: name, seen: make([]bitset, len(t.accepted)), hist: hist.New()}
	t.stages = append(t.stages, st)
	return st, len(t.stages) - 1
}

// complete reports whether every accepted event was seen at every stage
// (at least one, unless nothing was accepted); t.mu is held.
func (t *Tracker) complete() bool {
	expected := false
	for vu := range t.accepted {
		expected = expected || t.accepted[vu].n > 0
	}
	if !expected {
		return true // nothing accepted: nothing to wait for
	}
	if len(t.stages) == 0 {
		return false
	}
	for _, st := range t.stages {
		for vu := range t.accepted {
			n := t.accepted[vu].n
			if n > 0 && (vu >= len(st.seen) || both(&t.accepted[vu], &st.seen[vu]) != n) {
				return false
			}
		}
	}
	return true
}

// Drain waits, once the run has stopped sending (at lastSend), for the
// events still on their way: until every accepted event was seen at every
// stage, or no event arrived for 3 × idle, or drain passed since lastSend
// (as the Knative receiver does). It returns how long it waited. sleep
// waits (time.Sleep in a run; tests step a fake clock).
func (t *Tracker) Drain(ctx context.Context, lastSend time.Time, drain, idle time.Duration, sleep func(time.Duration)) time.Duration {
	began := t.now()
	for ctx.Err() == nil {
		now := t.now()
		t.mu.Lock()
		done := t.complete()
		quiet := t.lastSeen
		t.mu.Unlock()
		if quiet.Before(lastSend) {
			quiet = lastSend
		}
		if done || now.Sub(quiet) >= 3*idle || now.Sub(lastSend) >= drain {
			break
		}
		sleep(min(idle/4, 50*time.Millisecond))
	}
	end := t.now()
	t.mu.Lock()
	t.drained = end.UnixMilli()
	t.mu.Unlock()
	return end.Sub(began)
}

// Summary is the end-to-end section of a run's summary (report.Summary's
// "e2e"), as in
//
//	{"sent": 101, "accepted": 100, "foreign": 0, "drain_s": 0.4,
//	 "loss_known": false, "stages": [
//	  {"name": "processed", "received": 99, "unique": 98, "duplicates": 1,
//	   "pending": 2, "pending_pct": 2, "lost": 0, "lost_pct": 0,
//	   "latency_ms": {...}, "histogram": "HISTFAAA...",
//	   "intervals": [{"t": 1795424400, "received": 98}]}]}
//
// An accepted event not seen at a stage by the end of the drain is pending
// (it may still come: a longer --drain may see it), unless the sinks can
// prove loss (LossKnown): then it is lost. No sink proves loss today, so
// lost is 0 and present for the summaries written before pending was.
//
// Shards' and standalone sinks' sections merge (Merge) by stage name,
// histograms exactly.
type Summary struct {
	Sent      int64   `json:"sent"`       // requests stamped with an ID
	Accepted  int64   `json:"accepted"`   // of those, answered below 400: events expected downstream
	Foreign   int64   `json:"foreign"`    // IDs seen that this run did not send
	DrainS    float64 `json:"drain_s"`    // how long the run waited for the last events
	LossKnown bool    `json:"loss_known"` // the sinks prove loss: unseen events are lost, not pending
	Stages    []Stage `json:"stages"`
	// Deltas are the times between consecutive stages of the same events
	// (--e2e-deltas), by pair of stages in the order events reached them;
	// DeltasPeakInFlight is the most events it followed at once (its
	// memory: that × DeltaBytes).
	Deltas             []Delta `json:"deltas,omitempty"`
	DeltasPeakInFlight int     `json:"deltas_peak_in_flight,omitempty"`
	// AcceptedSeries counts the accepted events by the slice of time
	// they were sent in; SeenUntilMS is when the sinks stopped counting
	// (Unix ms: the end of the drain; in a merge, the earliest end). With
	// each stage's SeenSeries they say, step by step, whether a stage
	// kept up (report's JudgeSteps). Absent from summaries written before
	// they were kept, and SeenUntilMS from a run without sinks of its own.
	AcceptedSeries *Series `json:"accepted_series,omitempty"`
	SeenUntilMS    int64   `json:"seen_until_ms,omitempty"`
}

// Pending is the most events pending at a stage (the stage that misses
// most), 0 when every accepted event was seen everywhere.
func (s *Summary) Pending() int64 {
	var n int64
	for _, st := range s.Stages {
		n = max(n, st.Pending)
	}
	return n
}

// Stage is what was seen at one stage.
type Stage struct {
	Name       string       `json:"name"`
	Received   int64        `json:"received"`    // deliveries, duplicates included
	Unique     int64        `json:"unique"`      // distinct events
	Duplicates int64        `json:"duplicates"`  // Received − Unique
	Pending    int64        `json:"pending"`     // accepted, not seen here by the end of the drain, may still come
	PendingPct float64      `json:"pending_pct"` // Pending / Accepted, %
	Lost       int64        `json:"lost"`        // accepted and proven never to come here (0 unless Summary.LossKnown)
	LostPct    float64      `json:"lost_pct"`    // Lost / Accepted, %
	Latency    hist.Latency `json:"latency_ms"`  // seen − sent
	Histogram  string       `json:"histogram"`   // HdrHistogram V2 compressed base64, µs
	Intervals  []Interval   `json:"intervals"`   // received per second since the start
	// SeenSeries counts the distinct events by the slice of time they
	// were first seen here in (Series); absent from older summaries.
	SeenSeries *Series `json:"seen_series,omitempty"`
}

// Interval is one second of a stage:
//
//	{"t": 1795424400, "received": 98, "latency_ms": {"p50": 12, "p90": 30, "p99": 41, ...}, "histogram": "HISTF..."}
//
// The latency is that of the events first seen in the second (seen −
// sent); summaries written before it was kept have none.
type Interval struct {
	T         int64         `json:"t"`        // Unix seconds of the interval's start, as in the run's intervals
	Received  int64         `json:"received"` // distinct events first seen in it
	Latency   *hist.Latency `json:"latency_ms,omitempty"`
	Histogram string        `json:"histogram,omitempty"` // µs, HdrHistogram V2 compressed base64
}

// Summary returns the section, with drain the time Drain waited. Call it
// once the run and the drain are over.
func (t *Tracker) Summary(drain time.Duration) *Summary {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := &Summary{Foreign: t.foreign, DrainS: drain.Seconds(), LossKnown: t.provesLoss, SeenUntilMS: t.drained}
	if s.SeenUntilMS == 0 { // no drain (a standalone sink): until now
		s.SeenUntilMS = t.now().UnixMilli()
	}
	acc := &Series{SliceMS: SliceMS}
	for vu := range t.accepted {
		s.Sent += t.sent[vu]
		s.Accepted += t.accepted[vu].n
		_ = acc.AddSeries(&t.acceptedAt[vu]) // one width: cannot fail
	}
	if len(acc.Counts) > 0 {
		s.AcceptedSeries = acc
	}
	for _, st := range t.reported() {
		var seenAccepted int64
		for vu := range min(len(t.accepted), len(st.seen)) {
			seenAccepted += both(&t.accepted[vu], &st.seen[vu])
		}
		e := Stage{Name: st.name, Received: st.unique + st.dups, Unique: st.unique, Duplicates: st.dups,
			Latency: hist.LatencyOf(st.hist), Histogram: hist.Encode(st.hist)}
		e.SetUnseen(s.Accepted-seenAccepted, s.Accepted, s.LossKnown)
		st.closeSeconds(st.newest)
		e.Intervals = append([]Interval(nil), st.secs...)
		if len(st.seenAt.Counts) > 0 {
			seen := st.seenAt
			seen.Counts = append([]int64(nil), seen.Counts...)
			e.SeenSeries = &seen
		}
		s.Stages = append(s.Stages, e)
	}
	if t.inFlight != nil {
		s.Deltas = t.deltaSummaries()
		s.DeltasPeakInFlight = t.peakInFlight
	}
	return s
}

// SetUnseen sets what a stage did not see of the accepted events: lost
// when loss is known, pending otherwise.
func (e *Stage) SetUnseen(unseen, accepted int64, lossKnown bool) {
	e.Pending, e.Lost = unseen, 0
	if lossKnown {
		e.Pending, e.Lost = 0, unseen
	}
	e.PendingPct, e.LostPct = pct(e.Pending, accepted), pct(e.Lost, accepted)
}

// pct is n as a percentage of of, 0 when of is.
func pct(n, of int64) float64 {
	if of == 0 {
		return 0
	}
	return 100 * float64(n) / float64(of)
}
