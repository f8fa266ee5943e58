package rrpair

// A WebSocket session is recorded on its upgrade pair: the HTTP request
// and its 101 answer as any pair, plus one top-level key, "websocket",
// holding the messages in the order they went by (docs/traffic-file.md):
//
//	"websocket": {"messages": [
//	   {"from":"client","offset_ms":1.25,"type":"text","text":"{\"op\":\"sub\"}"},
//	   {"from":"server","offset_ms":2.5,"type":"binary","base64":"AAE="},
//	   {"from":"client","offset_ms":9,"type":"close","code":1000,"reason":"bye"}],
//	 "pings": {"client":1,"server":0}}
//
// A reader that ignores unknown keys reads such a line as the plain pair
// it also is. Decoding a line only notes where the key's value is
// (Pair.WebSocketRaw); the messages are read when asked (Pair.WebSocket),
// so that the plain pairs of a run pay nothing for them.

import (
	"encoding/base64"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// WSSide is the side of a WebSocket connection that sent a message.
type WSSide uint8

const (
	WSClient WSSide = iota
	WSServer
)

// String is the file's word for the side: "client" or "server".
func (s WSSide) String() string {
	if s == WSServer {
		return "server"
	}
	return "client"
}

// WSType is a recorded message's type.
type WSType uint8

const (
	WSText WSType = iota
	WSBinary
	WSClose
)

// String is the file's word for the type: "text", "binary" or "close".
func (t WSType) String() string {
	switch t {
	case WSBinary:
		return "binary"
	case WSClose:
		return "close"
	}
	return "text"
}

// WSMessage is one message of a recorded session.
type WSMessage struct {
	From WSSide
	// Offset is when the message went by, from the upgrade's 101 answer.
	Offset time.Duration
	Type   WSType
	// Data is a text or binary message's payload, decompressed when the
	// session used permessage-deflate; nil for a close.
	Data []byte
	// Code and Reason are a close's; Code is 0 when the close frame
	// carried none.
	Code   int
	Reason string
}

// WSCounts counts something of each side.
type WSCounts struct {
	Client int `json:"client"`
	Server int `json:"server"`
}

// WebSocket is the recorded session of an upgrade pair.
type WebSocket struct {
	Messages []WSMessage
	// Pings are the pings each side sent (their pongs are not recorded).
	Pings WSCounts
	// Oversize are the messages over the recorder's bound on a message:
	// counted, not kept ("oversize" in the file).
	Oversize WSCounts
	// Error, when not empty, says why the recording of the session's
	// messages stopped before it ended (a frame the framer refused); the
	// session itself went on, relayed as it came.
	Error string
}

// Count is how many messages each side sent.
func (w *WebSocket) Count() WSCounts {
	var c WSCounts
	for i := range w.Messages {
		if w.Messages[i].From == WSServer {
			c.Server++
		} else {
			c.Client++
		}
	}
	return c
}

// WebSocket decodes the pair's recorded session: nil when the line has no
// "websocket" key. Byte slices of the result may point into the line (the
// mapped file). A file that opened was validated, so the error is for
// lines decoded without it.
func (p *Pair) WebSocket() (*WebSocket, error) {
	if p.WebSocketRaw == nil {
		return nil, nil
	}
	return DecodeWebSocket(p.WebSocketRaw)
}

// DecodeWebSocket reads a "websocket" key's value (raw JSON). An error is a
// *FieldError naming the key ("websocket.messages[3].from") and what was
// expected.
func DecodeWebSocket(raw []byte) (*WebSocket, error) {
	s := scanner{b: raw}
	w := &WebSocket{}
	if err := decodeWS(&s, w); err != nil {
		if se, ok := err.(*syntaxError); ok {
			return nil, &FieldError{Field: "websocket", Msg: "invalid JSON: " + se.msg, Off: -1}
		}
		return nil, err
	}
	if s.peek() != 0 {
		return nil, fieldErr("websocket", "trailing bytes after the object")
	}
	return w, nil
}

func decodeWS(s *scanner, w *WebSocket) error {
	if c := s.peek(); c != '{' {
		return wantErr("websocket", "an object", c)
	}
	s.i++
	for first := true; ; first = false {
		key, ok, err := s.nextKey(first)
		if err != nil || !ok {
			return err
		}
		switch string(key) {
		case "messages":
			err = decodeWSMessages(s, w)
		case "pings":
			err = decodeWSCounts(s, &w.Pings, "websocket.pings")
		case "oversize":
			err = decodeWSCounts(s, &w.Oversize, "websocket.oversize")
		case "error":
			var v []byte
			if v, err = wsString(s, "websocket.error"); err == nil {
				w.Error = string(v)
			}
		default:
			err = s.skip(0)
		}
		if err != nil {
			return err
		}
	}
}

func decodeWSMessages(s *scanner, w *WebSocket) error {
	if c := s.peek(); c != '[' {
		return wantErr("websocket.messages", "an array", c)
	}
	s.i++
	var prev time.Duration
	for first := true; ; first = false {
		more, err := s.nextElem(first)
		if err != nil || !more {
			return err
		}
		field := "websocket.messages[" + strconv.Itoa(len(w.Messages)) + "]"
		m, err := decodeWSMessage(s, field)
		if err != nil {
			return err
		}
		if m.Offset < prev {
			return fieldErr(field+".offset_ms", "%s is before the previous message's %s; messages are in the order they went by, so offsets never go back",
				formatMS(m.Offset), formatMS(prev))
		}
		prev = m.Offset
		w.Messages = append(w.Messages, m)
	}
}

// wsFields is one message as its keys are read, before the rules that
// span them.
type wsFields struct {
	m                                            WSMessage
	text, b64                                    []byte
	hasFrom, hasOffset, hasType, hasText, hasB64 bool
}

func decodeWSMessage(s *scanner, field string) (WSMessage, error) {
	if c := s.peek(); c != '{' {
		return WSMessage{}, wantErr(field, "an object", c)
	}
	s.i++
	var f wsFields
	for first := true; ; first = false {
		key, ok, err := s.nextKey(first)
		if err != nil {
			return f.m, err
		}
		if !ok {
			break
		}
		if err := f.read(s, string(key), field); err != nil {
			return f.m, err
		}
	}
	if err := f.check(field); err != nil {
		return f.m, err
	}
	return f.message(field)
}

// read reads the value of one key of a message; an unknown key's value is
// skipped.
func (f *wsFields) read(s *scanner, key, field string) (err error) {
	var n int
	switch key {
	case "from":
		n, err = wsEnum(s, field+".from", "client", "server")
		f.m.From, f.hasFrom = WSSide(n), err == nil
	case "offset_ms":
		var ms float64
		ms, err = wsNumber(s, field+".offset_ms", "a number of milliseconds from 0", 0, float64(1<<62)/1e6, false)
		f.m.Offset, f.hasOffset = time.Duration(ms*float64(time.Millisecond)), err == nil
	case "type":
		n, err = wsEnum(s, field+".type", "text", "binary", "close")
		f.m.Type, f.hasType = WSType(n), err == nil
	case "text":
		f.text, err = wsString(s, field+".text")
		f.hasText = true
	case "base64":
		f.b64, err = wsString(s, field+".base64")
		f.hasB64 = true
	case "code":
		var code float64
		code, err = wsNumber(s, field+".code", "a close code of 1000 to 4999", 1000, 4999, true)
		f.m.Code = int(code)
	case "reason":
		var v []byte
		v, err = wsString(s, field+".reason")
		f.m.Reason = string(v)
	default:
		err = s.skip(0)
	}
	return err
}

// check holds a message to the rules that span its keys.
func (f *wsFields) check(field string) error {
	m := &f.m
	switch {
	case !f.hasFrom:
		return fieldErr(field+".from", `missing; want "client" or "server"`)
	case !f.hasOffset:
		return fieldErr(field+".offset_ms", "missing; want the milliseconds from the upgrade's answer")
	case !f.hasType:
		return fieldErr(field+".type", `missing; want "text", "binary" or "close"`)
	case f.hasText && f.hasB64:
		return fieldErr(field, "has both text and base64; want one")
	case m.Type == WSClose && (f.hasText || f.hasB64):
		return fieldErr(field, "a close has a code and a reason, not text or base64")
	case m.Type != WSClose && (m.Code != 0 || m.Reason != ""):
		return fieldErr(field, "a %s message has no code or reason; only a close does", m.Type)
	}
	return nil
}

// message is the checked message with its payload: base64 decoded, or
// the text; empty, not nil, for a text or binary message without one.
func (f *wsFields) message(field string) (WSMessage, error) {
	m := f.m
	switch {
	case f.hasB64:
		data, err := decodeBase64(nil, f.b64, field+".base64")
		if err != nil {
			return m, err
		}
		m.Data = data
	case f.hasText:
		m.Data = f.text
	}
	if m.Type != WSClose && m.Data == nil {
		m.Data = []byte{}
	}
	return m, nil
}

// wsNumber reads a number from lo to hi, a whole one when whole; want
// says what is expected.
func wsNumber(s *scanner, field, want string, lo, hi float64, whole bool) (float64, error) {
	if c := s.peek(); c != '-' && (c < '0' || c > '9') {
		return 0, wantErr(field, want, c)
	}
	v, err := s.number()
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseFloat(string(v), 64)
	if err != nil || n < lo || n > hi || whole && n != math.Trunc(n) {
		return 0, fieldErr(field, "want %s, got %s", want, v)
	}
	return n, nil
}

// wsEnum reads a string that must be one of names (in the order of the
// type's constants) and returns its index.
func wsEnum(s *scanner, field string, names ...string) (int, error) {
	v, err := wsString(s, field)
	if err != nil {
		return 0, err
	}
	for i, name := range names {
		if string(v) == name {
			return i, nil
		}
	}
	quoted := make([]string, len(names))
	for i, name := range names {
		quoted[i] = strconv.Quote(name)
	}
	want := strings.Join(quoted[:len(quoted)-1], ", ") + " or " + quoted[len(quoted)-1]
	return 0, fieldErr(field, "want %s, got %q", want, v)
}

// wsString reads a string, unescaped into memory of its own when it has
// escapes.
func wsString(s *scanner, field string) ([]byte, error) {
	if c := s.peek(); c != '"' {
		return nil, wantErr(field, "a string", c)
	}
	raw, escaped, err := s.str()
	if err != nil || !escaped {
		return raw, err
	}
	v, err := AppendUnescaped(nil, raw)
	if err != nil {
		return nil, s.fail("bad escape in string")
	}
	return v, nil
}

func decodeWSCounts(s *scanner, c *WSCounts, field string) error {
	if ch := s.peek(); ch != '{' {
		return wantErr(field, `an object such as {"client":1,"server":0}`, ch)
	}
	s.i++
	for first := true; ; first = false {
		key, ok, err := s.nextKey(first)
		if err != nil || !ok {
			return err
		}
		var dst *int
		switch string(key) {
		case "client":
			dst = &c.Client
		case "server":
			dst = &c.Server
		default:
			if err := s.skip(0); err != nil {
				return err
			}
			continue
		}
		if ch := s.peek(); ch != '-' && (ch < '0' || ch > '9') {
			return wantErr(field+"."+string(key), "a count", ch)
		}
		v, err := s.number()
		if err != nil {
			return err
		}
		n, err := strconv.Atoi(string(v))
		if err != nil || n < 0 {
			return fieldErr(field+"."+string(key), "want a count, got %s", v)
		}
		*dst = n
	}
}

// formatMS writes a duration as the file's milliseconds, to the
// microsecond.
func formatMS(d time.Duration) string {
	return strconv.FormatFloat(float64(d.Round(time.Microsecond))/float64(time.Millisecond), 'f', -1, 64)
}

// AppendWebSocket appends w as the value of the "websocket" key (the
// object only, no key): text payloads as text when they are UTF-8 (else in
// base64), binary ones in base64, offsets in milliseconds to the
// microsecond.
func AppendWebSocket(dst []byte, w *WebSocket) []byte {
	dst = append(dst, `{"messages":[`...)
	for i := range w.Messages {
		m := &w.Messages[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"from":"`...)
		dst = append(dst, m.From.String()...)
		dst = append(dst, `","offset_ms":`...)
		dst = append(dst, formatMS(m.Offset)...)
		dst = append(dst, `,"type":"`...)
		dst = append(dst, m.Type.String()...)
		dst = append(dst, '"')
		switch {
		case m.Type == WSClose:
			if m.Code != 0 {
				dst = append(dst, `,"code":`...)
				dst = strconv.AppendInt(dst, int64(m.Code), 10)
			}
			if m.Reason != "" {
				dst = append(dst, `,"reason":`...)
				dst = AppendJSONString(dst, m.Reason)
			}
		case m.Type == WSText && utf8.Valid(m.Data):
			dst = append(dst, `,"text":`...)
			dst = AppendJSONString(dst, string(m.Data))
		default:
			dst = append(dst, `,"base64":"`...)
			dst = base64.StdEncoding.AppendEncode(dst, m.Data)
			dst = append(dst, '"')
		}
		dst = append(dst, '}')
	}
	dst = append(dst, `],"pings":`...)
	dst = appendWSCounts(dst, w.Pings)
	if w.Oversize != (WSCounts{}) {
		dst = append(dst, `,"oversize":`...)
		dst = appendWSCounts(dst, w.Oversize)
	}
	if w.Error != "" {
		dst = append(dst, `,"error":`...)
		dst = AppendJSONString(dst, w.Error)
	}
	return append(dst, '}')
}

func appendWSCounts(dst []byte, c WSCounts) []byte {
	dst = append(dst, `{"client":`...)
	dst = strconv.AppendInt(dst, int64(c.Client), 10)
	dst = append(dst, `,"server":`...)
	dst = strconv.AppendInt(dst, int64(c.Server), 10)
	return append(dst, '}')
}

// checkWebSocket holds an upgrade pair's session to the file's rules when
// a file is validated: the key decodes, and it sits on a 101 answer (or a
// pair with no recorded answer).
func checkWebSocket(p *Pair) error {
	if p.WebSocketRaw == nil {
		return nil
	}
	if p.Res.Status != 0 && p.Res.Status != 101 {
		return fieldErr("websocket", "on a pair whose answer is %d; want the 101 (Switching Protocols) of the session's upgrade", p.Res.Status)
	}
	_, err := DecodeWebSocket(p.WebSocketRaw)
	return err
}

// otherTop reads a top-level key the decoder's own cases do not name:
// "websocket", whose value's place is noted for Pair.WebSocket to read
// when asked (null: no session), or any other key, whose value is
// skipped.
func otherTop(s *scanner, p *Pair, key []byte) (err error) {
	switch {
	case string(key) != "websocket":
		return s.skip(0)
	case s.peek() == 'n':
		return s.literal()
	}
	p.WebSocketRaw, err = rawSpan(s)
	return err
}

// WSStats counts a file's recorded WebSocket sessions for `replay
// inspect`: the upgrade pairs with a session, their messages by sender,
// the pings, and the messages left out as over the recorder's bound.
type WSStats struct {
	Sessions int      `json:"sessions"`
	Messages WSCounts `json:"messages"`
	Pings    WSCounts `json:"pings"`
	Oversize WSCounts `json:"oversize"`
	// Broken are the sessions whose recording stopped early (Error).
	Broken int `json:"broken"`
}

// countWebSocket adds the pair's session, if it has one.
func (st *Stats) countWebSocket(p *Pair) error {
	w, err := p.WebSocket()
	if err != nil || w == nil {
		return err
	}
	if st.WebSocket == nil {
		st.WebSocket = &WSStats{}
	}
	ws := st.WebSocket
	ws.Sessions++
	c := w.Count()
	ws.Messages.Client += c.Client
	ws.Messages.Server += c.Server
	ws.Pings.Client += w.Pings.Client
	ws.Pings.Server += w.Pings.Server
	ws.Oversize.Client += w.Oversize.Client
	ws.Oversize.Server += w.Oversize.Server
	if w.Error != "" {
		ws.Broken++
	}
	return nil
}
