package sink

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/redis/go-redis/v9"
	"github.com/replay-dev/replay/internal/testutil/daemons"
	"github.com/replay-dev/replay/pkg/e2e"
	"github.com/rs/zerolog"
)

func TestJSONID(t *testing.T) {
	for in, want := range map[string]string{
		`{"specversion":"1.0","id":"rp1-1-0-0-0-0","data":{"id":"inner"}}`: "rp1-1-0-0-0-0",
		`{"data":{"id":"inner"},"type":"id","id" : "x"}`:                   "x",
		`{"type":"click"}`: "",
		`[{"id":"x"}]`:     "",
		`{"id":7}`:         "",
	} {
		if got := string(jsonID([]byte(in))); got != want {
			t.Errorf("%s: got %q, want %q", in, got, want)
		}
	}
}

// seen records what a sink reports.
type seen struct {
	mu     sync.Mutex
	events []string // "stage id"
}

func (s *seen) Seen(id []byte, stage string, _ time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, stage+" "+string(id))
}

func (s *seen) list() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.events...)
}

func TestHTTPSink(t *testing.T) {
	rec := &seen{}
	sink, err := ListenHTTP("127.0.0.1:0", rec, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	post := func(path, body string, headers ...string) int {
		req, _ := http.NewRequest("POST", sink.URL()+path, strings.NewReader(body))
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	codes := []int{
		post("/", `{}`, "ce-id", "a", "ce-specversion", "1.0"),                                                             // binary mode
		post("/stage/settled", `{"specversion":"1.0","id":"b","data":{}}`, "Content-Type", "application/cloudevents+json"), // structured
		post("/hook", `x`, "X-Replay-Id", "c", "X-Replay-Stage", "queued"),
		post("/stage/settled", `{"id":"b"}`), // a duplicate delivery is still a delivery
		post("/", `no id`),
	}
	if want := []int{204, 204, 204, 204, 400}; fmt.Sprint(codes) != fmt.Sprint(want) {
		t.Errorf("status %v, want %v", codes, want)
	}
	if got, want := rec.list(), []string{"delivered a", "settled b", "queued c", "settled b"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("seen %v, want %v", got, want)
	}
}

func TestRedisSink(t *testing.T) {
	url := daemons.Redis(t)
	opt, _ := redis.ParseURL(url)
	client := redis.NewClient(opt)
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, spec := range []string{url + "?list=done", url + "?stream=events&stage=stored", url + "?stream=grouped&group=replay"} {
		t.Run(spec[strings.IndexByte(spec, '?'):], func(t *testing.T) {
			rs, err := ParseRedis(spec)
			if err != nil {
				t.Fatal(err)
			}
			rec := &seen{}
			openCtx, opened := context.WithTimeout(ctx, 5*time.Second)
			c, err := rs.Open(openCtx, rec) // ready: nothing pushed after it is missed
			opened()                        // bounds the opening only
			if err != nil {
				t.Fatal(err)
			}
			push := func(v string) {
				var err error
				if rs.List != "" {
					err = client.LPush(ctx, rs.List, v).Err()
				} else {
					err = client.XAdd(ctx, &redis.XAddArgs{Stream: rs.Stream, Values: map[string]any{"id": v}}).Err()
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			push("e1")
			push(`{"specversion":"1.0","id":"e2"}`)
			push("e1") // delivered twice
			deadline := time.Now().Add(10 * time.Second)
			for len(rec.list()) < 3 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			closed := make(chan error, 1)
			began := time.Now()
			go func() { closed <- c.Close() }()
			select {
			case err := <-closed:
				if err != nil {
					t.Fatalf("Close: %v", err)
				}
				t.Logf("closed in %s", time.Since(began))
			case <-time.After(5 * time.Second):
				t.Fatal("Close did not return in 5s")
			}
			want := []string{rs.Stage + " e1", rs.Stage + " e2", rs.Stage + " e1"}
			if got := rec.list(); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("seen %v, want %v", got, want)
			}
		})
	}
}

func TestParseRedis(t *testing.T) {
	for _, bad := range []string{"redis://h:1", "redis://h:1?list=a&stream=b", "redis://h:1?list=a&group=g", "redis://h:1?queue=a", "http://h?list=a", "redis://h:1?list=%zz"} {
		if _, err := ParseRedis(bad); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	rs, err := ParseRedis("redis://:pw@h:1/3?stream=orders%2Fpaid&group=g&field=data&stage=paid+ok")
	if err != nil {
		t.Fatal(err)
	}
	if rs.URL != "redis://:pw@h:1/3" || rs.Stream != "orders/paid" || rs.Group != "g" || rs.Field != "data" || rs.Stage != "paid ok" {
		t.Errorf("got %+v", rs)
	}
	if rs.opt == nil || rs.opt.Addr != "h:1" || rs.opt.DB != 3 || rs.opt.Password != "pw" {
		t.Errorf("options %+v", rs.opt)
	}
}

func TestNATSSink(t *testing.T) {
	url := daemons.NATS(t)
	rec := &seen{}
	c, pub := openNATS(t, url+"?subject=orders.*&stage=settled", rec)
	pub.Publish("orders.paid", []byte("e1"))
	pub.Publish("orders.shipped", []byte(`{"specversion":"1.0","id":"e2"}`))
	pub.PublishMsg(&nats.Msg{Subject: "orders.paid", Header: nats.Header{"ce-id": {"e3"}}, Data: []byte("payload")})
	pub.Publish("other.subject", []byte("e4"))
	pub.Flush()
	deadline := time.Now().Add(5 * time.Second)
	for len(rec.list()) < 3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if got, want := rec.list(), []string{"settled e1", "settled e2", "settled e3"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("seen %v, want %v", got, want)
	}
	for _, bad := range []string{"nats://h:1", "http://h:1?subject=a", "nats://h:1?subject=a&queue=b"} {
		if _, err := ParseNATS(bad); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// openNATS opens a NATS sink on arg for r, and a connection to publish to
// its server (closed with the test).
func openNATS(t *testing.T, arg string, r e2e.Receiver) (*NATSConsumer, *nats.Conn) {
	t.Helper()
	ns, err := ParseNATS(arg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := ns.Open(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := nats.Connect(strings.SplitN(arg, "?", 2)[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pub.Close)
	return c, pub
}

// slow is a receiver that takes its time, so that messages wait in the
// client.
type slow struct{ seen }

func (s *slow) Seen(id []byte, stage string, at time.Time) {
	time.Sleep(2 * time.Millisecond)
	s.seen.Seen(id, stage, at)
}

// TestNATSSinkCloseDrains closes a NATS sink right after a burst: the
// messages the server sent before are all reported, none dropped.
func TestNATSSinkCloseDrains(t *testing.T) {
	url := daemons.NATS(t)
	rec := &slow{}
	c, pub := openNATS(t, url+"?subject=burst", rec)
	const n = 300
	for i := range n {
		pub.Publish("burst", fmt.Appendf(nil, "e%d", i))
	}
	if err := pub.Flush(); err != nil { // the server has them all
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if got := len(rec.list()); got != n {
		t.Errorf("%d of %d messages seen", got, n)
	}
}

// TestProvesLoss checks that no sink of today claims to prove loss: an
// event none has seen may still come.
func TestProvesLoss(t *testing.T) {
	for name, p := range map[string]e2e.Prover{"http": (*HTTP)(nil), "redis": &Redis{}, "nats": &NATS{}} {
		if p.ProvesLoss() {
			t.Errorf("%s: proves loss, want not", name)
		}
	}
}
