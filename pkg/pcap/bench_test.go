package pcap

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/gopacket/gopacket/layers"
)

var (
	benchOnce    sync.Once
	benchCapture []byte
	benchPairs   int
)

// benchmarkCapture is a capture of the shape a busy service's is: 50
// keep-alive connections at a time, each carrying 40 exchanges (a GET
// with a browser's headers answered with a JSON body of about 400 bytes,
// or a POST of a JSON body answered 201), interleaved, with the ACKs; 20
// rounds of them: 40,000 pairs, about 40 MB.
func benchmarkCapture(b *testing.B) []byte {
	benchOnce.Do(func() {
		c := newCapture(b)
		headers := "Host: shop.example:8080\r\nUser-Agent: Mozilla/5.0 (X11; Linux x86_64) Gecko/20100101 Firefox/146.0\r\n" +
			"Accept: application/json\r\nAccept-Language: en-US,en;q=0.5\r\nAccept-Encoding: gzip, deflate\r\n" +
			"Cookie: sid=8f14e45fceea167a5a36dedd4bea2543; theme=dark\r\nX-Request-Id: 0b7d4c1e-4f1a-4c55-9d3e-2f6a1c9e8b77\r\n"
		answer := `{"id":%d,"name":"product %d","price":{"amount":1999,"currency":"EUR"},"stock":12,"tags":["a","b","c"],` +
			`"description":"` + strings.Repeat("lorem ipsum ", 22) + `"}`
		n := 0
		for round := range 20 {
			conns := make([]*tconn, 50)
			for i := range conns {
				conns[i] = c.conn(fmt.Sprintf("10.1.%d.%d:%d", round, i, 40000+i), "10.0.0.5:8080")
				conns[i].handshake()
			}
			for range 40 {
				for _, k := range conns {
					n++
					if n%4 == 0 {
						body := fmt.Sprintf(`{"product":%d,"quantity":1,"note":"%s"}`, n, strings.Repeat("x", 80))
						k.send(true, fmt.Sprintf("POST /cart/items HTTP/1.1\r\n%sContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", headers, len(body), body))
						k.send(false, "HTTP/1.1 201 Created\r\nContent-Length: 0\r\nLocation: /cart/items/1\r\n\r\n")
						continue
					}
					k.send(true, fmt.Sprintf("GET /products/%d?fields=all HTTP/1.1\r\n%s\r\n", n, headers))
					body := fmt.Sprintf(answer, n, n)
					k.send(false, fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\nCache-Control: max-age=60\r\n\r\n%s", len(body), body))
				}
			}
			for _, k := range conns {
				k.close()
			}
		}
		benchCapture, benchPairs = c.pcap(layers.LinkTypeEthernet), n
	})
	return benchCapture
}

// BenchmarkConvert: MB of capture read a second, on one core (go test
// -bench Convert -cpu 1 ./pkg/pcap); the target is at least 50 MB/s.
func BenchmarkConvert(b *testing.B) {
	capture := benchmarkCapture(b)
	b.SetBytes(int64(len(capture)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		st, err := Convert([]Source{{Name: "bench.pcap", R: bytes.NewReader(capture)}}, io.Discard, Options{}, func(string, int, string, bool) {})
		if err != nil || st.Written != benchPairs {
			b.Fatalf("%v: %d pairs of %d", err, st.Written, benchPairs)
		}
	}
	b.ReportMetric(float64(benchPairs)*float64(b.N)/b.Elapsed().Seconds(), "pairs/s")
}
