package pcap

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gopacket/gopacket/layers"
)

// FuzzConvert: any bytes, as a capture file: an error or pairs that open,
// never a panic. Seeded from testdata's captures.
func FuzzConvert(f *testing.F) {
	for _, name := range []string{"http1.pcap", "h2c.pcapng", "lossy.pcap.gz"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		importCaptures(t, Options{MaxBuffer: 1 << 20}, "fuzz.pcap", b)
	})
}

// FuzzStreams: any bytes from a client and a server, on a connection with
// or without its handshake, in segments of any size, some lost: never a
// panic, and every pair written opens. The HTTP/1.x and HTTP/2 readers
// get what a fuzzer makes of real messages.
func FuzzStreams(f *testing.F) {
	f.Add([]byte(get("/a")+post("/b", "xyz")), []byte(ok("a")+"HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n"), uint8(7), true, uint8(0))
	f.Add([]byte("POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"), []byte("HTTP/1.0 200 OK\r\n\r\nbody"), uint8(3), false, uint8(2))
	cw, sw := newH2W(f), newH2W(f)
	f.Add([]byte(preface+cw.settings()+cw.headers(1, false, 0, reqFields("POST", "/g", "content-type", "application/grpc")...)+cw.data(1, true, grpcMsg("m"))),
		[]byte(sw.settings()+sw.headers(1, false, 0, ":status", "200")+sw.data(1, false, "x")+sw.headers(1, true, 0, "grpc-status", "0")), uint8(20), true, uint8(0))
	f.Fuzz(func(t *testing.T, client, server []byte, mss uint8, handshake bool, lose uint8) {
		c := newCapture(t)
		k := c.conn("10.0.0.1:40000", "10.0.0.2:8080")
		k.mss = int(mss) + 1
		if handshake {
			k.handshake()
		}
		var sent []*tseg
		for len(client)+len(server) > 0 {
			n := min(len(client), 3*k.mss)
			sent = append(sent, k.send(true, string(client[:n]))...)
			client = client[n:]
			n = min(len(server), 3*k.mss)
			sent = append(sent, k.send(false, string(server[:n]))...)
			server = server[n:]
		}
		if lose > 0 && int(lose) < len(sent) {
			c.drop(sent[lose])
		}
		k.close()
		r := importCaptures(t, Options{MaxBuffer: 1 << 20}, "fuzz.pcap", c.pcap(layers.LinkTypeEthernet))
		if r.err != nil {
			t.Fatal(r.err)
		}
	})
}
