package capture

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/replay-dev/replay/pkg/rawhttp"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/websocket"
)

// After a 101 (Switching Protocols) the connection speaks the protocol
// the request asked for: HTTP is over on it. The recorders pass the 101
// on byte for byte, then relay the bytes both ways as they come, frames
// untouched; a WebSocket's frames are read from a copy of each side's
// bytes (pkg/websocket's Recorder) and its messages recorded on the
// upgrade pair (rrpair's "websocket" key), which is written when the
// session ends: a close and the connection's end, either side closing, or
// both sides silent for the idle timeout.

// sessionBound is how many times MaxBody (--max-body) a session's
// messages may take together: they are held until the session ends.
const sessionBound = 4

// upstreamSide is the upstream connection of a relayed upgrade: where its
// bytes are read (through the buffer that read the 101, which may hold
// the first frames) and written, and the connection to close.
type upstreamSide struct {
	r    io.Reader
	w    io.Writer
	conn net.Conn
}

// relayUpgrade relays the connection upgraded by exchange x until both
// sides end, and returns when the 101 was passed on (the session's time
// origin) and, for a WebSocket, its session.
func (p *Proxy) relayUpgrade(cl *client, req *rawhttp.Message, x passed, up upstreamSide) (answered time.Time, ws *rrpair.WebSocket) {
	answered = time.Now()
	var rec *websocket.Recorder
	if rawhttp.HasToken(req.Headers, "upgrade", "websocket") {
		d, err := websocket.ParseExtensions(rawhttp.Values(x.res.Headers, "sec-websocket-extensions")...)
		rec = websocket.NewRecorder(answered, websocket.RecorderOptions{Deflate: d, MaxMessage: p.opt.MaxBody, MaxSession: sessionBound * p.opt.MaxBody})
		if err != nil {
			rec = nil // the frames cannot be read: relayed, not recorded
			ws = &rrpair.WebSocket{Messages: []rrpair.WSMessage{}, Error: err.Error()}
		}
	}
	s := &relayState{p: p}
	s.touch()
	abort := func() { cl.c.Close(); up.conn.Close() }
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		s.side(rec, up.w, patient{cl.br, s}, websocket.Client, func() { closeWrite(up.conn) }, abort)
	}()
	go func() {
		defer wg.Done()
		s.side(rec, timedWriter{cl}, patient{up.r, s}, websocket.Server, func() { closeWrite(cl.rw) }, abort)
	}()
	wg.Wait()
	if rec != nil {
		ws = rec.Session()
		for i := range ws.Messages {
			if m := &ws.Messages[i]; m.Type == rrpair.WSText {
				m.Data = p.redactJSON(m.Data)
			}
		}
	}
	if ws != nil {
		p.stats.webSockets.Add(1)
	}
	return answered, ws
}

// relayState is what the two sides of a relayed upgrade share: when a
// byte last came from either.
type relayState struct {
	p    *Proxy
	last atomic.Int64 // Unix ns
}

func (s *relayState) touch() { s.last.Store(time.Now().UnixNano()) }

// active says whether a side whose read timed out should read on: the
// other side moved within the idle timeout, and the proxy is not closing.
func (s *relayState) active() bool {
	return !s.p.closing.Load() && time.Since(time.Unix(0, s.last.Load())) < s.p.opt.IdleTimeout
}

// side relays one side of the upgraded connection, src to dst, recording
// it with rec when not nil. At src's end the other side is told (a
// half-close); on an error both connections are closed, which ends the
// other side's relay too.
func (s *relayState) side(rec *websocket.Recorder, dst io.Writer, src io.Reader, from websocket.Sender, halfClose, abort func()) {
	var err error
	if rec != nil {
		err = rec.Relay(dst, src, from)
	} else {
		_, err = io.Copy(dst, src)
	}
	if err != nil {
		abort()
		return
	}
	halfClose()
}

// patient reads r, each read within the idle timeout as the connection's
// deadline sets it; a read that times out while the other side is moving
// is tried again, so that a session in which only one side speaks (a
// feed) is not cut.
type patient struct {
	r io.Reader
	s *relayState
}

func (p patient) Read(b []byte) (int, error) {
	for {
		n, err := p.r.Read(b)
		if n > 0 {
			p.s.touch()
		}
		if n == 0 && err != nil && isTimeout(err) && p.s.active() {
			continue
		}
		return n, err
	}
}

// closeWrite tells the peer of c that nothing more comes (TCP's FIN, TLS's
// close_notify), or closes c when it cannot half-close.
func closeWrite(c any) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
		return
	}
	if cl, ok := c.(io.Closer); ok {
		cl.Close()
	}
}
