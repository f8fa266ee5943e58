package conn

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"

	"github.com/replay-dev/replay/pkg/result"
)

// exchangeLine is a Line connected to a loopback server that handles each
// connection with handle; Exchange can carry requests on it.
func exchangeLine(t *testing.T, handle func(net.Conn), o Options) *Line {
	t.Helper()
	l, dst, _, _ := testLine(t, handle, o)
	var none Protocols
	var res result.Result
	connect(t, l, &dst, &none, &res)
	if !l.CanExchange() {
		t.Fatal("CanExchange is false on a plain TCP connection of the Linux dialer")
	}
	return l
}

// Exchange writes the whole request, then reads what has come of the
// answer; with Timings it says when the write returned. The next Exchange
// on the same connection does the same.
func TestExchange(t *testing.T) {
	req := []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	got := make(chan []byte, 2)
	l := exchangeLine(t, func(c net.Conn) {
		for {
			b := make([]byte, len(req))
			if _, err := io.ReadFull(c, b); err != nil {
				return
			}
			got <- b
			time.Sleep(10 * time.Millisecond) // the client waits for the answer
			c.Write([]byte("answer"))
		}
	}, Options{Timings: true})
	for i := range 2 {
		l.Arm()
		in := make([]byte, 64)
		e := l.Exchange(req, in)
		if e.WriteErr != nil || e.ReadErr != nil || e.Written != len(req) || e.WroteAt == 0 {
			t.Fatalf("exchange %d: %+v; want the whole request written, a write time, no error", i, e)
		}
		if string(in[:e.Read]) != "answer" {
			t.Errorf("exchange %d read %q, want %q", i, in[:e.Read], "answer")
		}
		if b := <-got; !bytes.Equal(b, req) {
			t.Errorf("exchange %d: the server read %q, want %q", i, b, req)
		}
	}
}

// An answer that does not come in time fails the read as a timeout; a SUT
// that closes after the request reads as the end of the stream (Read 0,
// no error).
func TestExchangeTimeoutAndEOF(t *testing.T) {
	req := []byte("GET / HTTP/1.1\r\n\r\n")
	l := exchangeLine(t, quiet, Options{Timeout: 50 * time.Millisecond})
	l.Arm()
	start := time.Now()
	e := l.Exchange(req, make([]byte, 64))
	if e.Written != len(req) || e.WriteErr != nil || l.Kind(e.ReadErr) != result.ErrTimeout || time.Since(start) > 5*time.Second {
		t.Errorf("silent SUT: %+v (%v); want the request written, then a timeout", e, l.Kind(e.ReadErr))
	}

	l = exchangeLine(t, func(c net.Conn) {
		io.ReadFull(c, make([]byte, len(req)))
		c.Close()
	}, Options{})
	l.Arm()
	if e := l.Exchange(req, make([]byte, 64)); e.Written != len(req) || e.WriteErr != nil || e.ReadErr != nil || e.Read != 0 {
		t.Errorf("SUT that closes: %+v; want the request written, 0 bytes read, no error", e)
	}
}

// After Interrupt nothing is written: the write fails as a cancellation.
func TestExchangeAfterInterrupt(t *testing.T) {
	l := exchangeLine(t, quiet, Options{})
	l.Interrupt()
	l.Arm()
	e := l.Exchange([]byte("GET / HTTP/1.1\r\n\r\n"), make([]byte, 64))
	if e.Written != 0 || l.Kind(e.WriteErr) != result.ErrCancelled {
		t.Errorf("after Interrupt: %+v (%v); want nothing written, cancelled", e, l.Kind(e.WriteErr))
	}
}

// A request larger than the socket takes at once comes back partly
// written, without an error and without a read: its caller writes the
// rest and reads the usual way.
func TestExchangePartialWrite(t *testing.T) {
	hold := make(chan struct{})
	l := exchangeLine(t, func(c net.Conn) { <-hold }, Options{})
	t.Cleanup(func() { close(hold) }) // before the Line closes and the server waits
	big := make([]byte, 64<<20)
	l.Arm()
	e := l.Exchange(big, make([]byte, 64))
	if e.Written <= 0 || e.Written >= len(big) || e.WriteErr != nil || e.ReadErr != nil || e.Read != 0 {
		t.Errorf("64 MiB to a SUT that does not read: %+v; want part written, no error, nothing read", e)
	}
}

// Arm moves a busy connection's deadline only when it is nearer than
// --timeout: a request begun later than the last one is still given the
// whole --timeout, never cut by the deadline an earlier request set.
func TestArmGivesEachRequestItsTimeout(t *testing.T) {
	const timeout = 300 * time.Millisecond
	l := exchangeLine(t, func(c net.Conn) {
		b := make([]byte, 1)
		if _, err := c.Read(b); err != nil {
			return
		}
		c.Write([]byte("a")) // the first request is answered, then nothing
		io.Copy(io.Discard, c)
	}, Options{Timeout: timeout})
	l.Arm()
	if e := l.Exchange([]byte("1"), make([]byte, 8)); e.WriteErr != nil || e.ReadErr != nil || e.Read != 1 {
		t.Fatalf("first exchange: %+v", e)
	}
	time.Sleep(timeout * 2 / 3) // the first request's deadline is now nearer than --timeout
	l.Arm()
	start := time.Now()
	e := l.Exchange([]byte("2"), make([]byte, 8))
	took := time.Since(start)
	if l.Kind(e.ReadErr) != result.ErrTimeout || took < timeout || took > 5*time.Second {
		t.Errorf("silent answer %v after the last request: %+v (%v) after %v; want a timeout after %v", timeout*2/3, e, l.Kind(e.ReadErr), took, timeout)
	}
}
