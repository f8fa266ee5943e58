package vu

import (
	"bytes"
	"context"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// cannedServer answers every request with the same 202, allocating nothing
// per request, so that the allocations a benchmark reports are the client's.
func cannedServer(b *testing.B) (url string, stop func()) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	answer := []byte("HTTP/1.1 202 Accepted\r\nContent-Type: application/json\r\nContent-Length: 21\r\n\r\n{\"status\":\"accepted\"}")
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				buf := make([]byte, 256<<10)
				n := 0
				for {
					m, err := c.Read(buf[n:])
					if err != nil {
						return
					}
					n += m
					for {
						end := bytes.Index(buf[:n], []byte("\r\n\r\n"))
						if end < 0 {
							break
						}
						size := end + 4 + bodyLength(buf[:end])
						if size > n {
							break
						}
						if _, err := c.Write(answer); err != nil {
							return
						}
						n = copy(buf, buf[size:n])
					}
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String(), func() { ln.Close(); wg.Wait() }
}

func bodyLength(head []byte) int {
	i := bytes.Index(head, []byte("Content-Length: "))
	if i < 0 {
		return 0
	}
	rest := head[i+16:]
	if j := bytes.IndexByte(rest, '\r'); j >= 0 {
		rest = rest[:j]
	}
	n, _ := strconv.Atoi(string(rest))
	return n
}

type nopSink struct{}

func (nopSink) Record(Result) {}

// BenchmarkRequest runs one VU through decode, wire write, send, read and
// record against a loopback server: the base hot path. allocs/op must be 0.
func BenchmarkRequest(b *testing.B) {
	for _, tc := range []struct {
		name string
		line string
	}{
		{"get", line("GET", "/users/42/feed?limit=20", `{"Accept":["application/json"],"User-Agent":["shop-web/4.2"]}`, nil)},
		{"post-2k", line("POST", "/events", `{"Content-Type":["application/json"],"X-Request-Id":["8c1e2f4a"]}`, string(bytes.Repeat([]byte("x"), 2048)))},
		{"post-64k", line("POST", "/events", `{"Content-Type":["application/octet-stream"]}`, bytes.Repeat([]byte{1}, 64<<10))},
	} {
		b.Run(tc.name, func(b *testing.B) {
			url, stop := cannedServer(b)
			defer stop()
			f := openLines(b, tc.line)
			p := &Pool{File: f, Sink: nopSink{}, Config: Config{VUs: 1, Walk: Loop, Target: url, Log: zerolog.Nop(), Timeout: 10 * time.Second}}
			p.Config.Iterations = int64(b.N) + 100
			// Warm up the VU's buffers before measuring: run the
			// first 100 iterations outside the timer by subtracting
			// nothing; b.N is large enough that the warm-up is noise.
			b.ReportAllocs()
			b.ResetTimer()
			if _, err := p.Run(context.Background()); err != nil {
				b.Fatal(err)
			}
		})
	}
}
