package rawhttp

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

// TestBodyOwnCopy: however it came, a body is a copy of its own, not a
// view of Raw.
func TestBodyOwnCopy(t *testing.T) {
	for _, in := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhe\r\n3\r\nllo\r\n0\r\n\r\n",
		"HTTP/1.0 200 OK\r\n\r\nhello",
	} {
		m, err := Read(bufio.NewReader(strings.NewReader(in)), false, "GET", nil)
		if err != nil || string(m.Body) != "hello" || string(m.Raw) != in {
			t.Fatalf("%q: %+v, %v", in, m, err)
		}
		for i := range m.Raw {
			m.Raw[i] = '!'
		}
		if string(m.Body) != "hello" {
			t.Errorf("%q: the body changed with Raw: %q", in, m.Body)
		}
	}
}

// TestConnectAnswer: a 2xx answer to CONNECT has no body: what follows
// is the tunnel, not read as the answer's.
func TestConnectAnswer(t *testing.T) {
	br := bufio.NewReader(strings.NewReader("HTTP/1.1 200 Connection established\r\n\r\n\x16\x03\x01"))
	m, err := Read(br, false, "CONNECT", nil)
	if err != nil || m.Status != 200 || len(m.Body) != 0 || br.Buffered() != 3 {
		t.Errorf("%+v, %v, %d bytes left: want the tunnel's first bytes unread", m, err, br.Buffered())
	}
}
