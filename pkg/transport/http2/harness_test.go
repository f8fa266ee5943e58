package http2

import (
	"testing"
	"time"

	"github.com/replay-dev/replay/internal/testutil/fixture"
	"github.com/replay-dev/replay/internal/testutil/h2peer"
	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/transport"
	"github.com/replay-dev/replay/pkg/transport/conn"
)

// h2c is HTTP/2 alone as a transport.Transport, for the tests: cleartext
// by prior knowledge (as with --h2c), one Line per VU with a Client on it.
// A connection that does not speak HTTP/2 fails the request as no_http2;
// choosing a protocol and the retry of an unprocessed request are
// transport/negotiate's.
type h2c struct {
	d *conn.Dialer
	a transport.AnswerOptions
}

var _ transport.Transport = (*h2c)(nil)

// newH2C is the h2c transport with o (a 5s timeout unless it says) and a.
func newH2C(t testing.TB, o conn.Options, a transport.AnswerOptions) *h2c {
	t.Helper()
	if o.Timeout == 0 {
		o.Timeout = 5 * time.Second
	}
	d, err := conn.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return &h2c{d: d, a: a}
}

// checkedClient is a client (VU 0) of tr, checked against the one-line
// file line, with that line's pair; the client closes with the test.
func checkedClient(t *testing.T, tr *h2c, line string) (transport.Client, *rrpair.Pair) {
	t.Helper()
	f := fixture.OpenLines(t, line)
	p := &rrpair.Pair{}
	if err := f.NewCursor().Decode(0, p); err != nil {
		t.Fatal(err)
	}
	if err := tr.Check(f); err != nil {
		t.Fatal(err)
	}
	c := tr.NewClient(0, func() int64 { return time.Now().UnixNano() })
	t.Cleanup(c.Close)
	return c, p
}

func (t *h2c) Check(f *rrpair.File) error { return t.d.Check(f) }

func (t *h2c) NewClient(_ int, now func() int64) transport.Client {
	l := t.d.NewLine(now)
	return &h2cClient{line: l, c: NewClient(l, t.a)}
}

func (t *h2c) AppendWire(dst []byte, req *rrpair.Request) (string, []byte) {
	r := t.d.Route(req)
	return r.Addr, AppendRequest(dst, req, r.HTTPS, r.Host)
}

// prior is what an h2c client asks of a connection.
var prior = conn.Protocols{Cleartext: Proto, Settles: Proto}

type h2cClient struct {
	line *conn.Line
	c    *Client
	sent bool // the last request went on a stream
}

func (c *h2cClient) Do(req *rrpair.Request, pair *rrpair.Pair, res *result.Result) result.Answer {
	c.sent = false
	dst := c.line.Route(req)
	cn, kind := c.c.Connect(&dst, res, &prior)
	if kind == result.ErrNone && cn.Proto != Proto {
		kind = result.ErrNoHTTP2
	}
	if kind != result.ErrNone {
		res.Err = kind
		res.End = c.c.now()
		res.Sent = res.End
		return nil
	}
	c.sent = true
	return c.c.Do(cn, dst.Host, req, pair, res, pair.IsGRPC())
}

func (c *h2cClient) Redirect(req *rrpair.Request) bool { return c.sent && c.c.Redirect(req) }

func (c *h2cClient) Failure() (addr string, head, body []byte, err error) {
	if c.sent {
		return c.c.Failure()
	}
	addr, err = c.line.Failure()
	return addr, nil, nil, err
}

func (c *h2cClient) Interrupt() { c.line.Interrupt() }
func (c *h2cClient) Close()     { c.line.Close() }

// runPool runs the pairs of lines once over vus VUs with the h2c
// transport with o, as a run does.
func runPool(t testing.TB, vus int, o conn.Options, lines ...string) (*fixture.Collect, error) {
	t.Helper()
	return h2peer.RunPool(t, newH2C(t, o, transport.AnswerOptions{}), vus, lines...)
}
