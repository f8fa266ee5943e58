package export

import (
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/replay-dev/replay/pkg/rrpair"
)

// A recorded WebSocket session (an upgrade pair, its 101 answer and
// messages) becomes k6's k6/websockets calls: new WebSocket(url) with the
// request's headers, then the client's messages sent in order, each once
// the server messages that preceded it in the recording have come (as
// replay does), binary ones as an ArrayBuffer decoded from base64, and the
// close as recorded. A session that cannot be sent as it was recorded is
// refused, naming why: one whose messages over the recorder's bound were
// left out, or whose recording stopped early.

// k6WS is a session in the script's data file.
type k6WS struct {
	URL      string          `json:"url"`
	Messages []k6WSMsg       `json:"messages"`
	Closes   bool            `json:"server_closes,omitempty"` // the server closed in the recording: wait for its close
	Counts   rrpair.WSCounts `json:"counts"`
}

// k6WSMsg is one recorded message: from "client" or "server"; a close
// has its code (0: none) and no data.
type k6WSMsg struct {
	From   string `json:"from"`
	Data   string `json:"data,omitempty"`
	Base64 bool   `json:"b64,omitempty"`
	Close  bool   `json:"close,omitempty"`
	Code   int    `json:"code,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// isUpgrade says whether the pair is a recorded WebSocket upgrade.
func isUpgrade(p *rrpair.Pair) bool { return p.Res.Status == 101 || p.WebSocketRaw != nil }

// wsHandshakeHeader says whether a request header is the handshake's own,
// which k6 writes itself (the key, the version, the extensions it
// offers, Upgrade).
func wsHandshakeHeader(name string) bool {
	switch strings.ToLower(name) {
	case "upgrade", "sec-websocket-key", "sec-websocket-version", "sec-websocket-extensions", "sec-websocket-accept":
		return true
	}
	return false
}

// k6WSOf is the session of r (an upgrade pair) as the data file holds it,
// or why it cannot be exported.
func k6WSOf(r *Request) (*k6WS, string) {
	rec, err := r.Pair.WebSocket()
	switch {
	case err != nil:
		return nil, "a WebSocket session that cannot be read: " + err.Error()
	case rec == nil:
		rec = &rrpair.WebSocket{}
	case rec.Oversize.Client+rec.Oversize.Server > 0:
		return nil, fmt.Sprintf("a WebSocket session whose %d messages over the recorder's bound were not kept: it cannot be sent as recorded", rec.Oversize.Client+rec.Oversize.Server)
	case rec.Error != "":
		return nil, "a WebSocket session whose recording stopped early (" + rec.Error + "): it cannot be sent as recorded"
	}
	ws := &k6WS{URL: wsURL(r.URL), Counts: rec.Count()}
	for _, m := range rec.Messages {
		km := k6WSMsg{From: m.From.String()}
		switch m.Type {
		case rrpair.WSClose:
			km.Close, km.Code, km.Reason = true, m.Code, m.Reason
			ws.Closes = ws.Closes || m.From == rrpair.WSServer
		case rrpair.WSBinary:
			km.Data, km.Base64 = base64.StdEncoding.EncodeToString(m.Data), true
		default:
			km.Data = string(m.Data)
		}
		ws.Messages = append(ws.Messages, km)
	}
	return ws, ""
}

// wsURL is the WebSocket URL of an http(s) URL: ws://, wss://.
func wsURL(u string) string {
	if rest, ok := strings.CutPrefix(u, "https://"); ok {
		return "wss://" + rest
	}
	if rest, ok := strings.CutPrefix(u, "http://"); ok {
		return "ws://" + rest
	}
	return u
}

// k6WSImport is the script's import of k6's WebSocket module, written only
// when the export holds a session.
const k6WSImport = "import { WebSocket } from 'k6/websockets';\n"

// k6WSCode plays one recorded session; the default function awaits it
// before the iteration's next request.
const k6WSCode = `
// wsSession plays a recorded WebSocket session (r.ws): the client's
// messages in order, each once the server messages that preceded it in
// the recording have come, binary ones as an ArrayBuffer; the recorded
// close. It resolves when the socket is closed. Server messages are
// counted, not compared.
function wsSession(r) {
  return new Promise((resolve) => {
    const msgs = r.ws.messages;
    const ws = new WebSocket(r.ws.url, null, { headers: r.headers, tags: { name: r.name } });
    ws.binaryType = 'arraybuffer';
    let next = 0; // the next recorded message
    let got = 0; // server messages come, beyond those passed
    const pump = () => {
      while (next < msgs.length) {
        const m = msgs[next];
        if (m.from === 'server') {
          if (m.close || got === 0) return; // wait for it
          got--;
          next++;
          continue;
        }
        next++;
        if (m.close) {
          ws.close(m.code || undefined);
          return;
        }
        ws.send(m.b64 ? encoding.b64decode(m.data, 'std') : m.data);
      }
      if (!r.ws.server_closes) ws.close(); // all played, no close recorded
    };
    ws.onopen = pump;
    ws.onmessage = () => {
      got++;
      pump();
    };
    ws.onclose = () => resolve();
    ws.onerror = () => resolve();
  });
}
`

// k6WSCall is the default function's call of a session.
const k6WSCall = `    if (r.ws) {
      await wsSession(r);
      continue;
    }
`
