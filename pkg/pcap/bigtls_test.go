package pcap

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// TestWriteBigTLSCapture writes a large TLS capture and its key log for
// the speed check of --keylog against tshark (scripts/bigcapture.sh with
// TLS=1; not run otherwise): REPLAY_BIG_TLS names the directory it writes
// tls.pcap and keys.log to, REPLAY_BIG_TLS_MB the capture's size in MB
// (default 200). Real TLS from Go's client to Go's server on loopback,
// through the recording proxy, streamed to the file: connections of
// TLS 1.3 and TLS 1.2 (AES-GCM, ChaCha20-Poly1305), HTTP/1.1 and HTTP/2,
// four at once, 100 requests each: small GETs, POSTs of 2 KiB, one GET in
// eight answered with 64 KiB.
func TestWriteBigTLSCapture(t *testing.T) {
	dir := os.Getenv("REPLAY_BIG_TLS")
	if dir == "" {
		t.Skip("REPLAY_BIG_TLS is not set: this writes the capture of scripts/bigcapture.sh TLS=1")
	}
	mb, _ := strconv.Atoi(os.Getenv("REPLAY_BIG_TLS_MB"))
	if mb <= 0 {
		mb = 200
	}
	f, err := os.Create(filepath.Join(dir, "tls.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	keys, err := os.Create(filepath.Join(dir, "keys.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer keys.Close()
	w := pcapgo.NewWriterNanos(f)
	if err := w.WriteFileHeader(262144, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	srv := newTLSServer(t, &tls.Config{})
	srv.Config.ErrorLog = nil
	proxy := newRecProxy(t, srv.Listener.Addr().String())
	c := newCapture(t)
	conns := map[int]*tconn{}
	var written int64
	write := func() {
		for _, s := range c.segs {
			for _, frame := range c.frames(layers.LinkTypeEthernet, s) {
				if err := w.WritePacket(gopacket.CaptureInfo{Timestamp: s.ts, CaptureLength: len(frame), Length: len(frame)}, frame); err != nil {
					t.Fatal(err)
				}
				written += int64(len(frame) + 16)
			}
		}
		c.segs, c.built = c.segs[:0], c.built[:0]
	}
	stopped := false
	proxy.sink = func(e recEvent) {
		if stopped {
			return
		}
		k := conns[e.conn]
		if k == nil {
			k = c.conn(fmt.Sprintf("10.%d.%d.1:%d", e.conn>>8&255, e.conn&255, 40000+e.conn%20000), "10.0.0.2:443")
			k.mss = 16384
			k.handshake()
			conns[e.conn] = k
		}
		k.send(e.fromClient, string(e.data))
		write()
	}
	var keyMu sync.Mutex
	keyLog := writerFunc(func(b []byte) (int, error) {
		keyMu.Lock()
		defer keyMu.Unlock()
		return keys.Write(b)
	})
	kinds := []func(*tls.Config){
		nil,
		func(c *tls.Config) {
			c.MaxVersion, c.CipherSuites = tls.VersionTLS12, []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256}
		},
		func(c *tls.Config) {
			c.MaxVersion, c.CipherSuites = tls.VersionTLS12, []uint16{tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305}
		},
	}
	big := strings.Repeat("p", 2048)
	start := time.Now()
	requests := 0
	for n := 0; ; n++ {
		proxy.mu.Lock()
		done := written >= int64(mb)<<20
		proxy.mu.Unlock()
		if done {
			break
		}
		var wg sync.WaitGroup
		for i := range 4 {
			wg.Go(func() {
				tc := &tls.Config{InsecureSkipVerify: true, ServerName: "shop.example", KeyLogWriter: keyLog}
				if k := kinds[(n*4+i)%3]; k != nil {
					k(tc)
				}
				var p http.Protocols
				if (n+i)%2 == 0 {
					p.SetHTTP2(true)
				} else {
					p.SetHTTP1(true)
				}
				tr := &http.Transport{TLSClientConfig: tc, Protocols: &p}
				defer tr.CloseIdleConnections()
				client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
				for j := range 100 {
					var res *http.Response
					var err error
					if j%8 == 7 {
						res, err = client.Get("https://" + proxy.ln.Addr().String() + "/big?n=" + strconv.Itoa(j))
					} else if j%4 == 3 {
						res, err = client.Post("https://"+proxy.ln.Addr().String()+"/cart/items?n="+strconv.Itoa(j), "text/plain", strings.NewReader(big))
					} else {
						res, err = client.Get("https://" + proxy.ln.Addr().String() + "/products/" + strconv.Itoa(n*1000+j) + "?fields=all")
					}
					if err != nil {
						t.Error(err)
						return
					}
					io.Copy(io.Discard, res.Body)
					res.Body.Close()
				}
			})
		}
		wg.Wait()
		requests += 400
		if t.Failed() {
			return
		}
	}
	tr := time.Since(start)
	proxy.mu.Lock()
	for i := range proxy.conns {
		if k := conns[i]; k != nil {
			k.close()
		}
	}
	write()
	stopped = true
	proxy.mu.Unlock()
	t.Logf("wrote %d MiB, %d requests on %d connections in %v", written>>20, requests, proxy.conns, tr.Round(time.Second))
}

// writerFunc is an io.Writer of a function.
type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }
