package loopback

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// This file is the fuzzed peer of the suite: a hostile server that
// answers each request with a case drawn from a catalogue of
// malformations (HTTP/1.1 here, HTTP/2 in internal/testutil/h2peer), each with
// the class a client must hold it to, and counts what it read and what
// it answered, so that a test can hold a run's summary against it. Its
// choices come from a Source: a seed in the suite, the fuzzer's bytes in
// a fuzz target.

// Class is how a client must take a hostile answer.
type Class uint8

// The classes of hostile answers.
const (
	// Good: a well-formed answer, or one whose leniency docs/strict.md
	// documents: it must count (status 200, or StatusLenient).
	Good Class = iota
	// Racy: the client may take it either way (a complete answer the
	// SUT then resets: the reset may come first). Status StatusLenient.
	Racy
	// Bad: a malformed answer, which must never count as a success.
	// Where it has a status, it is StatusBad, so that a summary that
	// counted one shows it.
	Bad
	// NoAnswer: no answer at all (a reset, a close, silence): the request
	// fails.
	NoAnswer
	NumClasses
)

func (c Class) String() string {
	return [...]string{"good", "racy", "bad", "no-answer", "?"}[min(c, NumClasses)]
}

// The statuses a hostile answer carries: a summary's status counts then
// say which cases a client counted.
const (
	StatusGood    = 200
	StatusLenient = 201 // a documented leniency, or a racy answer
	StatusBad     = 299 // a malformed answer: never in a summary's status counts
)

// Chooser makes a hostile peer's choices.
type Chooser interface {
	// Intn is a number in [0, n).
	IntN(n int) int
}

// Source is where a hostile peer's choices come from.
type Source interface {
	// For is the chooser of the nth request the peer read (from 1).
	For(n int64) Chooser
}

// Seeded is a Source drawn from a seed: the nth request's choices depend
// on the seed and n only, so that a seed replays the same cases in the
// same order of requests read.
type Seeded uint64

// For implements Source.
func (s Seeded) For(n int64) Chooser { return rand.New(rand.NewPCG(uint64(s), uint64(n))) }

// Script is a Source for tests of single cases: the nth request gets
// case Script[(n-1) mod len], of a catalogue whose weights are all 1.
type Script []int

// For implements Source.
func (s Script) For(n int64) Chooser { return scripted(s[(n-1)%int64(len(s))]) }

// scripted always chooses i (at most n-1).
type scripted int

func (s scripted) IntN(n int) int { return min(int(s), n-1) }

// FuzzBytes is a Source whose choices are a fuzzer's bytes, one a
// choice, in the order the peer makes them; 0 once they run out. It is
// safe for concurrent use.
type FuzzBytes struct {
	mu sync.Mutex // guards b
	b  []byte
}

// NewFuzzBytes is a FuzzBytes over b.
func NewFuzzBytes(b []byte) *FuzzBytes { return &FuzzBytes{b: b} }

// For implements Source: every request draws from the same bytes.
func (f *FuzzBytes) For(int64) Chooser { return f }

// Intn implements Chooser.
func (f *FuzzBytes) IntN(n int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.b) == 0 || n <= 1 {
		return 0
	}
	v := int(f.b[0])
	f.b = f.b[1:]
	if n > 256 && len(f.b) > 0 {
		v = v<<8 | int(f.b[0])
		f.b = f.b[1:]
	}
	return v % n
}

// Tally is what a hostile peer did: requests read, and the cases it
// answered them with, by class. It is safe for concurrent use.
type Tally struct {
	Read   atomic.Int64 // requests read whole
	Chosen [NumClasses]atomic.Int64
	mu     sync.Mutex // guards cases
	cases  []string   // the case of each request read, in the order read
}

// Chose notes the case of a request read.
func (t *Tally) Chose(name string, class Class) {
	t.Chosen[class].Add(1)
	t.mu.Lock()
	t.cases = append(t.cases, name)
	t.mu.Unlock()
}

// Cases are the cases chosen, in the order the requests were read.
func (t *Tally) Cases() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.cases...)
}

// Pick draws a case index from weights.
func Pick(ch Chooser, weights []int) int {
	total := 0
	for _, w := range weights {
		total += w
	}
	v := ch.IntN(total)
	for i, w := range weights {
		if v < w {
			return i
		}
		v -= w
	}
	return len(weights) - 1
}

// Case is a hostile answer, written on a W (an *H1Writer here, an
// HTTP/2 one in internal/testutil/h2peer).
type Case[W any] struct {
	Name   string
	Class  Class
	Weight int // how often a seed draws it
	// Answer writes the answer to the request read on w; it reports
	// whether the server reads on the connection (false closes it).
	Answer func(w W) (keep bool)
}

// Named returns the case of cases named name; it panics on a name they
// do not have.
func Named[W any](cases []Case[W], name string) Case[W] {
	for _, c := range cases {
		if c.Name == name {
			return c
		}
	}
	panic("loopback: no hostile case " + name)
}

// Only is cases, each once, weight 1 (for Script).
func Only[W any](cases ...Case[W]) []Case[W] {
	out := make([]Case[W], len(cases))
	for i, c := range cases {
		c.Weight = 1
		out[i] = c
	}
	return out
}

// weights are the cases' weights, for Pick.
func weights[W any](cases []Case[W]) []int {
	w := make([]int, len(cases))
	for i, c := range cases {
		w[i] = c.Weight
	}
	return w
}

// Draw is the case of the nth request read, drawn from src, noted in t.
func Draw[W any](cases []Case[W], src Source, t *Tally, n int64) (Case[W], Chooser) {
	ch := src.For(n)
	k := cases[Pick(ch, weights(cases))]
	t.Chose(k.Name, k.Class)
	return k, ch
}

// H1Case is a hostile HTTP/1.1 answer.
type H1Case = Case[*H1Writer]

// H1Writer is where a case writes its answer.
type H1Writer struct {
	Conn net.Conn
	Ch   Chooser
	Req  []byte
	quit <-chan struct{}
}

// Write writes b whole, or fails.
func (w *H1Writer) Write(b string) bool {
	_, err := w.Conn.Write([]byte(b))
	return err == nil
}

// Dribble writes b in pieces of 1 to 8 bytes, a millisecond apart.
func (w *H1Writer) Dribble(b string) bool {
	for len(b) > 0 {
		n := min(len(b), 1+w.Ch.IntN(8))
		if !w.Write(b[:n]) {
			return false
		}
		b = b[n:]
		if !w.Sleep(time.Millisecond) {
			return false
		}
	}
	return true
}

// Sleep waits d, or less when the server closes; false then.
func (w *H1Writer) Sleep(d time.Duration) bool { return sleep(d, w.quit) }

// sleep waits d, or less when quit closes; false then.
func sleep(d time.Duration, quit <-chan struct{}) bool {
	select {
	case <-time.After(d):
		return true
	case <-quit:
		return false
	}
}

// Reset closes the connection with an RST.
func (w *H1Writer) Reset() bool {
	if tc, ok := w.Conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	return false
}

// Stall reads until the client closes the connection (or 10 s, or the
// server closes): an answer that never comes.
func (w *H1Writer) Stall() bool {
	w.Conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 512)
	for {
		if _, err := w.Conn.Read(buf); err != nil {
			return false
		}
	}
}

// answer is an HTTP/1.1 answer with a Content-Length.
func answer(status int, extra, body string) string {
	return fmt.Sprintf("HTTP/1.1 %d X\r\n%sContent-Length: %d\r\n\r\n%s", status, extra, len(body), body)
}

// say is a case that writes one fixed answer and keeps the connection.
func say(s string) func(w *H1Writer) bool {
	return func(w *H1Writer) bool { return w.Write(s) }
}

// sayClose writes s, then closes the connection.
func sayClose(s string) func(w *H1Writer) bool {
	return func(w *H1Writer) bool { w.Write(s); return false }
}

// H1Cases is the catalogue of hostile HTTP/1.1 answers: bad status
// lines, conflicting lengths, broken chunking, bare CR and LF, obs-fold,
// huge heads, 1xx storms, 101 without an upgrade, early closes, resets,
// dribbles, extra answers, and the leniencies docs/strict.md keeps.
var H1Cases = []H1Case{
	// Well-formed answers, each a way of framing one.
	{"ok", Good, 4, say(answer(StatusGood, "", "ok"))},
	{"ok-chunked", Good, 3, say("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;ext=1\r\no\r\n1\r\nk\r\n0\r\nX-Trailer: 1\r\n\r\n")},
	{"ok-close-delimited", Good, 2, sayClose("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nok")},
	{"ok-http10", Good, 2, sayClose("HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok")},
	{"ok-interim", Good, 3, say("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\n" + answer(StatusGood, "", "ok"))},
	{"ok-100-interim", Good, 1, say(strings.Repeat("HTTP/1.1 100 Continue\r\n\r\n", 100) + answer(StatusGood, "", "ok"))},
	{"ok-obs-fold", Good, 2, say(answer(StatusGood, "X-Folded: a\r\n b\r\n", "ok"))},
	{"ok-no-reason", Good, 2, say("HTTP/1.1 200\r\nContent-Length: 2\r\n\r\nok")},
	{"ok-big-head", Good, 1, say(answer(StatusGood, "X-Big: "+strings.Repeat("b", 8<<10)+"\r\n", "ok"))},
	{"ok-dribble", Good, 2, func(w *H1Writer) bool {
		return w.Dribble("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n")
	}},
	{"ok-then-extra", Good, 2, say(answer(StatusGood, "", "ok") + answer(StatusBad, "", "extra"))},
	{"ok-then-close", Good, 2, sayClose(answer(StatusGood, "", "ok"))},
	// Leniencies kept (docs/strict.md).
	{"lenient-same-lengths", Good, 2, say(answer(StatusLenient, "Content-Length: 2\r\n", "ok"))},
	{"lenient-length-list", Good, 2, say("HTTP/1.1 201 X\r\nContent-Length: 2, 2\r\n\r\nok")},
	{"lenient-space-in-name", Good, 2, say(answer(StatusLenient, "X Odd: 1\r\n", "ok"))},
	{"lenient-bare-lf-line", Good, 1, say("HTTP/1.1 201 X\r\nX-A: 1\nContent-Length: 2\r\n\r\nok")},
	{"lenient-length-and-chunked", Good, 2, say("HTTP/1.1 201 X\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n")},
	// Racy: a complete answer, then a reset that may overtake it.
	{"answer-then-reset", Racy, 2, func(w *H1Writer) bool { w.Write(answer(StatusLenient, "", "ok")); return w.Reset() }},
	// Malformed answers.
	{"version-2.0", Bad, 2, say("HTTP/2.0 299 X\r\nContent-Length: 2\r\n\r\nok")},
	{"version-1.2", Bad, 2, say("HTTP/1.2 299 X\r\nContent-Length: 2\r\n\r\nok")},
	{"status-extra-space", Bad, 2, say("HTTP/1.1  299 X\r\nContent-Length: 2\r\n\r\nok")},
	{"leading-crlf", Bad, 2, say("\r\n" + answer(StatusBad, "", "ok"))},
	{"status-000", Bad, 2, say("HTTP/1.1 000 X\r\nContent-Length: 2\r\n\r\nok")},
	{"status-600", Bad, 1, say("HTTP/1.1 600 X\r\nContent-Length: 2\r\n\r\nok")},
	{"status-letters", Bad, 1, say("HTTP/1.1 2x9 X\r\nContent-Length: 2\r\n\r\nok")},
	{"no-status-line", Bad, 1, sayClose("ok\r\n\r\n")},
	{"lengths-conflict", Bad, 2, say(answer(StatusBad, "Content-Length: 3\r\n", "ok"))},
	{"length-negative", Bad, 1, say("HTTP/1.1 299 X\r\nContent-Length: -2\r\n\r\nok")},
	{"space-before-colon", Bad, 2, say("HTTP/1.1 299 X\r\nContent-Length : 2\r\n\r\nok")},
	{"no-colon", Bad, 1, say(answer(StatusBad, "X-Broken\r\n", "ok"))},
	{"bare-lf", Bad, 2, say("HTTP/1.1 299 X\nContent-Length: 2\n\nok")},
	{"bare-cr", Bad, 2, say(answer(StatusBad, "X-A: a\rb\r\n", "ok"))},
	{"nul-in-value", Bad, 1, say(answer(StatusBad, "X-A: a\x00b\r\n", "ok"))},
	{"fold-in-length", Bad, 1, say("HTTP/1.1 299 X\r\nContent-Length: 2\r\n 2\r\n\r\nok")},
	{"chunk-bad-size", Bad, 2, say("HTTP/1.1 299 X\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nok\r\n0\r\n\r\n")},
	{"chunk-no-crlf", Bad, 2, say("HTTP/1.1 299 X\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nokXX0\r\n\r\n")},
	{"chunk-truncated", Bad, 2, sayClose("HTTP/1.1 299 X\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n")},
	{"coding-gzip", Bad, 1, sayClose("HTTP/1.1 299 X\r\nTransfer-Encoding: gzip\r\n\r\nok")},
	{"coding-gzip-chunked", Bad, 1, say("HTTP/1.1 299 X\r\nTransfer-Encoding: gzip, chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n")},
	{"coding-chunked-gzip", Bad, 1, sayClose("HTTP/1.1 299 X\r\nTransfer-Encoding: chunked, gzip\r\n\r\n2\r\nok\r\n0\r\n\r\n")},
	{"huge-head", Bad, 1, say(answer(StatusBad, "X-Huge: "+strings.Repeat("h", 64<<10)+"\r\n", "ok"))},
	{"interim-storm", Bad, 1, say(strings.Repeat("HTTP/1.1 100 Continue\r\n\r\n", 101) + answer(StatusBad, "", "ok"))},
	{"switching-unasked", Bad, 2, say("HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n")},
	{"early-close", Bad, 2, sayClose("HTTP/1.1 299 X\r\nContent-Length: 10\r\n\r\nok")},
	{"head-cut", Bad, 1, sayClose("HTTP/1.1 299 X\r\nContent-Le")},
	// No answer.
	{"reset", NoAnswer, 2, func(w *H1Writer) bool { return w.Reset() }},
	{"close", NoAnswer, 2, func(w *H1Writer) bool { return false }},
	{"stall", NoAnswer, 1, func(w *H1Writer) bool { return w.Stall() }},
}

// HostileH1 is the fuzzed HTTP/1.1 peer: a loopback server that answers
// the nth request it reads with a case of Cases drawn by Source, and
// tallies what it did.
type HostileH1 struct {
	Cases  []H1Case
	Source Source
	Tally  Tally
	addr   string
	conns  *atomic.Int64
}

// NewHostileH1 starts a hostile HTTP/1.1 server answering with cases
// drawn from src, closed when the test ends.
func NewHostileH1(t testing.TB, cases []H1Case, src Source) *HostileH1 {
	t.Helper()
	s := &HostileH1{Cases: cases, Source: src}
	s.addr, s.conns = ServeClosing(t, s.serve)
	return s
}

// URL is "http://127.0.0.1:PORT".
func (s *HostileH1) URL() string { return "http://" + s.addr }

// Conns counts the connections accepted.
func (s *HostileH1) Conns() int64 { return s.conns.Load() }

func (s *HostileH1) serve(c net.Conn, quit <-chan struct{}) {
	br := bufio.NewReader(c)
	for {
		req, err := readRawRequest(br)
		if err != nil {
			return
		}
		k, ch := Draw(s.Cases, s.Source, &s.Tally, s.Tally.Read.Add(1))
		if !k.Answer(&H1Writer{Conn: c, Ch: ch, Req: req, quit: quit}) {
			return
		}
	}
}

// Describe lists cases chosen as "n:name" lines, for a failing seed's
// report.
func Describe(cases []string) string {
	var b bytes.Buffer
	for i, c := range cases {
		fmt.Fprintf(&b, " %d:%s", i+1, c)
	}
	return b.String()
}
