package pcap

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gopacket/gopacket/layers"
)

// scenario is a capture of what real captures hold, written by the test,
// and what its import must give.
type scenario struct {
	name  string
	build func(c *tcap)
	pairs []string // in short, in order
	skips []string // what each skip says, in order
	// clean: nothing was lost, so the requests an independent reader
	// (tshark) finds are the ones imported, and a replay sends them all.
	clean bool
	check func(t *testing.T, r imported)
}

// post is a POST with a body of known length.
func post(target, body string) string {
	return fmt.Sprintf("POST %s HTTP/1.1\r\nHost: api.example:8080\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s", target, len(body), body)
}

var h1Scenarios = []scenario{
	{name: "reordered", clean: true, pairs: []string{"POST /upload -> 200", "GET /after -> 200"},
		build: func(c *tcap) {
			k := c.conn("10.0.0.1:40001", "10.0.0.2:8080")
			k.mss = 100
			k.handshake()
			segs := k.send(true, post("/upload", strings.Repeat("0123456789", 30)))
			c.swap(segs[1], segs[2]) // the third segment came before the second
			c.swap(segs[3], segs[0])
			k.send(false, ok("stored"))
			k.send(true, get("/after"))
			k.send(false, ok("after"))
			k.close()
		},
		check: func(t *testing.T, r imported) {
			if len(r.pairs) > 0 && r.pairs[0].Body != strings.Repeat("0123456789", 30) {
				t.Errorf("the body, reassembled: %q", r.pairs[0].Body)
			}
		}},
	{name: "retransmitted", clean: true, pairs: []string{"POST /pay -> 200"},
		build: func(c *tcap) {
			k := c.conn("10.0.0.1:40002", "10.0.0.2:8080")
			k.mss = 50
			k.handshake()
			segs := k.send(true, post("/pay", "amount=10&currency=EUR"))
			c.again(segs[0]) // a retransmission after the whole request
			c.again(segs[1])
			k.send(false, ok("paid"))
			c.again(segs[1])
			k.close()
		},
		check: func(t *testing.T, r imported) {
			if len(r.pairs) > 0 && r.pairs[0].Body != "amount=10&currency=EUR" || r.st.Retransmitted != 3 {
				t.Errorf("body %q, %d retransmitted: want the body once, 3", r.pairs[0].Body, r.st.Retransmitted)
			}
		}},
	{name: "overlapping", clean: true, pairs: []string{"GET /overlap -> 200"},
		build: func(c *tcap) {
			k := c.conn("10.0.0.1:40003", "10.0.0.2:8080")
			k.handshake()
			req := []byte(get("/overlap"))
			seq := k.next[0]
			// Segments that overlap each other, as a retransmission that
			// repacketized the bytes sends them: [0,20), [10,40), [30,end).
			k.seg(true, seq, ackFlag, req[:20])
			k.seg(true, seq+30, ackFlag, req[30:])
			k.seg(true, seq+10, ackFlag, req[10:40])
			k.next[0] += uint32(len(req))
			k.ack(false)
			k.send(false, ok("o"))
			k.close()
		},
		check: func(t *testing.T, r imported) {
			if len(r.pairs) > 0 {
				wantFields(t, "headers", r.pairs[0].Headers, "Host: api.example:8080", "User-Agent: test/1")
			}
		}},
	{name: "pipelined", clean: true, pairs: []string{"GET /1 -> 200", "GET /2 -> 404", "HEAD /3 -> 200", "GET /4 -> 304"},
		build: func(c *tcap) {
			k := c.conn("10.0.0.1:40004", "10.0.0.2:8080")
			k.handshake()
			k.send(true, get("/1")+get("/2")+strings.Replace(get("/3"), "GET", "HEAD", 1)+get("/4"))
			k.send(false, ok("one")+"HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot found"+
				"HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n"+ // HEAD: no body whatever the length says
				"HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\n\r\n")
			k.close()
		},
		check: func(t *testing.T, r imported) {
			if len(r.pairs) == 4 && (r.pairs[1].ResBody != "not found" || r.pairs[2].ResBody != "") {
				t.Errorf("answer bodies %q, %q", r.pairs[1].ResBody, r.pairs[2].ResBody)
			}
		}},
	{name: "chunked", clean: true, pairs: []string{"POST /stream -> 200"},
		build: func(c *tcap) {
			k := c.conn("10.0.0.1:40005", "10.0.0.2:8080")
			k.mss = 16
			k.handshake()
			k.send(true, "POST /stream HTTP/1.1\r\nHost: api.example:8080\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\n\r\n")
			k.send(false, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Sum\r\n\r\n2\r\nok\r\n0\r\nX-Sum: 1\r\n\r\n")
			k.close()
		},
		check: func(t *testing.T, r imported) {
			if len(r.pairs) == 1 {
				p := r.pairs[0]
				wantFields(t, "headers (Transfer-Encoding is the connection's)", p.Headers, "Host: api.example:8080")
				if p.Body != "hello, world" || p.ResBody != "ok" {
					t.Errorf("bodies %q, %q: want them de-chunked", p.Body, p.ResBody)
				}
			}
		}},
	{name: "expect 100-continue", clean: true, pairs: []string{"PUT /big -> 201"},
		build: func(c *tcap) {
			k := c.conn("10.0.0.1:40006", "10.0.0.2:8080")
			k.handshake()
			k.send(true, "PUT /big HTTP/1.1\r\nHost: api.example:8080\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n")
			k.send(false, "HTTP/1.1 100 Continue\r\n\r\n")
			k.send(true, "data")
			k.send(false, "HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n")
			k.close()
		},
		check: func(t *testing.T, r imported) {
			if len(r.pairs) == 1 && (r.pairs[0].Body != "data" || len(r.pairs[0].ResHeaders) != 1) {
				t.Errorf("%+v: want the body and the final answer's head", r.pairs[0])
			}
		}},
	{name: "bodiless answers, answer until close", clean: true, pairs: []string{"DELETE /x -> 204", "GET /old -> 200"},
		build: func(c *tcap) {
			k := c.conn("10.0.0.1:40007", "10.0.0.2:8080")
			k.handshake()
			k.send(true, "DELETE /x HTTP/1.1\r\nHost: h\r\n\r\n")
			k.send(false, "HTTP/1.1 204 No Content\r\n\r\n")
			k.send(true, "GET /old HTTP/1.0\r\nHost: h\r\n\r\n")
			k.send(false, "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nread until the server closes")
			k.close()
		},
		check: func(t *testing.T, r imported) {
			if len(r.pairs) == 2 && (r.pairs[1].ResBody != "read until the server closes" || r.pairs[1].Version != "1.0") {
				t.Errorf("%+v", r.pairs[1])
			}
		}},
	{name: "a gap in a body of known length", pairs: []string{"GET /after -> 200"},
		skips: []string{"packet 4: gap: POST /cut to 10.0.0.2:8080: its body is missing 60 bytes the capture lost, before packet 6"},
		build: func(c *tcap) {
			k := c.conn("10.0.0.1:40008", "10.0.0.2:8080")
			k.mss = 60
			k.handshake()
			segs := k.send(true, post("/cut", strings.Repeat("x", 200)))
			c.drop(segs[2]) // the capture lost a segment of the body
			k.send(false, ok("got it"))
			k.send(true, get("/after")) // the stream is still in step
			k.send(false, ok("after"))
			k.close()
		}},
	{name: "a gap in a head", pairs: []string{"GET /1 -> 200", "GET /found -> 200"},
		skips: []string{
			"packet 5: gap: the first bytes of a connection to 10.0.0.2:8080: 20 bytes the capture lost, before packet 5",
			"packet 8: no-request: an answer (status 200) from 10.0.0.2:8080 to no captured request",
			"packet 17: gap: a request to 10.0.0.2:8080: 20 bytes the capture lost, before packet 18"},
		build: func(c *tcap) {
			k := c.conn("10.0.0.1:40009", "10.0.0.2:8080")
			k.mss = 20
			k.handshake()
			segs := k.send(true, get("/lost-head")) // the first request: the protocol is not known yet
			c.drop(segs[1])
			k.send(false, ok("lost"))
			k.mss = 1400
			k.send(true, get("/1"))
			k.send(false, ok("1"))
			k.mss = 20
			segs = k.send(true, get("/lost-head-too")) // once it is
			c.drop(segs[1])
			k.send(false, ok("lost"))
			k.mss = 1400
			k.send(true, get("/found")) // found again: a segment begins a request line
			k.send(false, ok("found"))
			k.close()
		},
		check: func(t *testing.T, r imported) {
			if len(r.pairs) == 2 && (r.pairs[0].ResBody != "1" || r.pairs[1].ResBody != "found") {
				t.Errorf("the answer matched after the gap: %q, want found", r.pairs[0].ResBody)
			}
		}},
	{name: "a request lost whole, answers matched by time", pairs: []string{"GET /1 -> 200", "GET /3 -> 200"},
		skips: []string{"no-request: an answer (status 200) from 10.0.0.2:8080 to no captured request"},
		build: func(c *tcap) {
			k := c.conn("10.0.0.1:40010", "10.0.0.2:8080")
			k.handshake()
			k.send(true, get("/1"))
			k.send(false, ok("1"))
			lost := k.send(true, get("/2"))
			k.send(false, ok("2"))
			k.send(true, get("/3"))
			k.send(false, ok("3"))
			c.drop(lost...)
			k.close()
		},
		check: func(t *testing.T, r imported) {
			if len(r.pairs) == 2 && r.pairs[1].ResBody != "3" {
				t.Errorf("GET /3 got answer %q, want 3", r.pairs[1].ResBody)
			}
		}},
	{name: "an answer cut by a gap", pairs: []string{"GET /big -> none", "GET /next -> 200"},
		build: func(c *tcap) {
			k := c.conn("10.0.0.1:40011", "10.0.0.2:8080")
			k.mss = 100
			k.handshake()
			k.send(true, get("/big"))
			segs := k.send(false, ok(strings.Repeat("b", 500)))
			c.drop(segs[3])
			k.send(true, get("/next"))
			k.send(false, ok("next"))
			k.close()
		},
		check: func(t *testing.T, r imported) {
			if r.st.NoAnswer != 1 || r.st.AnswerLost != 1 {
				t.Errorf("%s: want 1 without an answer, lost in the capture", r.st.Summary())
			}
		}},
	{name: "requests only (one direction)", pairs: []string{"GET /1 -> none", "POST /2 -> none"},
		build: func(c *tcap) {
			k := c.conn("10.0.0.1:40012", "10.0.0.2:8080")
			k.handshake()
			k.send(true, get("/1"))
			k.send(true, post("/2", "two"))
			k.close()
			c.segs = keep(c.segs, func(s *tseg) bool { return s.fromClient })
		},
		check: func(t *testing.T, r imported) {
			if r.st.NoAnswer != 2 || r.st.AnswerLost != 0 || len(r.pairs) == 2 && r.pairs[1].Body != "two" {
				t.Errorf("%s", r.st.Summary())
			}
		}},
	{name: "answers only (one direction)",
		skips: []string{"no-request: an answer (status 200)", "no-request: an answer (status 404)"},
		build: func(c *tcap) {
			k := c.conn("10.0.0.1:40013", "10.0.0.2:8080")
			k.handshake()
			k.send(true, get("/1"))
			k.send(false, ok("1"))
			k.send(true, get("/2"))
			k.send(false, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
			k.close()
			c.segs = keep(c.segs, func(s *tseg) bool { return !s.fromClient })
		}},
	{name: "joined mid-stream", pairs: []string{"GET /second -> 200", "GET /third -> 200"},
		build: func(c *tcap) {
			k := c.conn("10.0.0.1:40014", "10.0.0.2:8080")
			k.mss = 40
			k.handshake()
			first := k.send(true, post("/first", strings.Repeat("f", 100)))
			answer := k.send(false, ok("first"))
			k.send(true, get("/second"))
			k.send(false, ok("second"))
			k.send(true, get("/third"))
			k.send(false, ok("third"))
			k.close()
			// The capture began inside the first request's body.
			c.segs = c.segs[c.index(first[2]):]
			_ = answer
		},
		check: func(t *testing.T, r imported) {
			if r.st.Before != 1 || len(r.skips) != 0 {
				t.Errorf("%s; skips %q: want the first answer counted as before the capture", r.st.Summary(), r.skips)
			}
		}},
	{name: "cut by the snap length", pairs: []string{"GET /small -> 200"},
		skips: []string{"snaplen: POST /upload to 10.0.0.2:8080: its body is missing 951 bytes cut from packet 4 by the snap length (capture with tcpdump -s 0)"},
		build: func(c *tcap) {
			k := c.conn("10.0.0.1:40015", "10.0.0.2:8080")
			k.handshake()
			segs := k.send(true, post("/upload", strings.Repeat("u", 1000)))
			segs[0].snap = 200 // tcpdump -s 200
			k.send(false, ok("stored"))
			k.send(true, get("/small"))
			k.send(false, ok("small"))
			k.close()
		}},
	{name: "reset, and a connection never closed", pairs: []string{"GET /reset -> none", "GET /open -> none"},
		build: func(c *tcap) {
			k := c.conn("10.0.0.1:40016", "10.0.0.2:8080")
			k.handshake()
			k.send(true, get("/reset"))
			k.reset(false)
			o := c.conn("10.0.0.1:40017", "10.0.0.2:8080")
			o.handshake()
			o.send(true, get("/open"))
		}},
	{name: "TLS and other protocols", pairs: []string{"GET /plain -> 200"},
		skips: []string{"tls: a TLS connection to 10.0.0.2:443", "not-http: a connection to 10.0.0.3:6379 whose client's first bytes are 2a 31 0d 0a",
			"not-http: a connection to 10.0.0.4:25 whose client's first bytes are 45 48 4c 4f", "not-http: a connection to 10.0.0.4:25 whose server's (the client sent nothing) first bytes are 32 32 30 20"},
		build: func(c *tcap) {
			k := c.conn("10.0.0.1:40018", "10.0.0.2:443")
			k.handshake()
			k.send(true, "\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03client hello")
			k.send(false, "\x16\x03\x03\x00\x5a\x02\x00\x00\x56\x03\x03server hello")
			k.close()
			r := c.conn("10.0.0.1:40019", "10.0.0.3:6379")
			r.handshake()
			r.send(true, "*1\r\n$4\r\nPING\r\n")
			r.send(false, "+PONG\r\n")
			r.close()
			for _, client := range []string{"10.0.0.1:40022", "10.0.0.1:40023"} {
				m := c.conn(client, "10.0.0.4:25") // SMTP: the server speaks first
				m.handshake()
				m.send(false, "220 mail.example ESMTP\r\n")
				if client == "10.0.0.1:40022" {
					m.send(true, "EHLO client.example\r\n")
				}
				m.close()
			}
			p := c.conn("10.0.0.1:40020", "10.0.0.2:8080")
			p.handshake()
			p.send(true, get("/plain"))
			p.send(false, ok("plain"))
			p.close()
		},
		check: func(t *testing.T, r imported) {
			if r.lost != 1 || r.st.TLSPorts[443] != 1 || r.st.Skipped["not-http"] != 3 || !strings.Contains(r.st.Summary(), "tls 1 (TLS connections not decrypted, port 443)") {
				t.Errorf("%s: %d lost, want the TLS connection only", r.st.Summary(), r.lost)
			}
		}},
	{name: "a WebSocket upgrade", pairs: []string{"GET /before -> 200"},
		skips: []string{"upgrade: GET /ws (an upgrade to websocket) on a connection to 10.0.0.2:8080: what follows is not HTTP"},
		build: func(c *tcap) {
			k := c.conn("10.0.0.1:40021", "10.0.0.2:8080")
			k.handshake()
			k.send(true, get("/before"))
			k.send(false, ok("before"))
			k.send(true, "GET /ws HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: x\r\n\r\n")
			k.send(false, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n\x81\x05hello")
			k.send(true, "\x81\x85abcdGET / HTTP/1.1\r\n\r\n")
			k.close()
		}},
}

// keep is the segments f keeps.
func keep(ss []*tseg, f func(*tseg) bool) []*tseg {
	var out []*tseg
	for _, s := range ss {
		if f(s) {
			out = append(out, s)
		}
	}
	return out
}

// TestScenarios imports each capture of what real captures hold.
func TestScenarios(t *testing.T) { runScenarios(t, h1Scenarios) }

// runScenarios imports each scenario's capture and checks its pairs and
// skips.
func runScenarios(t *testing.T, scs []scenario) {
	for _, sc := range scs {
		t.Run(sc.name, func(t *testing.T) {
			c := newCapture(t)
			sc.build(c)
			r := importOne(t, c.pcap(layers.LinkTypeEthernet))
			if len(sc.pairs) == 0 {
				if r.err == nil && len(r.pairs) > 0 {
					t.Errorf("pairs %q, want none", shorts(r.pairs))
				}
			} else {
				wantPairs(t, r, sc.pairs...)
			}
			wantSkips(t, r, sc.skips...)
			if sc.check != nil {
				sc.check(t, r)
			}
		})
	}
}
