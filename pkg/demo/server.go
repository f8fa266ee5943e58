// Package demo is the built-in system under test of `replay demo`: a small
// event-ingest API on a loopback port, in the spirit of an event-driven
// service that answers 202 Accepted and does the work later.
//
//	POST /events              JSON event        -> 202 {"status":"accepted","id":"..."}; not JSON -> 400
//	POST /events/batch        JSON array        -> 202 {"status":"accepted","count":N}
//	GET  /events/{id}                           -> 200 the event (any well-formed id is found)
//	GET  /users/{id}/feed?limit=N               -> 200 a list of N items (at most 100)
//	GET  /health                                -> 200 ok
//	a request with "X-Demo-Fail: 1"             -> 503
//	anything else                               -> 404; a known path with another method -> 405
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
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// Server is a running demo SUT.
type Server struct {
	ln       net.Listener
	srv      *fasthttp.Server
	done     chan error
	requests atomic.Int64
	nextID   atomic.Int64
}

// Start listens on addr, which must be a loopback address ("127.0.0.1:0"
// picks a free port), and serves until Close.
func Start(addr string) (*Server, error) {
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
	s := &Server{ln: ln, done: make(chan error, 1)}
	s.srv = &fasthttp.Server{
		Handler:                       s.handle,
		Name:                          "replay-demo",
		DisableHeaderNamesNormalizing: true,
		ReadTimeout:                   time.Minute,
		IdleTimeout:                   time.Minute,
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
	return err
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
	if string(ctx.Request.Header.Peek("X-Demo-Fail")) == "1" {
		ctx.Error(`{"error":"unavailable"}`, fasthttp.StatusServiceUnavailable)
		return
	}
	path := ctx.Path()
	method := string(ctx.Method())
	switch {
	case string(path) == "/health":
		if !allow(ctx, method, "GET") {
			return
		}
		ctx.SetContentType("text/plain")
		ctx.SetBodyString("ok")
	case string(path) == "/events":
		if allow(ctx, method, "POST") {
			s.ingest(ctx)
		}
	case string(path) == "/events/batch":
		if allow(ctx, method, "POST") {
			s.batch(ctx)
		}
	case bytes.HasPrefix(path, []byte("/events/")) && bytes.Count(path, []byte("/")) == 2:
		if allow(ctx, method, "GET") {
			event(ctx, string(path[len("/events/"):]))
		}
	case bytes.HasPrefix(path, []byte("/users/")) && bytes.HasSuffix(path, []byte("/feed")) && bytes.Count(path, []byte("/")) == 3:
		if allow(ctx, method, "GET") {
			feed(ctx, string(path[len("/users/"):len(path)-len("/feed")]))
		}
	default:
		jsonError(ctx, fasthttp.StatusNotFound, "not found")
	}
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

func (s *Server) ingest(ctx *fasthttp.RequestCtx) {
	var ev map[string]any
	if err := json.Unmarshal(ctx.PostBody(), &ev); err != nil {
		jsonError(ctx, fasthttp.StatusBadRequest, "body is not a JSON object")
		return
	}
	ctx.SetStatusCode(fasthttp.StatusAccepted)
	ctx.SetContentType("application/json")
	fmt.Fprintf(ctx, `{"status":"accepted","id":"evt-%d"}`, s.nextID.Add(1))
}

func (s *Server) batch(ctx *fasthttp.RequestCtx) {
	var evs []map[string]any
	if err := json.Unmarshal(ctx.PostBody(), &evs); err != nil {
		jsonError(ctx, fasthttp.StatusBadRequest, "body is not a JSON array of events")
		return
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
