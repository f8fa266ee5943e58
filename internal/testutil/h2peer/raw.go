package h2peer

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"sync/atomic"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// Action is what Raw does with a complete request.
type Action int

// The actions of Raw.
const (
	Answer       Action = iota // 200 "ok"
	Refuse                     // RST_STREAM REFUSED_STREAM
	Reset                      // RST_STREAM INTERNAL_ERROR
	GoAwayBelow                // GOAWAY below the stream, then close
	GoAwayAt                   // GOAWAY at the stream (maybe processed), then close
	AnswerGoAway               // 200, then GOAWAY at the stream: no new stream
	Silent                     // nothing
)

// Raw is a cleartext HTTP/2 server written with the framer, which does
// what Script says with the nth request (from 1), counted in N, and keeps
// the header lists it received. Window, when not 0, is its
// SETTINGS_INITIAL_WINDOW_SIZE, and it then never opens a window again.
// Serve it with loopback.Serve(t, s.Serve).
type Raw struct {
	Script func(n int64) Action
	Window uint32
	N      atomic.Int64
	mu     sync.Mutex // guards lists
	lists  [][]hpack.HeaderField
}

// Serve speaks HTTP/2 on c until it closes, or a GOAWAY.
func (s *Raw) Serve(c net.Conn) {
	br := bufio.NewReader(c)
	if _, err := io.ReadFull(br, make([]byte, len(http2.ClientPreface))); err != nil {
		return
	}
	rc := &rawConn{s: s, bw: bufio.NewWriter(c), goneAt: 1<<31 - 1}
	defer rc.bw.Flush()
	rc.fr = http2.NewFramer(rc.bw, br)
	if s.Window > 0 {
		rc.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: s.Window})
	} else {
		rc.fr.WriteSettings()
	}
	rc.dec = hpack.NewDecoder(4096, func(f hpack.HeaderField) { rc.list = append(rc.list, f) })
	rc.enc = hpack.NewEncoder(&rc.hb)
	for {
		rc.bw.Flush()
		f, err := rc.fr.ReadFrame()
		if err != nil {
			return
		}
		if !rc.frame(f) {
			return
		}
	}
}

// rawConn is one connection Raw serves.
type rawConn struct {
	s          *Raw
	bw         *bufio.Writer
	fr         *http2.Framer
	goneAt     uint32 // streams above a GOAWAY's are ignored
	list       []hpack.HeaderField
	dec        *hpack.Decoder
	hb         bytes.Buffer
	enc        *hpack.Encoder
	endOnBlock bool
}

// frame takes one frame of the client's. false: close.
func (rc *rawConn) frame(f http2.Frame) bool {
	fr := rc.fr
	switch f := f.(type) {
	case *http2.SettingsFrame:
		if !f.IsAck() {
			fr.WriteSettingsAck()
		}
	case *http2.HeadersFrame:
		rc.list, rc.endOnBlock = nil, f.StreamEnded()
		return rc.block(f.StreamID, f.HeaderBlockFragment(), f.HeadersEnded())
	case *http2.ContinuationFrame:
		return rc.block(f.StreamID, f.HeaderBlockFragment(), f.HeadersEnded())
	case *http2.DataFrame:
		if rc.s.Window == 0 && f.Length > 0 {
			fr.WriteWindowUpdate(0, f.Length)
			fr.WriteWindowUpdate(f.StreamID, f.Length)
		}
		if f.StreamEnded() && !rc.respond(f.StreamID) {
			return false
		}
	case *http2.PingFrame:
		if !f.IsAck() {
			fr.WritePing(true, f.Data)
		}
	}
	return true
}

// block decodes a fragment of a header block; at its end the request
// is kept, and answered when it has no body. false: close.
func (rc *rawConn) block(id uint32, frag []byte, end bool) bool {
	rc.dec.Write(frag)
	if !end {
		return true
	}
	rc.s.keep(rc.list)
	return !rc.endOnBlock || rc.respond(id)
}

// respond does what the script says to stream id's request. false: close.
func (rc *rawConn) respond(id uint32) bool {
	if id > rc.goneAt {
		return true
	}
	s, fr := rc.s, rc.fr
	defer rc.bw.Flush()
	switch s.Script(s.N.Add(1)) {
	case Answer, AnswerGoAway:
		rc.hb.Reset()
		rc.enc.WriteField(hpack.HeaderField{Name: ":status", Value: "200"})
		rc.enc.WriteField(hpack.HeaderField{Name: "content-type", Value: "text/plain"})
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: rc.hb.Bytes(), EndHeaders: true})
		fr.WriteData(id, true, []byte("ok"))
		if s.Script(s.N.Load()) == AnswerGoAway {
			fr.WriteGoAway(id, http2.ErrCodeNo, nil)
			rc.goneAt = id
		}
	case Refuse:
		fr.WriteRSTStream(id, http2.ErrCodeRefusedStream)
	case Reset:
		fr.WriteRSTStream(id, http2.ErrCodeInternal)
	case GoAwayBelow:
		fr.WriteGoAway(id-2, http2.ErrCodeNo, nil)
		return false
	case GoAwayAt:
		fr.WriteGoAway(id, http2.ErrCodeInternal, nil)
		return false
	}
	return true
}

func (s *Raw) keep(list []hpack.HeaderField) {
	s.mu.Lock()
	s.lists = append(s.lists, list)
	s.mu.Unlock()
}

// Lists are the header lists received so far, in order.
func (s *Raw) Lists() [][]hpack.HeaderField {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lists
}

// CannedH2 is a cleartext HTTP/2 server that allocates nothing per
// request, so that an allocation count is the client's: it answers each
// request, once its END_STREAM arrives, with ":status: 200" and "ok",
// and gives back the connection window its DATA used.
func CannedH2(c net.Conn) {
	buf := make([]byte, 64<<10)
	if _, err := io.ReadFull(c, buf[:24]); err != nil {
		return
	}
	c.Write([]byte{0, 0, 0, 4, 0, 0, 0, 0, 0}) // SETTINGS, empty
	answer := []byte{
		0, 0, 1, 1, 4, 0, 0, 0, 0, 0x88, // HEADERS, END_HEADERS: :status 200 (static index 8)
		0, 0, 2, 0, 1, 0, 0, 0, 0, 'o', 'k', // DATA, END_STREAM
	}
	update := []byte{0, 0, 4, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0} // WINDOW_UPDATE on the connection
	var head [9]byte
	for {
		if _, err := io.ReadFull(c, head[:]); err != nil {
			return
		}
		n := int(head[0])<<16 | int(head[1])<<8 | int(head[2])
		if n > len(buf) {
			return
		}
		if _, err := io.ReadFull(c, buf[:n]); err != nil {
			return
		}
		typ, flags, id := head[3], head[4], binary.BigEndian.Uint32(head[5:])&(1<<31-1)
		switch {
		case typ == 4 && flags&1 == 0: // SETTINGS: ack
			c.Write([]byte{0, 0, 0, 4, 1, 0, 0, 0, 0})
		case typ == 0 && n > 0:
			binary.BigEndian.PutUint32(update[9:], uint32(n))
			c.Write(update)
		}
		if (typ == 0 || typ == 1) && flags&1 != 0 { // END_STREAM
			binary.BigEndian.PutUint32(answer[5:], id)
			binary.BigEndian.PutUint32(answer[15:], id)
			c.Write(answer)
		}
	}
}
