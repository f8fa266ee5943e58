package capture

import (
	"bufio"
	"crypto/tls"
	"io"
	"strings"
	"testing"

	"github.com/replay-dev/replay/internal/testutil/fixture"
)

// TestForwardH2ToH1KeepsHeaderSpelling: a client that speaks HTTP/2 to
// the forward recorder, an upstream that answers HTTP/1.1 with header
// names of its own spelling and order (ETag, not Etag; x-lower-Case;
// Set-Cookie twice around another): the pair keeps the answer's names
// as the upstream spelled them, in its order.
func TestForwardH2ToH1KeepsHeaderSpelling(t *testing.T) {
	leaf, upCAFile := upstreamLeaf(t)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{*leaf}, NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	const answer = "HTTP/1.1 200 OK\r\nETag: \"v1\"\r\nx-lower-Case: a\r\nSet-Cookie: a=1\r\nWWW-Authenticate: Basic\r\nSet-Cookie: b=2\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok"
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					line, err := br.ReadString('\n')
					if err != nil {
						return
					}
					if line == "\r\n" {
						io.WriteString(c, answer)
					}
				}
			}()
		}
	}()
	var out fixture.Buffer
	p, ca := forwardProxy(t, &out, upCAFile, func(o *ForwardOptions) { o.Redact = RedactNone })
	resp, err := proxied(p.Addr(), ca, true).Get("https://" + ln.Addr().String() + "/etag")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.ProtoMajor != 2 {
		t.Fatalf("the client spoke %s to the recorder, want HTTP/2", resp.Proto)
	}
	closeProxy(t, p)
	line := out.String()
	_, res, _ := strings.Cut(line, `"res":`)
	want := `"headers":{"ETag":["\"v1\""],"x-lower-Case":["a"],"Set-Cookie":["a=1","b=2"],"WWW-Authenticate":["Basic"],"Content-Type":["text/plain"],"Content-Length":["2"]}`
	if !strings.Contains(res, want) {
		t.Errorf("recorded answer:\n%s\nwant headers %s", res, want)
	}
}
