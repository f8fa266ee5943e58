// Package demo is the built-in system under test of `replay demo`: a small
// event-ingest and order API on a loopback port, in the spirit of an
// event-driven service that answers 202 Accepted and does the work later.
//
// It is strict the way real services are, so that recorded traffic replayed
// as-is fails and the transforms of replay are needed to make it valid again:
// tokens expire, old events are refused, and orders exist only once created.
//
//	GET  /health                                -> 200 ok (no token needed)
//	POST /events              JSON event        -> 202 {"status":"accepted","id":"..."}; not JSON -> 400; stale -> 422
//	POST /events/batch        JSON array        -> 202 {"status":"accepted","count":N}; not an array -> 400; a stale event -> 422
//	GET  /events/{id}                           -> 200 the event (any well-formed id is found)
//	GET  /users/{id}/feed?limit=N               -> 200 a list of N items (at most 100); bad limit -> 400
//	POST /orders              JSON object       -> 201 {"id":"o-...","status":"created"}, Location: /orders/o-...; not JSON -> 400
//	GET  /orders/{id}                           -> 200 {"id":"o-...","status":"created"}; unknown id -> 404
//	POST /orders/{id}/pay                       -> 200 {"id":"o-...","status":"paid"}; unknown id -> 404
//	a request with "X-Demo-Fail: 1"             -> 503 (before anything else)
//	no valid token (every request but /health) -> 401 {"error":"..."}
//	anything else                               -> 404; a known path with another method -> 405
//
// Tokens: "Authorization: Bearer <JWT>", HS256 signed with JWTSecret, with
// an exp in the future, and iat and nbf (when present) not in the future,
// each with 5 s of leeway. A token's signature is verified once and cached;
// its times are checked on every request.
//
// Event times: an event's "ts" (epoch milliseconds) and "sent_at" (RFC 3339),
// when present, must be within 5 minutes of the server's clock, else 422:
//
//	{"type":"click","ts":1793527200195,"sent_at":"2026-11-01T10:00:00.195Z"}
//
// Order ids are "o-" and 10 lower-case letters and digits, at least two of
// them digits ("o-k3j9x0p2qa"); the server remembers the last 100 000.
//
// With Options.SinkURL, accepted events that carry a "ce-id" header are
// queued and delivered later by a worker at Options.WorkerRate a second to
// SinkURL/stage/processed (see worker.go): the asynchronous path whose
// end-to-end latency replay's sinks measure.
//
// Each answer takes a small random service time (0.2–2 ms, one in a hundred
// about 10 ms) so that latency percentiles look like a real service's.
package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/replay-dev/replay/internal/printflog"
	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"
)

// JWTSecret is the HS256 key the demo SUT verifies tokens with.
const JWTSecret = "replay-demo-secret"

const (
	// leeway is the clock skew allowed on a token's exp, iat and nbf.
	leeway = 5 * time.Second
	// maxEventAge is how far an event's ts or sent_at may be from now,
	// either way.
	maxEventAge = 5 * time.Minute
	// maxTokens bounds the cache of verified tokens; it is emptied when full.
	maxTokens = 10_000
	// maxOrders bounds the orders remembered; the oldest is forgotten first.
	maxOrders = 100_000
)

// CompareIgnore are the JSON fields the demo SUT adds to the answers of
// its recorded traffic, which replay demo --compare body ignores by name:
// an event read back (GET /events/{id}) has its "type" and "received_at",
// recorded without them, and a feed (GET /users/{id}/feed) its "items",
// recorded empty. The event ids it issues differ from the recorded ones
// too; the demo's transforms correlate those (POST /events, json: id).
var CompareIgnore = []string{"type", "received_at", "items"}

// Options configure a Server. The zero value is the default.
type Options struct {
	// Now is the server's clock, for token and event times; time.Now when nil.
	Now func() time.Time
	// SinkURL turns the asynchronous path on: accepted events with a
	// ce-id are delivered to SinkURL/stage/processed by a worker.
	SinkURL string
	// WorkerRate is the worker's events per second (DefaultWorkerRate
	// when 0).
	WorkerRate float64
	// Log gets what the server has to say (fasthttp's messages, as
	// warnings); the zero Logger discards it.
	Log zerolog.Logger
	// WorkerDelay is the least time from an event queued to delivered
	// (0: as soon as the worker's rate allows).
	WorkerDelay time.Duration
}

// Server is a running demo SUT.
type Server struct {
	ln       net.Listener
	srv      *fasthttp.Server
	done     chan error
	now      func() time.Time
	requests atomic.Int64
	nextID   atomic.Int64
	tokens   tokenCache
	orders   orderSet
	worker   *worker // nil without Options.SinkURL
}

// Start listens on addr, which must be a loopback address ("127.0.0.1:0"
// picks a free port), and serves until Close.
func Start(addr string) (*Server, error) {
	return StartWith(addr, Options{})
}

// StartWith is Start with options.
func StartWith(addr string, opts Options) (*Server, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("demo address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("demo address %q: the demo listens on loopback only (127.0.0.1, ::1 or localhost)", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &Server{ln: ln, done: make(chan error, 1), now: opts.Now}
	if s.now == nil {
		s.now = time.Now
	}
	if opts.SinkURL != "" {
		if s.worker, err = startWorker(opts.SinkURL, opts.WorkerRate, opts.WorkerDelay); err != nil {
			ln.Close()
			return nil, err
		}
	}
	s.tokens.max = maxTokens
	s.orders.max = maxOrders
	s.srv = &fasthttp.Server{
		Handler:                       s.handle,
		Name:                          "replay-demo",
		DisableHeaderNamesNormalizing: true,
		ReadTimeout:                   time.Minute,
		IdleTimeout:                   time.Minute,
		Logger:                        printflog.Logger{Log: opts.Log, Level: zerolog.WarnLevel, From: "fasthttp"},
	}
	go func() { s.done <- s.srv.Serve(ln) }()
	return s, nil
}

// Addr is the address the server listens on ("127.0.0.1:PORT").
func (s *Server) Addr() string { return s.ln.Addr().String() }

// URL is the server's base URL ("http://127.0.0.1:PORT").
func (s *Server) URL() string { return "http://" + s.Addr() }

// Requests is the number of requests served so far.
func (s *Server) Requests() int64 { return s.requests.Load() }

// Close stops listening, closes open connections, and waits for the server
// to stop.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.srv.ShutdownWithContext(ctx)
	// Shutdown does nothing when Serve has not registered the listener
	// yet; closing it ourselves ends Serve in that case too.
	s.ln.Close()
	if serr := <-s.done; serr != nil && !errors.Is(serr, net.ErrClosed) && err == nil {
		err = serr
	}
	if s.worker != nil {
		s.worker.close()
	}
	return err
}

// Queue is the state of the asynchronous path.
type Queue struct {
	Backlog   int   // events waiting for the worker
	Delivered int64 // events the sink accepted
	Failed    int64 // deliveries the sink refused or that failed
	Dropped   int64 // events that found the queue full
}

// Queue reports the asynchronous path; zero without Options.SinkURL.
func (s *Server) Queue() Queue {
	if s.worker == nil {
		return Queue{}
	}
	w := s.worker
	return Queue{Backlog: len(w.queue), Delivered: w.sent.Load(), Failed: w.failed.Load(), Dropped: w.dropped.Load()}
}

// serviceTime is the simulated work of one request.
func serviceTime() time.Duration {
	if rand.IntN(100) == 0 {
		return 8*time.Millisecond + rand.N(4*time.Millisecond)
	}
	return 200*time.Microsecond + rand.N(1800*time.Microsecond)
}

func (s *Server) handle(ctx *fasthttp.RequestCtx) {
	s.requests.Add(1)
	time.Sleep(serviceTime())
	if string(peekHeader(ctx, "X-Demo-Fail")) == "1" {
		ctx.Error(`{"error":"unavailable"}`, fasthttp.StatusServiceUnavailable)
		return
	}
	path := ctx.Path()
	method := string(ctx.Method())
	if string(path) == "/health" {
		if allow(ctx, method, "GET") {
			ctx.SetContentType("text/plain")
			ctx.SetBodyString("ok")
		}
		return
	}
	// Authentication comes before routing, as at a gateway: without a
	// valid token even an unknown path is 401.
	if msg := s.authenticate(ctx); msg != "" {
		ctx.Response.Header.Set("WWW-Authenticate", `Bearer realm="replay-demo"`)
		jsonError(ctx, fasthttp.StatusUnauthorized, msg)
		return
	}
	s.route(ctx, path, method)
}

// route serves an authenticated request by its path: the events, a
// user's feed, the orders; 404 for any other path.
func (s *Server) route(ctx *fasthttp.RequestCtx, path []byte, method string) {
	slashes := bytes.Count(path, []byte("/"))
	switch {
	case bytes.HasPrefix(path, []byte("/events")):
		s.routeEvents(ctx, path, method, slashes)
	case bytes.HasPrefix(path, []byte("/users/")) && bytes.HasSuffix(path, []byte("/feed")) && slashes == 3:
		if allow(ctx, method, "GET") {
			feed(ctx, string(path[len("/users/"):len(path)-len("/feed")]))
		}
	case bytes.HasPrefix(path, []byte("/orders")):
		s.routeOrders(ctx, path, method, slashes)
	default:
		jsonError(ctx, fasthttp.StatusNotFound, "not found")
	}
}

// routeEvents serves the paths under /events: one event posted, a batch,
// one event read; 404 for another.
func (s *Server) routeEvents(ctx *fasthttp.RequestCtx, path []byte, method string, slashes int) {
	switch {
	case string(path) == "/events":
		if allow(ctx, method, "POST") {
			s.ingest(ctx)
		}
	case string(path) == "/events/batch":
		if allow(ctx, method, "POST") {
			s.batch(ctx)
		}
	case bytes.HasPrefix(path, []byte("/events/")) && slashes == 2:
		if allow(ctx, method, "GET") {
			event(ctx, string(path[len("/events/"):]))
		}
	default:
		jsonError(ctx, fasthttp.StatusNotFound, "not found")
	}
}

// routeOrders serves the paths under /orders: an order created, read or
// paid; 404 for another.
func (s *Server) routeOrders(ctx *fasthttp.RequestCtx, path []byte, method string, slashes int) {
	switch {
	case string(path) == "/orders":
		if allow(ctx, method, "POST") {
			s.createOrder(ctx)
		}
	case bytes.HasPrefix(path, []byte("/orders/")) && slashes == 2:
		if allow(ctx, method, "GET") {
			s.getOrder(ctx, string(path[len("/orders/"):]))
		}
	case bytes.HasPrefix(path, []byte("/orders/")) && bytes.HasSuffix(path, []byte("/pay")) && slashes == 3:
		if allow(ctx, method, "POST") {
			s.payOrder(ctx, string(path[len("/orders/"):len(path)-len("/pay")]))
		}
	default:
		jsonError(ctx, fasthttp.StatusNotFound, "not found")
	}
}

// peekHeader is the first value of the request header name, matched
// without regard to case (header names keep their case on this server).
func peekHeader(ctx *fasthttp.RequestCtx, name string) []byte {
	if v := ctx.Request.Header.Peek(name); v != nil {
		return v
	}
	for k, v := range ctx.Request.Header.All() {
		if len(k) == len(name) && bytes.EqualFold(k, []byte(name)) {
			return v
		}
	}
	return nil
}

func allow(ctx *fasthttp.RequestCtx, method, want string) bool {
	if method == want {
		return true
	}
	ctx.Response.Header.Set("Allow", want)
	jsonError(ctx, fasthttp.StatusMethodNotAllowed, "method not allowed")
	return false
}

func jsonError(ctx *fasthttp.RequestCtx, status int, msg string) {
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json")
	fmt.Fprintf(ctx, `{"error":%q}`, msg)
}

// authenticate checks the request's bearer token and returns why it is
// refused, or "" when it is good.
func (s *Server) authenticate(ctx *fasthttp.RequestCtx) string {
	auth := peekHeader(ctx, "Authorization")
	if len(auth) == 0 {
		return "missing token: send Authorization: Bearer <JWT>"
	}
	const scheme = "bearer "
	if len(auth) <= len(scheme) || !bytes.EqualFold(auth[:len(scheme)], []byte(scheme)) {
		return "Authorization is not a Bearer token"
	}
	raw := bytes.TrimSpace(auth[len(scheme):])
	times, ok := s.tokens.get(raw)
	if !ok {
		var msg string
		if times, msg = verifyToken(string(raw)); msg != "" {
			return msg
		}
		s.tokens.put(string(raw), times)
	}
	return times.check(s.now())
}

// tokenTimes are the time claims of a token whose signature is good; a
// zero time is an absent claim.
type tokenTimes struct {
	exp, iat, nbf time.Time
}

// check says why the token is not valid at now, or "" when it is.
func (tt tokenTimes) check(now time.Time) string {
	switch {
	case tt.exp.IsZero():
		return "token has no exp claim"
	case !now.Before(tt.exp.Add(leeway)):
		return fmt.Sprintf("token expired %s ago (exp %s)", age(now.Sub(tt.exp)), tt.exp.UTC().Format(time.RFC3339))
	case !tt.iat.IsZero() && tt.iat.After(now.Add(leeway)):
		return fmt.Sprintf("token issued %s in the future (iat %s)", age(tt.iat.Sub(now)), tt.iat.UTC().Format(time.RFC3339))
	case !tt.nbf.IsZero() && tt.nbf.After(now.Add(leeway)):
		return fmt.Sprintf("token not valid for another %s (nbf %s)", age(tt.nbf.Sub(now)), tt.nbf.UTC().Format(time.RFC3339))
	}
	return ""
}

// parser verifies signatures only (HS256 alone is accepted); token times
// are checked by tokenTimes.check against the server's clock.
var parser = jwt.NewParser(jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}), jwt.WithoutClaimsValidation())

// verifyToken checks the token's signature and reads its times, or says
// why it is refused.
func verifyToken(raw string) (tokenTimes, string) {
	var claims jwt.RegisteredClaims
	tok, err := parser.ParseWithClaims(raw, &claims, func(*jwt.Token) (any, error) { return []byte(JWTSecret), nil })
	switch {
	case err == nil:
	case errors.Is(err, jwt.ErrTokenMalformed):
		return tokenTimes{}, "malformed token"
	case tok != nil && tok.Method != nil && tok.Method.Alg() != jwt.SigningMethodHS256.Alg():
		return tokenTimes{}, fmt.Sprintf("signing method %s is not accepted: HS256 only", tok.Method.Alg())
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return tokenTimes{}, "bad signature"
	default:
		return tokenTimes{}, "unverifiable token"
	}
	var tt tokenTimes
	if claims.ExpiresAt != nil {
		tt.exp = claims.ExpiresAt.Time
	}
	if claims.IssuedAt != nil {
		tt.iat = claims.IssuedAt.Time
	}
	if claims.NotBefore != nil {
		tt.nbf = claims.NotBefore.Time
	}
	return tt, ""
}

// tokenCache remembers the times of tokens whose signature is good, so
// that a token is parsed once however often it is sent. It holds at most
// max tokens: when full it is emptied, which costs one parse per live
// token and bounds memory whatever the clients send.
type tokenCache struct {
	max int
	mu  sync.RWMutex
	m   map[string]tokenTimes // mu guards m
}

func (c *tokenCache) get(raw []byte) (tokenTimes, bool) {
	c.mu.RLock()
	tt, ok := c.m[string(raw)]
	c.mu.RUnlock()
	return tt, ok
}

func (c *tokenCache) put(raw string, tt tokenTimes) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= c.max {
		c.m = make(map[string]tokenTimes)
	}
	c.m[raw] = tt
}

// age renders a duration coarsely, as people say it: "45s", "12m", "3h",
// "22d".
func age(d time.Duration) string {
	switch {
	case d >= 48*time.Hour:
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	case d >= time.Hour:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d >= time.Minute:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return fmt.Sprintf("%ds", d/time.Second)
}

// checkEventTimes says why an event's ts (epoch ms) or sent_at (RFC 3339)
// is refused, or "" when both are absent or within maxEventAge of now.
func checkEventTimes(ev map[string]any, now time.Time) string {
	if v, ok := ev["ts"]; ok {
		ms, ok := v.(float64)
		if !ok {
			return "ts must be a number of epoch milliseconds"
		}
		if msg := staleness("ts", time.UnixMilli(int64(ms)), now); msg != "" {
			return msg
		}
	}
	if v, ok := ev["sent_at"]; ok {
		str, ok := v.(string)
		if !ok {
			return "sent_at must be an RFC 3339 time"
		}
		at, err := time.Parse(time.RFC3339Nano, str)
		if err != nil {
			return "sent_at must be an RFC 3339 time"
		}
		if msg := staleness("sent_at", at, now); msg != "" {
			return msg
		}
	}
	return ""
}

func staleness(field string, at, now time.Time) string {
	switch d := now.Sub(at); {
	case d > maxEventAge:
		return fmt.Sprintf("%s is %s ago; events older than 5m are refused", field, age(d))
	case d < -maxEventAge:
		return fmt.Sprintf("%s is %s in the future; events more than 5m ahead are refused", field, age(-d))
	}
	return ""
}

func (s *Server) ingest(ctx *fasthttp.RequestCtx) {
	var ev map[string]any
	if err := json.Unmarshal(ctx.PostBody(), &ev); err != nil || ev == nil {
		jsonError(ctx, fasthttp.StatusBadRequest, "body is not a JSON object")
		return
	}
	if msg := checkEventTimes(ev, s.now()); msg != "" {
		jsonError(ctx, fasthttp.StatusUnprocessableEntity, "stale event: "+msg)
		return
	}
	if id := peekHeader(ctx, "ce-id"); s.worker != nil && len(id) > 0 {
		s.worker.enqueue(id)
	}
	ctx.SetStatusCode(fasthttp.StatusAccepted)
	ctx.SetContentType("application/json")
	fmt.Fprintf(ctx, `{"status":"accepted","id":"evt-%d"}`, s.nextID.Add(1))
}

func (s *Server) batch(ctx *fasthttp.RequestCtx) {
	var evs []map[string]any
	if err := json.Unmarshal(ctx.PostBody(), &evs); err != nil || evs == nil {
		jsonError(ctx, fasthttp.StatusBadRequest, "body is not a JSON array of events")
		return
	}
	now := s.now()
	for i, ev := range evs {
		if msg := checkEventTimes(ev, now); msg != "" {
			jsonError(ctx, fasthttp.StatusUnprocessableEntity, fmt.Sprintf("stale event %d of %d: %s", i+1, len(evs), msg))
			return
		}
	}
	s.nextID.Add(int64(len(evs)))
	ctx.SetStatusCode(fasthttp.StatusAccepted)
	ctx.SetContentType("application/json")
	fmt.Fprintf(ctx, `{"status":"accepted","count":%d}`, len(evs))
}

// event answers a fabricated event: any well-formed id exists, since the ids
// of a replayed recording were never created in a fresh demo.
func event(ctx *fasthttp.RequestCtx, id string) {
	if id == "" || len(id) > 64 {
		jsonError(ctx, fasthttp.StatusNotFound, "no such event")
		return
	}
	ctx.SetContentType("application/json")
	fmt.Fprintf(ctx, `{"id":%q,"type":"page_view","status":"processed","received_at":"2026-11-01T10:00:00Z"}`, id)
}

func feed(ctx *fasthttp.RequestCtx, user string) {
	limit := 20
	if v := ctx.QueryArgs().Peek("limit"); len(v) > 0 {
		n, err := strconv.Atoi(string(v))
		if err != nil || n < 1 {
			jsonError(ctx, fasthttp.StatusBadRequest, "limit must be a positive integer")
			return
		}
		limit = min(n, 100)
	}
	ctx.SetContentType("application/json")
	fmt.Fprintf(ctx, `{"user":%q,"items":[`, user)
	for i := 0; i < limit; i++ {
		if i > 0 {
			ctx.WriteString(",")
		}
		fmt.Fprintf(ctx, `{"event":"evt-%d","type":"page_view"}`, i+1)
	}
	ctx.WriteString("]}")
}

func (s *Server) createOrder(ctx *fasthttp.RequestCtx) {
	var order map[string]any
	if err := json.Unmarshal(ctx.PostBody(), &order); err != nil || order == nil {
		jsonError(ctx, fasthttp.StatusBadRequest, "body is not a JSON object")
		return
	}
	id := s.orders.create()
	ctx.SetStatusCode(fasthttp.StatusCreated)
	ctx.SetContentType("application/json")
	ctx.Response.Header.Set("Location", "/orders/"+id)
	fmt.Fprintf(ctx, `{"id":%q,"status":"created"}`, id)
}

func (s *Server) getOrder(ctx *fasthttp.RequestCtx, id string) {
	status, ok := s.orders.status(id)
	if !ok {
		jsonError(ctx, fasthttp.StatusNotFound, "no such order")
		return
	}
	ctx.SetContentType("application/json")
	fmt.Fprintf(ctx, `{"id":%q,"status":%q}`, id, status)
}

func (s *Server) payOrder(ctx *fasthttp.RequestCtx, id string) {
	if !s.orders.pay(id) {
		jsonError(ctx, fasthttp.StatusNotFound, "no such order")
		return
	}
	ctx.SetContentType("application/json")
	fmt.Fprintf(ctx, `{"id":%q,"status":"paid"}`, id)
}

// newOrderID returns a random order id: "o-" and 10 lower-case letters and
// digits, at least two of them digits, so that replay's endpoint names
// see an id in it ("o-k3j9x0p2qa"). intN is the source of randomness
// (rand.IntN, or a seeded generator's for the demo traffic).
func newOrderID(intN func(int) int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	var b [12]byte
	b[0], b[1] = 'o', '-'
	for {
		digits := 0
		for i := 2; i < len(b); i++ {
			c := alphabet[intN(len(alphabet))]
			if c >= '0' && c <= '9' {
				digits++
			}
			b[i] = c
		}
		if digits >= 2 {
			return string(b[:])
		}
	}
}

// orderSet is the orders created, at most max of them: when full, the
// oldest is forgotten to make room.
type orderSet struct {
	max  int
	mu   sync.Mutex
	byID map[string]string // id -> status; mu guards byID, ring and next
	ring []string          // ids in creation order, a ring once len = max
	next int               // the oldest id's slot once the ring is full
}

// create stores a new order with a fresh id and returns the id.
func (o *orderSet) create() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.byID == nil {
		o.byID = make(map[string]string)
	}
	id := newOrderID(rand.IntN)
	for o.byID[id] != "" {
		id = newOrderID(rand.IntN)
	}
	if len(o.ring) < o.max {
		o.ring = append(o.ring, id)
	} else {
		delete(o.byID, o.ring[o.next])
		o.ring[o.next] = id
		o.next = (o.next + 1) % o.max
	}
	o.byID[id] = "created"
	return id
}

func (o *orderSet) status(id string) (string, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	st, ok := o.byID[id]
	return st, ok
}

func (o *orderSet) pay(id string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.byID[id]; !ok {
		return false
	}
	o.byID[id] = "paid"
	return true
}
