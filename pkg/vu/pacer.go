package vu

import "time"

// Pacer says when the iterations of an open model are due: the
// schedule's (schedule.Schedule.Due) under an arrival rate, RecordedPacer
// under recorded pacing. It is pure arithmetic on offsets from the start
// of the run, so it is tested without a clock.
type Pacer interface {
	// Due returns the offset from the start at which iteration k (from 0)
	// is due, or false when iteration k is beyond the schedule.
	Due(k int64) (time.Duration, bool)
}

// RecordedPacer paces iterations at their recorded times: iteration k is
// due at its offset divided by the speed, and a loop walk starts the file
// again after its span.
type RecordedPacer struct {
	offsets []time.Duration // sorted, already divided by the speed
	period  time.Duration   // span of one walk plus one mean gap; 0: walk once
	end     time.Duration   // no iteration is due at or after end (0: none)
}

// NewRecordedPacer paces iterations at offsets (from the first recorded
// time, already divided by the speed and sorted). With loop, walks repeat
// every span plus one mean gap until limit (0: for ever).
func NewRecordedPacer(offsets []time.Duration, loop bool, limit time.Duration) *RecordedPacer {
	p := &RecordedPacer{offsets: offsets, end: limit}
	if loop && len(offsets) > 0 {
		span := offsets[len(offsets)-1]
		gap := span / time.Duration(max(len(offsets)-1, 1))
		if gap <= 0 {
			gap = time.Millisecond
		}
		p.period = span + gap
	}
	return p
}

// Due implements Pacer.
func (p *RecordedPacer) Due(k int64) (time.Duration, bool) {
	n := int64(len(p.offsets))
	if n == 0 || (p.period == 0 && k >= n) {
		return 0, false
	}
	t := p.offsets[k%n] + time.Duration(k/n)*p.period
	if p.end > 0 && t >= p.end {
		return 0, false
	}
	return t, true
}
