package rrpair

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// upgradeLine is an upgrade pair with the session key given.
func upgradeLine(ws string) string {
	return `{"ts":"2026-11-01T10:00:00Z","websocket":` + ws + `,"http":{"req":{"method":"GET","uri":"/feed","host":"api:8080",` +
		`"headers":{"Upgrade":["websocket"],"Connection":["Upgrade"],"Sec-WebSocket-Key":["dGhlIHNhbXBsZSBub25jZQ=="],"Sec-WebSocket-Version":["13"]}},` +
		`"res":{"statusCode":101,"headers":{"Upgrade":["websocket"],"Connection":["Upgrade"],"Sec-WebSocket-Accept":["s3pPLMBiTxaQ9kYGzzhZRbK+xOo="]}}}}`
}

const briefSession = `{"messages": [` +
	`{"from":"client","offset_ms":1.25,"type":"text","text":"{\"op\":\"sub\"}"},` +
	`{"from":"server","offset_ms":2.5,"type":"binary","base64":"AAE="},` +
	`{"from":"client","offset_ms":9,"type":"close","code":1000,"reason":"bye"}],` +
	` "pings": {"client":1,"server":0}}`

func TestWebSocketDecodes(t *testing.T) {
	f := mustOpen(t, goodLine+"\n"+upgradeLine(briefSession)+"\n")
	var p Pair
	cur := f.NewCursor()
	if err := cur.Decode(0, &p); err != nil {
		t.Fatal(err)
	}
	if w, err := p.WebSocket(); w != nil || err != nil || p.WebSocketRaw != nil {
		t.Errorf("a plain pair: %v, %v", w, err)
	}
	if err := cur.Decode(1, &p); err != nil {
		t.Fatal(err)
	}
	w, err := p.WebSocket()
	if err != nil {
		t.Fatal(err)
	}
	want := &WebSocket{
		Messages: []WSMessage{
			{From: WSClient, Offset: 1250 * time.Microsecond, Type: WSText, Data: []byte(`{"op":"sub"}`)},
			{From: WSServer, Offset: 2500 * time.Microsecond, Type: WSBinary, Data: []byte{0, 1}},
			{From: WSClient, Offset: 9 * time.Millisecond, Type: WSClose, Code: 1000, Reason: "bye"},
		},
		Pings: WSCounts{Client: 1},
	}
	if !reflect.DeepEqual(w, want) {
		t.Errorf("decoded\n%+v\nwant\n%+v", w, want)
	}
	if c := w.Count(); c != (WSCounts{Client: 2, Server: 1}) {
		t.Errorf("Count = %+v", c)
	}
	// The pair is the plain upgrade pair it also is.
	if string(p.Req.Method) != "GET" || string(p.Req.URI) != "/feed" || len(p.Req.Headers) != 4 {
		t.Errorf("the upgrade request: %s %s %d headers", p.Req.Method, p.Req.URI, len(p.Req.Headers))
	}
}

// A reader that ignores unknown keys (encoding/json here, as any other
// tool) reads the line as the pair it is.
func TestWebSocketLineIsAPlainPairToOtherReaders(t *testing.T) {
	var v struct {
		TS   string `json:"ts"`
		HTTP struct {
			Req struct{ Method, URI string }
			Res struct {
				StatusCode int `json:"statusCode"`
			}
		}
	}
	d := json.NewDecoder(strings.NewReader(upgradeLine(briefSession)))
	if err := d.Decode(&v); err != nil || v.HTTP.Req.Method != "GET" || v.HTTP.Res.StatusCode != 101 {
		t.Errorf("%+v, %v", v, err)
	}
}

func TestWebSocketRoundTrip(t *testing.T) {
	w := &WebSocket{
		Messages: []WSMessage{
			{From: WSClient, Offset: 0, Type: WSText, Data: []byte("héllo \"quoted\"\n")},
			{From: WSServer, Offset: 1234567 * time.Nanosecond, Type: WSText, Data: []byte{0xff, 'x'}}, // text that is not UTF-8: base64
			{From: WSServer, Offset: 2 * time.Millisecond, Type: WSBinary, Data: []byte{}},
			{From: WSServer, Offset: 2 * time.Millisecond, Type: WSBinary, Data: bytes.Repeat([]byte{7}, 100)},
			{From: WSClient, Offset: time.Hour, Type: WSClose},
			{From: WSServer, Offset: time.Hour + time.Microsecond, Type: WSClose, Code: 4001, Reason: "done \u00e9"},
		},
		Pings:    WSCounts{Client: 3, Server: 2},
		Oversize: WSCounts{Server: 1},
		Error:    "server: reserved opcode 0x3",
	}
	line, err := AppendChecked(nil, &Record{Method: "GET", URI: "/ws", Host: "h:1", Status: 101, WebSocket: w})
	if err != nil {
		t.Fatalf("%v\n%s", err, line)
	}
	if !strings.Contains(string(line), `"websocket":{"messages":[{"from":"client","offset_ms":0,"type":"text","text":"héllo \"quoted\"\n"}`) {
		t.Errorf("line: %s", line)
	}
	f := mustOpen(t, string(line))
	var p Pair
	if err := f.NewCursor().Decode(0, &p); err != nil {
		t.Fatal(err)
	}
	got, err := p.WebSocket()
	if err != nil {
		t.Fatal(err)
	}
	w.Messages[1].Offset = 1235 * time.Microsecond // written to the microsecond
	if !reflect.DeepEqual(got, w) {
		t.Errorf("read back\n%+v\nwant\n%+v", got, w)
	}
}

func TestWebSocketValidation(t *testing.T) {
	msg := func(fields string) string { return `{"messages":[` + fields + `]}` }
	cases := []struct{ ws, want string }{
		{`[]`, "websocket: want an object, got an array"},
		{`{"messages":{}}`, "websocket.messages: want an array, got an object"},
		{msg(`{"from":"browser","offset_ms":1,"type":"text","text":"x"}`), `websocket.messages[0].from: want "client" or "server", got "browser"`},
		{msg(`{"from":"client","offset_ms":1,"type":"text","text":"x"},{"from":"server","offset_ms":2,"type":"ping"}`), `websocket.messages[1].type: want "text", "binary" or "close", got "ping"`},
		{msg(`{"from":"client","offset_ms":1,"type":"binary","base64":"AA=!"}`), "websocket.messages[0].base64: bad base64 at byte 2"},
		{msg(`{"from":"client","offset_ms":5,"type":"text","text":"a"},{"from":"server","offset_ms":4.5,"type":"text","text":"b"}`),
			"websocket.messages[1].offset_ms: 4.5 is before the previous message's 5; messages are in the order they went by, so offsets never go back"},
		{msg(`{"from":"client","offset_ms":-1,"type":"text","text":"x"}`), "websocket.messages[0].offset_ms: want a number of milliseconds from 0, got -1"},
		{msg(`{"from":"client","offset_ms":"1","type":"text","text":"x"}`), "websocket.messages[0].offset_ms: want a number of milliseconds from 0, got a string"},
		{msg(`{"from":"client","offset_ms":1,"type":"close","code":1000.5}`), "websocket.messages[0].code: want a close code of 1000 to 4999, got 1000.5"},
		{msg(`{"from":"client","type":"text","text":"x"}`), "websocket.messages[0].offset_ms: missing"},
		{msg(`{"offset_ms":1,"type":"text","text":"x"}`), "websocket.messages[0].from: missing"},
		{msg(`{"from":"client","offset_ms":1,"text":"x"}`), "websocket.messages[0].type: missing"},
		{msg(`{"from":"client","offset_ms":1,"type":"close","code":999}`), "websocket.messages[0].code: want a close code of 1000 to 4999, got 999"},
		{msg(`{"from":"client","offset_ms":1,"type":"close","text":"x"}`), "websocket.messages[0]: a close has a code and a reason, not text or base64"},
		{msg(`{"from":"client","offset_ms":1,"type":"text","code":1000}`), "websocket.messages[0]: a text message has no code or reason"},
		{msg(`{"from":"client","offset_ms":1,"type":"text","text":"x","base64":"eA=="}`), "websocket.messages[0]: has both text and base64"},
		{`{"pings":{"client":-1}}`, "websocket.pings.client: want a count, got -1"},
		{`{"pings":{"server":"1"}}`, "websocket.pings.server: want a count, got a string"},
	}
	for _, c := range cases {
		in := goodLine + "\n" + upgradeLine(c.ws) + "\n"
		_, err := OpenReader(strings.NewReader(in), "t.jsonl", Options{})
		var ve *ValidationError
		if !errors.As(err, &ve) || len(ve.Lines) != 1 || ve.Lines[0].Line != 2 || !strings.Contains(ve.Lines[0].Err.Error(), c.want) {
			t.Errorf("%s:\n got %v\nwant line 2: %s", c.ws, err, c.want)
		}
	}
	// The key on an answer that is not the upgrade's 101.
	bad := strings.Replace(upgradeLine(briefSession), `"statusCode":101`, `"statusCode":200`, 1)
	if _, err := OpenReader(strings.NewReader(bad), "t.jsonl", Options{}); err == nil || !strings.Contains(err.Error(), "t.jsonl:1: websocket: on a pair whose answer is 200; want the 101") {
		t.Errorf("on a 200: %v", err)
	}
	// null is no session; unknown keys are ignored, for later versions.
	for _, ws := range []string{`null`, `{"messages":[{"from":"client","offset_ms":0,"type":"text","text":"x","compressed":true}],"future":{"a":[1]}}`} {
		if _, err := OpenReader(strings.NewReader(upgradeLine(ws)), "t.jsonl", Options{}); err != nil {
			t.Errorf("%s: %v", ws, err)
		}
	}
}

func TestInspectCountsWebSockets(t *testing.T) {
	second := `{"messages":[{"from":"client","offset_ms":0,"type":"text","text":"a"},{"from":"server","offset_ms":1,"type":"text","text":"b"},{"from":"server","offset_ms":2,"type":"text","text":"c"}],` +
		`"pings":{"client":0,"server":4},"oversize":{"client":0,"server":2},"error":"server: reserved opcode 0x3"}`
	f := mustOpen(t, goodLine+"\n"+upgradeLine(briefSession)+"\n"+upgradeLine(second)+"\n")
	st, err := f.Inspect()
	if err != nil {
		t.Fatal(err)
	}
	want := &WSStats{Sessions: 2, Messages: WSCounts{Client: 3, Server: 3}, Pings: WSCounts{Client: 1, Server: 4}, Oversize: WSCounts{Server: 2}, Broken: 1}
	if !reflect.DeepEqual(st.WebSocket, want) {
		t.Errorf("inspect: %+v, want %+v", st.WebSocket, want)
	}
	st, _ = mustOpen(t, goodLine+"\n").Inspect()
	if st.WebSocket != nil {
		t.Errorf("a file without sessions: %+v", st.WebSocket)
	}
}

// The hot path of plain pairs and of upgrade pairs pays nothing for the
// session: decoding only notes where it is.
func TestWebSocketKeyCostsNoAllocation(t *testing.T) {
	f := mustOpen(t, upgradeLine(briefSession)+"\n")
	cur := f.NewCursor()
	var p Pair
	cur.Decode(0, &p)
	if n := testing.AllocsPerRun(50, func() { cur.Decode(0, &p) }); n != 0 {
		t.Errorf("%v allocations decoding an upgrade pair", n)
	}
	if p.WebSocketRaw == nil {
		t.Error("no raw session noted")
	}
}
