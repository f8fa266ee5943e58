package e2e

import (
	"math"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/replay-dev/replay/pkg/hist"
	"github.com/replay-dev/replay/pkg/schedule"
)

// Per-second latency: a stage keeps the histograms of the seconds still
// open (those an event may yet arrive in, out of order across sinks), and
// compresses a second once an event more than secondDelay seconds later
// arrives, as the run's recorder does with its intervals.
const secondDelay = 2

// openSecond is a second of a stage still open.
type openSecond struct {
	received int64
	h        *hdrhistogram.Histogram
}

// recordSecond folds latency ns of an event first seen at Unix second sec
// into the stage's seconds; t.mu is held.
func (st *stageScore) recordSecond(sec, ns int64) {
	if st.open == nil {
		st.open = map[int64]*openSecond{}
	}
	if st.closedUpTo != 0 && sec <= st.closedUpTo {
		sec = st.closedUpTo + 1 // too late for its own second: counted in the next open one
	}
	o := st.open[sec]
	if o == nil {
		o = &openSecond{h: st.spare.Get()}
		st.open[sec] = o
	}
	o.received++
	hist.RecordNanos(o.h, ns)
	if sec > st.newest {
		st.newest = sec
		st.closeSeconds(sec - secondDelay)
	}
}

// closeSeconds compresses the open seconds up to upTo into st.secs.
func (st *stageScore) closeSeconds(upTo int64) {
	for _, s := range hist.SecondsUpTo(st.open, upTo) {
		o := st.open[s]
		delete(st.open, s)
		lat := hist.LatencyOf(o.h)
		st.secs = append(st.secs, Interval{T: s, Received: o.received, Latency: &lat, Histogram: hist.Encode(o.h)})
		st.spare.Put(o.h)
		st.closedUpTo = max(st.closedUpTo, s)
	}
}

// SetSteps tells the tracker the run's steps (--stages): it started at
// start, and its steps are plan's. The end-to-end latency of each event is
// then also kept per step its request was sent in (StepStages).
func (t *Tracker) SetSteps(start time.Time, plan *schedule.Schedule) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stepBase = start.UnixNano()
	t.plan = plan
	t.nSteps = len(plan.Ends())
}

// stepOf returns the step an event sent at Unix µs sent belongs to
// (schedule.Schedule.StepOf); t.mu is held and steps are set.
func (t *Tracker) stepOf(sent int64) int {
	return t.plan.StepOf(time.Duration(sent*int64(time.Microsecond) - t.stepBase))
}

// recordStep folds latency ns of an event sent at Unix µs sent into its
// step's histogram of stage st; t.mu is held.
func (t *Tracker) recordStep(st *stageScore, sent, ns int64) {
	if t.nSteps == 0 {
		return
	}
	if st.steps == nil {
		st.steps = make([]*hdrhistogram.Histogram, t.nSteps)
	}
	i := t.stepOf(sent)
	if st.steps[i] == nil {
		st.steps[i] = hist.New()
	}
	hist.RecordNanos(st.steps[i], ns)
}

// stepMarks are where a VU's accepted events fall in the steps: a VU
// stamps its requests in time order, so the sequence numbers of each step
// are one range, from first[i] to the next step's first. Owned by the
// VU's goroutine while the run goes.
type stepMarks struct {
	steps []int    // the steps the VU accepted events in, ascending
	first []uint64 // the first sequence number accepted in each
	n     []int64  // how many it accepted in each
}

// add counts accepted event seq in step i (a clock that went back leaves
// it in the VU's latest step).
func (m *stepMarks) add(i int, seq uint64) {
	if last := len(m.steps) - 1; last >= 0 && i <= m.steps[last] {
		m.n[last]++
		return
	}
	m.steps, m.first, m.n = append(m.steps, i), append(m.first, seq), append(m.n, 1)
}

// seenIn counts, by step, the accepted events of one VU (acc) seen at a
// stage (seen), into out.
func (m *stepMarks) seenIn(acc, seen *bitset, out []int64) {
	for k, step := range m.steps {
		end := uint64(math.MaxUint64)
		if k+1 < len(m.first) {
			end = m.first[k+1]
		}
		out[step] += bothIn(acc, seen, m.first[k], end)
	}
}

// StepStage is what one e2e stage saw by step: Steps[i] is the histogram
// of the end-to-end latency of the events sent in step i (nil when none
// was seen), Seen[i] how many of the events accepted in step i it saw.
type StepStage struct {
	Stage string
	Steps []*hdrhistogram.Histogram
	Seen  []int64
}

// StepStages returns what each stage saw by step, in stage order (the
// stages named before the run included: Expect); nil without SetSteps.
// Call it once the drain is over.
func (t *Tracker) StepStages() []StepStage {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.nSteps == 0 {
		return nil
	}
	stages := t.reported()
	out := make([]StepStage, 0, len(stages))
	for _, st := range stages {
		seen := make([]int64, t.nSteps)
		for vu := range min(len(t.accepted), len(st.seen)) {
			t.marks[vu].seenIn(&t.accepted[vu], &st.seen[vu], seen)
		}
		out = append(out, StepStage{Stage: st.name, Steps: st.steps, Seen: seen})
	}
	return out
}

// StepAccepted returns the events the API accepted by step (the step of
// their send time); nil without SetSteps. Call it once the run is over.
func (t *Tracker) StepAccepted() []int64 {
	if t.nSteps == 0 {
		return nil
	}
	out := make([]int64, t.nSteps)
	for vu := range t.marks {
		for k, step := range t.marks[vu].steps {
			out[step] += t.marks[vu].n[k]
		}
	}
	return out
}

// DeltaBytes bounds what Deltas costs per event in flight: the key (VU slot
// and sequence number), the time and stage it was last seen at, and the
// map's own overhead (about 40 bytes; up to twice that while it grows).
const DeltaBytes = 80

// Deltas has the tracker measure the time between consecutive e2e stages
// of the same event (settled → completed, not only send → completed): a
// histogram per pair of stages, in the order each event reached them. It
// keeps, per event in flight, when and where it was last seen (DeltaBytes
// each), and forgets an event not seen again within window (the drain
// window): memory is bounded by DeltaBytes × the events seen within one
// window. Call it before the run.
func (t *Tracker) Deltas(window time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.deltaWindow = window
	t.inFlight = map[[2]uint64]sighting{}
	t.deltas = map[[2]int]*hdrhistogram.Histogram{}
}

// sighting is where and when an event in flight was last seen.
type sighting struct {
	at    int64 // Unix ns
	stage int   // index in t.stages
}

// recordDelta measures the time since the event (slot, seq) was last seen
// at another stage, and remembers this sighting; t.mu is held.
func (t *Tracker) recordDelta(slot int, seq uint64, stage int, at int64) {
	if t.inFlight == nil {
		return
	}
	key := [2]uint64{uint64(slot), seq}
	// An event last seen longer than the window ago is forgotten, whether
	// or not the sweep below has come to it yet.
	if prev, ok := t.inFlight[key]; ok && prev.stage != stage && at >= prev.at && at-prev.at <= int64(t.deltaWindow) {
		pair := [2]int{prev.stage, stage}
		h := t.deltas[pair]
		if h == nil {
			h = hist.New()
			t.deltas[pair] = h
			t.deltaOrder = append(t.deltaOrder, pair)
		}
		hist.RecordNanos(h, at-prev.at)
	}
	t.inFlight[key] = sighting{at: at, stage: stage}
	t.peakInFlight = max(t.peakInFlight, len(t.inFlight))
	if at-t.swept >= int64(time.Second) { // forget what the window has passed
		t.swept = at
		for k, v := range t.inFlight {
			if at-v.at > int64(t.deltaWindow) {
				delete(t.inFlight, k)
			}
		}
	}
}

// Delta is the time between two consecutive e2e stages of the same events
// (--e2e-deltas), as in
//
//	{"from": "settled", "to": "completed", "events": 980, "latency_ms": {...}, "histogram": "HISTF..."}
type Delta struct {
	From      string       `json:"from"`
	To        string       `json:"to"`
	Events    int64        `json:"events"`
	Latency   hist.Latency `json:"latency_ms"`
	Histogram string       `json:"histogram"`
}

// deltaSummaries returns the deltas measured; t.mu is held.
func (t *Tracker) deltaSummaries() []Delta {
	var out []Delta
	for _, pair := range t.deltaOrder {
		h := t.deltas[pair]
		out = append(out, Delta{From: t.stages[pair[0]].name, To: t.stages[pair[1]].name, Events: h.TotalCount(),
			Latency: hist.LatencyOf(h), Histogram: hist.Encode(h)})
	}
	return out
}
