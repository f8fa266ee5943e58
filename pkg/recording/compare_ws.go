package recording

import "github.com/replay-dev/replay/pkg/rrpair"

// ObserveMessage compares a WebSocket server message with the recorded
// one it stands for (--compare body; vu.SessionObserver): rec is the
// recorded server data message of the same rank in the session of p, nil
// when the server sent more than the recording has. Payloads compare as
// bodies do (JSON with the ignored paths removed, else bytes; the recorded
// one mapped by what the session learned). It is called on the VU's
// goroutine while the session plays.
func (c *Comparer) ObserveMessage(vu int, p *rrpair.Pair, rec *rrpair.WSMessage, typ rrpair.WSType, payload []byte) {
	if !c.body {
		return
	}
	c.msgCompared.Add(1)
	switch {
	case rec == nil:
		c.mismatch(p, "message", "(none recorded)", clipBody(payload))
	case rec.Type != typ:
		c.mismatch(p, "message type", rec.Type.String(), typ.String())
	default:
		if want := c.mapped(vu, rec.Data); !c.sameBody(want, payload) {
			c.mismatch(p, "message", clipBody(want), clipBody(payload))
			return
		}
		c.msgMatched.Add(1)
	}
}
