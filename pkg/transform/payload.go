package transform

import "github.com/replay-dev/replay/pkg/rrpair"

// RewritePayload applies the chain's body rewrites to payload, a text
// message a WebSocket client sends in the session of pair (an upgrade
// pair), on VU vu, as they apply to a request's body: timestamps (moved
// by now − the pair's ts), JWTs, the values correlation learned earlier in
// the session, fresh values. The transforms of a request's head (headers,
// query, path, host, cookies, the correlation ID) have nothing to do with
// a message and are not applied. It returns the payload to send: payload
// itself, or the VU's scratch buffer, valid until its next rewrite.
func (c *Chain) RewritePayload(vu int, payload []byte, pair *rrpair.Pair) []byte {
	st, err := c.state(vu)
	if err != nil {
		return payload
	}
	req := &st.payload
	*req = rrpair.Request{Body: payload}
	cl := &st.call
	*cl = call{st: st, req: req, pair: pair}
	if c.clock {
		cl.now = c.now().UnixNano()
	}
	for i, s := range c.steps {
		switch s.(type) {
		case *timestamps, *jwtSigner, *correlate, *fresh:
			cl.applyStep(i, s)
		}
	}
	return req.Body
}
