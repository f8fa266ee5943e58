package listen

import (
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// Slots bounds the client connections a server serves at once
// (--max-conns), across all its listeners: a connection takes a slot
// before it is accepted and gives it back when it is done; past the bound,
// new connections wait in the listen queue. A server that reaches its
// bound says so (a warning at most once a second, with how many times
// it was reached since), since its clients then wait without being told
// why.
type Slots struct {
	c      chan struct{}
	what   string
	log    zerolog.Logger
	waited atomic.Int64
	full   everySecond // the warnings that all slots are taken
}

// NewSlots is n slots for the server what (named in its warnings).
func NewSlots(n int, what string, log zerolog.Logger) *Slots {
	return &Slots{c: make(chan struct{}, n), what: what, log: log}
}

// Take takes a slot, waiting while all are taken; false when stop closes
// first.
func (s *Slots) Take(stop <-chan struct{}) bool {
	select {
	case s.c <- struct{}{}:
		return true
	default:
	}
	s.waited.Add(1)
	s.note()
	select {
	case s.c <- struct{}{}:
		return true
	case <-stop:
		return false
	}
}

// Give gives a slot back.
func (s *Slots) Give() { <-s.c }

// Waited counts the times a slot was wanted and every one was taken: the
// bound reached, the connections arriving then left in the listen queue
// (accepting takes a slot before the next connection is known, so a wait
// may hold back several connections, or none).
func (s *Slots) Waited() int64 { return s.waited.Load() }

// note logs that the bound was reached, at most once a second.
func (s *Slots) note() {
	if n, ok := s.full.due(time.Now()); ok {
		s.log.Warn().Str("server", s.what).Int("max_conns", cap(s.c)).Int64("times_full", n).
			Msg("every --max-conns connection is being served: new ones wait to be accepted until one closes")
	}
}
