package websocket

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/replay-dev/replay/pkg/rrpair"
)

// RecorderOptions bound what a Recorder keeps of a session.
type RecorderOptions struct {
	// Deflate is permessage-deflate as the upgrade's answer negotiated it:
	// compressed messages are recorded inflated.
	Deflate Deflate
	// MaxMessage bounds one message; a message over it is relayed,
	// counted (rrpair.WebSocket.Oversize), not kept. 0 is
	// DefaultMaxMessage.
	MaxMessage int64
	// MaxSession bounds the messages kept of a session together (their
	// payloads and a little for each): past it, later messages are
	// relayed and counted, not kept, and the session says so (Error). 0
	// is MaxMessage.
	MaxSession int64
}

// perMessage is what a kept message costs beside its payload, counted
// against MaxSession so that many empty messages are bounded too.
const perMessage = 64

// Recorder builds the session of a relayed WebSocket connection: each
// direction's bytes are relayed as they come, untouched, and a copy of
// them is read as frames, whose messages are kept in the order they
// completed, with their time from the upgrade's answer. Memory is bounded
// by MaxSession, whatever the session sends.
type Recorder struct {
	start time.Time
	opts  RecorderOptions

	mu   sync.Mutex
	ws   rrpair.WebSocket
	kept int64
}

// NewRecorder records a session whose upgrade was answered at start.
func NewRecorder(start time.Time, opts RecorderOptions) *Recorder {
	if opts.MaxMessage <= 0 {
		opts.MaxMessage = DefaultMaxMessage
	}
	if opts.MaxSession <= 0 {
		opts.MaxSession = opts.MaxMessage
	}
	return &Recorder{start: start, opts: opts, ws: rrpair.WebSocket{Messages: []rrpair.WSMessage{}}}
}

// Relay copies src to dst as the bytes come (each read written before the
// next read), reading the frames the side from sent from a copy, until src
// ends: nil at its end between frames, else the read or write error, which
// the session's Error keeps when it cut the side short (a reset, the end
// in the middle of a frame). A frame the framer refuses ends the recording
// of the side's messages (Error says why), not the relay: what follows is
// copied as it comes.
// Each side is relayed by one goroutine; the two may run at once.
func (r *Recorder) Relay(dst io.Writer, src io.Reader, from Sender) error {
	tee := &stampTee{src: src, dst: dst}
	rd := NewReader(tee, ReaderOptions{Sender: from, MaxMessage: r.opts.MaxMessage, Deflate: r.opts.Deflate, NoUTF8Check: true})
	for {
		m, err := rd.ReadMessage()
		var tooLarge *TooLargeError
		switch {
		case err == nil:
			r.add(from, &m, tee.at)
		case errors.As(err, &tooLarge), errors.Is(err, ErrContextLost):
			r.drop(from, "")
		case err == io.EOF:
			return nil
		case errors.Is(err, ErrProtocol):
			r.fail(from, err)
			_, err = io.Copy(dst, src)
			return err
		default:
			if cut(err) {
				r.fail(from, err) // a reset, a frame cut short: the session did not end, it was cut
			}
			return err
		}
	}
}

// cut says whether err cut a side short: not the connection closed by
// the relay itself (the other side ended, the recorder stops) nor the
// idle timeout both sides let pass.
func cut(err error) bool {
	var ne net.Error
	return !errors.Is(err, net.ErrClosed) && !(errors.As(err, &ne) && ne.Timeout())
}

// stampTee passes what it reads from src to dst before it returns it, and
// notes when the last read came: the time a message read from it was
// whole, noted before its last bytes went on, so that an answer to it,
// read on the other side, is always noted later.
type stampTee struct {
	src io.Reader
	dst io.Writer
	at  time.Time
}

func (t *stampTee) Read(p []byte) (int, error) {
	n, err := t.src.Read(p)
	if n > 0 {
		t.at = time.Now()
		if _, werr := t.dst.Write(p[:n]); werr != nil {
			return n, werr
		}
	}
	return n, err
}

// add keeps message m of side from, whole at time whole, or counts it
// when the session is over its bound.
func (r *Recorder) add(from Sender, m *Message, whole time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if keeps(m.Opcode) {
		cost := int64(len(m.Payload)) + perMessage
		if r.kept+cost > r.opts.MaxSession {
			r.dropLocked(from, fmt.Sprintf("the session's messages passed the bound of %d bytes together: later ones counted as oversize, not kept", r.opts.MaxSession))
			return
		}
		r.kept += cost
	}
	Keep(&r.ws, from, m, max(whole.Sub(r.start), 0))
}

// keeps says whether a session keeps the messages of opcode op (text,
// binary, close), rather than counting them (ping) or leaving them out
// (pong).
func keeps(op Opcode) bool { return op == OpText || op == OpBinary || op == OpClose }

// Side is the traffic file's word for the sender.
func (s Sender) Side() rrpair.WSSide {
	if s == Server {
		return rrpair.WSServer
	}
	return rrpair.WSClient
}

// Keep adds message m, sent by from at offset at, to session ws as the
// traffic file records it: a text or binary message with its payload
// copied, a close with its code and reason, a ping counted, a pong left
// out. It returns the memory the message keeps (its payload and a little
// more; 0 when it keeps none), for a caller that bounds a session's.
func Keep(ws *rrpair.WebSocket, from Sender, m *Message, at time.Duration) int {
	if m.Opcode == OpPing {
		if from == Client {
			ws.Pings.Client++
		} else {
			ws.Pings.Server++
		}
	}
	if !keeps(m.Opcode) {
		return 0
	}
	msg := rrpair.WSMessage{From: from.Side(), Offset: at}
	switch m.Opcode {
	case OpText:
		msg.Type, msg.Data = rrpair.WSText, bytes.Clone(m.Payload)
	case OpBinary:
		msg.Type, msg.Data = rrpair.WSBinary, bytes.Clone(m.Payload)
	case OpClose:
		msg.Type, msg.Reason = rrpair.WSClose, string(m.Reason)
		if m.Code != CloseNoStatus {
			msg.Code = int(m.Code)
		}
	}
	if msg.Data == nil && msg.Type != rrpair.WSClose {
		msg.Data = []byte{}
	}
	ws.Messages = append(ws.Messages, msg)
	return len(msg.Data) + perMessage
}

// CountOversize counts a message sent by from over a bound: relayed or
// read past, not kept.
func CountOversize(ws *rrpair.WebSocket, from Sender) {
	if from == Client {
		ws.Oversize.Client++
	} else {
		ws.Oversize.Server++
	}
}

// drop counts a message of side from not kept; why, when not empty and
// the session has no error yet, becomes it.
func (r *Recorder) drop(from Sender, why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dropLocked(from, why)
}

func (r *Recorder) dropLocked(from Sender, why string) {
	CountOversize(&r.ws, from)
	if why != "" && r.ws.Error == "" {
		r.ws.Error = why
	}
}

// fail notes why the side's frames could not be read on.
func (r *Recorder) fail(from Sender, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ws.Error == "" {
		r.ws.Error = from.String() + ": " + err.Error()
	}
}

// Session is the session recorded so far: call it once both sides'
// Relay returned.
func (r *Recorder) Session() *rrpair.WebSocket {
	r.mu.Lock()
	defer r.mu.Unlock()
	ws := r.ws
	// The two sides' goroutines add their messages in either order; the
	// times they were whole say the order they went by.
	ws.Messages = slices.Clone(ws.Messages)
	slices.SortStableFunc(ws.Messages, func(a, b rrpair.WSMessage) int { return cmp.Compare(a.Offset, b.Offset) })
	return &ws
}

// IsUpgrade says whether a request's Upgrade header value asks for a
// WebSocket ("websocket", any case, among the protocols it lists).
func IsUpgrade(upgrade string) bool {
	for p := range strings.SplitSeq(upgrade, ",") {
		if strings.EqualFold(strings.TrimSpace(p), "websocket") {
			return true
		}
	}
	return false
}
