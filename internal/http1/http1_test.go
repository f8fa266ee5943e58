package http1

import (
	"bufio"
	"strings"
	"testing"
)

func TestReadResponseInterim(t *testing.T) {
	in := "HTTP/1.1 100 Continue\r\n\r\n" +
		"HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n" +
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok" +
		"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n"
	br := bufio.NewReader(strings.NewReader(in))
	var interim []string
	m, err := ReadResponse(br, "GET", func(m *Message) error {
		interim = append(interim, string(m.Raw))
		return nil
	})
	if err != nil || m.Status != 200 || string(m.Body) != "ok" {
		t.Fatalf("%+v, %v", m, err)
	}
	if len(interim) != 2 || !strings.HasPrefix(interim[0], "HTTP/1.1 100 ") || !strings.HasSuffix(interim[1], "rel=preload\r\n\r\n") {
		t.Errorf("interim answers: %q", interim)
	}
	// 101 is final: what follows it is not HTTP.
	if m, err := ReadResponse(br, "GET", nil); err != nil || m.Status != 101 {
		t.Errorf("%+v, %v: want the 101 as the final answer", m, err)
	}
}
