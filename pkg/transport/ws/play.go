package ws

import (
	"errors"
	"io"
	"time"

	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/websocket"
)

// wait is how a wait for the server ended.
type wait uint8

const (
	waitOK      wait = iota // what was waited for came
	waitClosed              // the server closed first
	waitTimeout             // the timeout passed first
	waitError               // the connection failed
)

// play plays the recorded messages and returns how the session ended.
func (p *player) play() result.WSFail {
	msgs := p.s.WS.Messages
	servers, total := 0, p.total
	last := lastServerMessage(msgs)
	for i := range msgs {
		m := &msgs[i]
		if m.From == rrpair.WSServer {
			if m.Type != rrpair.WSClose {
				servers++
			}
			continue
		}
		if p.wrote { // nothing goes after the client's close
			break
		}
		w := p.await(m, servers)
		if w == waitClosed && m.Type == rrpair.WSClose && len(p.arrivals) >= total {
			return p.closedAfterAll() // the server closed first, all said
		}
		if w != waitOK {
			return p.failure(w)
		}
		if err := p.send(m); err != nil {
			return p.failure(waitError)
		}
		if i < last && m.Type != rrpair.WSClose {
			p.expecting++ // the recording has it answered
		}
	}
	// After the last message: the server's recorded messages, or its close.
	w := p.waitFor(func() bool { return len(p.arrivals) >= total }, p.c.Now()+int64(p.c.Timeout))
	if w != waitOK && !(w == waitClosed && len(p.arrivals) >= total) {
		return p.failure(w)
	}
	p.end()
	return p.closedAfterAll()
}

// closedAfterAll is how a session whose recorded messages were exchanged
// ended: WSOK, unless the server closed it with a code that says it
// failed (1002 and above but 1005, such as 1011, an internal error) that
// it did not close with in the recording: then WSCloseError, so that a
// server that answered everything and then failed is not counted sound.
func (p *player) closedAfterAll() result.WSFail {
	switch p.code {
	case 0, websocket.CloseNormal, websocket.CloseGoingAway, websocket.CloseNoStatus, recordedClose(p.s.WS.Messages):
		return result.WSOK
	}
	return result.WSCloseError
}

// recordedClose is the code of the server's recorded close; 0 without one.
func recordedClose(msgs []rrpair.WSMessage) uint16 {
	for i := range msgs {
		if msgs[i].From == rrpair.WSServer && msgs[i].Type == rrpair.WSClose {
			return uint16(msgs[i].Code)
		}
	}
	return 0
}

// lastServerMessage is the index of the server's last recorded data
// message; -1 without one.
func lastServerMessage(msgs []rrpair.WSMessage) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].From == rrpair.WSServer && msgs[i].Type != rrpair.WSClose {
			return i
		}
	}
	return -1
}

// serverMessages counts the server's recorded data messages.
func serverMessages(msgs []rrpair.WSMessage) int {
	n := 0
	for i := range msgs {
		if msgs[i].From == rrpair.WSServer && msgs[i].Type != rrpair.WSClose {
			n++
		}
	}
	return n
}

// await waits until client message m is due: at its recorded offset from
// the 101 divided by the speed (--pace recorded), or when the servers
// server messages recorded before it have arrived (the first ones at
// once). It returns how the wait ended.
func (p *player) await(m *rrpair.WSMessage, servers int) wait {
	var due int64
	if p.s.Recorded {
		due = p.t0 + int64(float64(m.Offset)/p.s.Speed)
		if w := p.waitFor(func() bool { return false }, due); w != waitTimeout {
			return w
		}
	} else {
		if w := p.waitFor(func() bool { return len(p.arrivals) >= servers }, p.c.Now()+int64(p.c.Timeout)); w != waitOK {
			return w
		}
		due = p.t0
		if servers > 0 {
			due = p.arrivals[servers-1]
		}
	}
	if m.Type != rrpair.WSClose {
		p.pending = append(p.pending, due)
	}
	return waitOK
}

// send writes client message m: a text payload through the rewrites, a
// close with its recorded code and reason. A data message written is
// counted sent.
func (p *player) send(m *rrpair.WSMessage) error {
	if m.Type == rrpair.WSClose {
		p.wrote = true
		code := uint16(m.Code)
		if code == 0 {
			code = websocket.CloseNoStatus
		}
		return p.write(func(w *websocket.Writer) error { return w.WriteClose(code, m.Reason) })
	}
	op, data := websocket.OpBinary, m.Data
	if m.Type == rrpair.WSText {
		op = websocket.OpText
		if p.s.Payload != nil {
			data = p.s.Payload(data)
		}
	}
	err := p.write(func(w *websocket.Writer) error { return w.WriteMessage(op, data) })
	if err == nil {
		p.out.WSSent++
	}
	return err
}

// waitFor takes the server's events until cond holds (waitOK), the server
// closes (waitClosed), its direction fails (waitError), or until passes
// (waitTimeout, on the run's clock).
func (p *player) waitFor(cond func() bool, until int64) wait {
	var timer *time.Timer
	for {
		switch {
		case cond():
			return waitOK
		case p.err != nil:
			return waitError
		case p.closed:
			return waitClosed
		}
		left := until - p.c.Now()
		if left <= 0 {
			return waitTimeout
		}
		if timer == nil {
			timer = time.NewTimer(time.Duration(left))
			defer timer.Stop()
		} else {
			timer.Reset(time.Duration(left))
		}
		select {
		case <-p.in.wake:
			p.takeAll()
		case <-timer.C:
		}
	}
}

// failure is the kind of a session that ended on w before its recorded
// messages were exchanged.
func (p *player) failure(w wait) result.WSFail {
	switch {
	case w == waitTimeout:
		return result.WSTimeout
	case w == waitError && errors.Is(p.err, websocket.ErrTooLarge):
		return result.WSTooLarge
	case w == waitError && errors.Is(p.err, websocket.ErrProtocol):
		return result.WSProtocol
	case w == waitError:
		return result.WSError
	}
	return result.WSClosedEarly
}

// end closes a session whose messages were exchanged: the client's close
// (code 1000) when the recording had none, then the server's answer to
// it, for at most the timeout; a server that does not answer it has still
// done all it was asked.
func (p *player) end() {
	if !p.closed && !p.wrote {
		p.wrote = true
		if p.write(func(w *websocket.Writer) error { return w.WriteClose(websocket.CloseNormal, "") }) != nil {
			return
		}
	}
	if !p.closed {
		p.waitFor(func() bool { return false }, p.c.Now()+int64(p.c.Timeout))
	}
}

// isEOF reports the end of the connection.
func isEOF(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}
