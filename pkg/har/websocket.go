package har

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/replay-dev/replay/pkg/rrpair"
)

// Options change what a conversion keeps.
type Options struct {
	// WebSockets keeps a WebSocket entry (its _resourceType "websocket",
	// its _webSocketMessages, a ws:// or wss:// URL) as its upgrade pair
	// with the session's messages (rrpair's "websocket" key), instead of
	// skipping it as "websocket".
	WebSockets bool
}

// isWebSocket says whether the entry is a WebSocket's: what offNetwork
// skips as "websocket".
func isWebSocket(e *entry) bool {
	url := strings.ToLower(e.Request.URL)
	return strings.EqualFold(str(e.ResourceType), "websocket") ||
		len(e.WebSocket) > 0 && string(e.WebSocket) != "null" ||
		strings.HasPrefix(url, "ws://") || strings.HasPrefix(url, "wss://")
}

// sessionOrSkip says what becomes of entry e (its answer res) before its
// request is read: with Options.WebSockets a WebSocket's session is read
// (or why it cannot be); otherwise the reason an entry that never touched
// the network is skipped, "" for an entry to convert.
func (c *converter) sessionOrSkip(e *entry, res *answer) (*rrpair.WebSocket, string) {
	c.upgrade = c.webSockets && isWebSocket(e)
	if c.upgrade {
		return c.webSocket(e, res)
	}
	return nil, offNetwork(e, res, c.firefox)
}

// httpURL is a ws:// or wss:// URL (Chrome's, for a WebSocket) as the
// http:// or https:// URL its upgrade request went to; any other URL as
// it is.
func httpURL(u string) string {
	switch {
	case len(u) >= 5 && strings.EqualFold(u[:5], "ws://"):
		return "http://" + u[5:]
	case len(u) >= 6 && strings.EqualFold(u[:6], "wss://"):
		return "https://" + u[6:]
	}
	return u
}

// keepsUpgradeField says whether a hop-by-hop field is kept: Upgrade, in
// a WebSocket's upgrade pair, whose upgrade it is (Connection goes, as
// from every pair: a replay writes its own, as the recorders do).
func (c *converter) keepsUpgradeField(name string) bool {
	return c.upgrade && strings.EqualFold(name, "upgrade")
}

// wsMessage is one element of _webSocketMessages, as Chrome and
// mitmproxy write it: "send" (by the client) or "receive" (Chrome also
// writes "error", not kept), the time in
// Unix seconds, the opcode, and the data: text for a text message, base64
// for the others.
type wsMessage struct {
	Type   string  `json:"type"`
	Time   lenient `json:"time"`
	Opcode lenient `json:"opcode"`
	Data   string  `json:"data"`
}

// webSocket reads the entry's messages into the session its upgrade pair
// carries, or says why the entry is skipped. Offsets run from the entry's
// startedDateTime (the upgrade request's start: a HAR has no time for its
// answer); when a message's time is before it (clocks that disagree, a
// recorder that counts from elsewhere), from the first message. A
// message's time before the one before it is taken as the one before's
// (offsets never go back).
func (c *converter) webSocket(e *entry, res *answer) (*rrpair.WebSocket, string) {
	if st := res.status(); st != 101 && st != 0 {
		return nil, fmt.Sprintf("websocket: the upgrade was answered %d, not 101: no session", st)
	}
	var msgs []wsMessage
	if len(e.WebSocket) > 0 && string(e.WebSocket) != "null" {
		if err := json.Unmarshal(e.WebSocket, &msgs); err != nil {
			return nil, fmt.Sprintf("shape: _webSocketMessages: want an array of {type, time, opcode, data}: %v", err)
		}
	}
	var origin float64 // Unix seconds
	if t, ok := parseStarted(e.StartedDateTime); ok {
		origin = float64(t.UnixNano()) / 1e9
	}
	if len(msgs) > 0 && (origin == 0 || float64(msgs[0].Time) < origin) {
		origin = float64(msgs[0].Time)
	}
	ws := &rrpair.WebSocket{Messages: []rrpair.WSMessage{}}
	var last time.Duration
	for _, m := range msgs {
		c.wsMessage(ws, m, origin, &last)
	}
	c.st.WebSockets++
	c.st.WSMessages += len(ws.Messages)
	return ws, ""
}

// wsMessage adds m to the session: a message kept, a ping counted, what
// else counted as not kept. last is the offset of the message before.
func (c *converter) wsMessage(ws *rrpair.WebSocket, m wsMessage, origin float64, last *time.Duration) {
	var from rrpair.WSSide
	switch strings.ToLower(m.Type) {
	case "send":
		from = rrpair.WSClient
	case "receive":
		from = rrpair.WSServer
	default: // Chrome's "error" frames, and what other recorders add
		c.st.WSIgnored++
		return
	}
	at := max(time.Duration((float64(m.Time)-origin)*float64(time.Second)).Round(time.Microsecond), *last)
	*last = at
	msg := rrpair.WSMessage{From: from, Offset: at}
	switch int(m.Opcode) {
	case 1:
		msg.Type, msg.Data = rrpair.WSText, []byte(m.Data)
	case 2:
		msg.Type, msg.Data = rrpair.WSBinary, decodeBinary(m.Data)
	case 8:
		msg.Type = rrpair.WSClose
		msg.Code, msg.Reason = closeOf(m.Data)
	case 9:
		if from == rrpair.WSClient {
			ws.Pings.Client++
		} else {
			ws.Pings.Server++
		}
		return
	default: // a pong, a continuation Chrome left apart, a reserved opcode
		c.st.WSIgnored++
		return
	}
	ws.Messages = append(ws.Messages, msg)
}

// decodeBinary reads a binary message's data: base64, as Chrome and
// mitmproxy write it; data that is not base64 is kept as its bytes.
func decodeBinary(data string) []byte {
	if b, err := base64.StdEncoding.DecodeString(data); err == nil {
		return b
	}
	return []byte(data)
}

// closeOf reads a close frame's data (base64 of its payload: a 2-byte code
// and the reason) into its code and reason; data that is not such a
// payload is a close without a code, the data its reason when it is text.
func closeOf(data string) (code int, reason string) {
	b, err := base64.StdEncoding.DecodeString(data)
	if err == nil && len(b) >= 2 {
		if c := int(binary.BigEndian.Uint16(b)); c >= 1000 && c <= 4999 && utf8.Valid(b[2:]) {
			return c, string(b[2:])
		}
	}
	if err != nil && utf8.ValidString(data) {
		return 0, data
	}
	return 0, ""
}
