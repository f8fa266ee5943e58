package sink

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/replay-dev/replay/internal/printflog"
	"github.com/replay-dev/replay/pkg/e2e"
	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"
)

// DefaultStage names what an HTTP sink sees on a path that names no stage.
const DefaultStage = "delivered"

// HTTP is a sink that accepts deliveries over HTTP, as the Knative eventing
// benchmarks' receiver does: any POST or PUT carrying an ID. The ID is, in
// this order, the ce-id header (CloudEvents binary mode), the top-level
// "id" of a JSON body (a structured CloudEvent, or any JSON event), or the
// X-Replay-Id header. The stage is the path's /stage/<name>, else the
// X-Replay-Stage header, else DefaultStage. It answers 204, or 400 when it
// finds no ID.
type HTTP struct {
	ln   net.Listener
	srv  *fasthttp.Server
	recv e2e.Receiver
	done chan error
	// conns counts connections until fasthttp is through with them:
	// its server stops counting a connection (and Shutdown returns)
	// before its worker logs why the connection failed, so Close waits
	// on this too, or the sink's last warning is lost at exit.
	conns sync.WaitGroup
}

// lastWords bounds how long Close waits for the server's workers to log
// what they have to say about connections cut at shutdown.
const lastWords = 2 * time.Second

// ListenHTTP starts an HTTP sink on addr (":9090", "127.0.0.1:0") that
// reports what it receives to r; what its server has to say (a connection
// that failed as the sink shut down) goes to log, as warnings.
func ListenHTTP(addr string, r e2e.Receiver, log zerolog.Logger) (*HTTP, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("sink: %w", err)
	}
	s := &HTTP{ln: ln, recv: r, done: make(chan error, 1)}
	s.srv = &fasthttp.Server{Handler: s.handle, Name: "replay-sink", ReadTimeout: time.Minute, IdleTimeout: time.Minute,
		Logger: printflog.Logger{Log: log, Level: zerolog.WarnLevel, From: "fasthttp"},
		ConnState: func(_ net.Conn, st fasthttp.ConnState) {
			switch st {
			case fasthttp.StateNew:
				s.conns.Add(1)
			case fasthttp.StateClosed, fasthttp.StateHijacked:
				s.conns.Done()
			}
		}}
	go func() { s.done <- s.srv.Serve(ln) }()
	return s, nil
}

// ProvesLoss reports false: an endpoint that events are delivered to
// cannot know that one not delivered yet never will be (the SUT may retry
// it later). It is a property of the kind of sink, so it holds on a nil
// *HTTP too: a run asks before it listens.
func (*HTTP) ProvesLoss() bool { return false }

// Addr is the address the sink listens on.
func (s *HTTP) Addr() string { return s.ln.Addr().String() }

// URL is the sink's base URL, for a SUT on this machine.
func (s *HTTP) URL() string { return "http://" + s.Addr() }

// Close stops the sink and waits for it.
func (s *HTTP) Close() error {
	err := s.srv.Shutdown()
	s.ln.Close()
	if serr := <-s.done; serr != nil && !errors.Is(serr, net.ErrClosed) && err == nil {
		err = serr
	}
	workersDone := make(chan struct{})
	go func() { s.conns.Wait(); close(workersDone) }()
	select {
	case <-workersDone:
	case <-time.After(lastWords):
	}
	return err
}

func (s *HTTP) handle(ctx *fasthttp.RequestCtx) {
	at := time.Now()
	if !ctx.IsPost() && !ctx.IsPut() {
		ctx.Error("POST or PUT an event", fasthttp.StatusMethodNotAllowed)
		return
	}
	id := ctx.Request.Header.Peek("ce-id")
	if len(id) == 0 {
		id = jsonID(ctx.PostBody())
	}
	if len(id) == 0 {
		id = ctx.Request.Header.Peek("X-Replay-Id")
	}
	if len(id) == 0 {
		ctx.Error("no event ID: want a ce-id header, a JSON body with an id, or X-Replay-Id", fasthttp.StatusBadRequest)
		return
	}
	stage := DefaultStage
	if p := ctx.Path(); bytes.HasPrefix(p, []byte("/stage/")) && len(p) > len("/stage/") {
		stage = string(p[len("/stage/"):])
	} else if h := ctx.Request.Header.Peek("X-Replay-Stage"); len(h) > 0 {
		stage = string(h)
	}
	s.recv.Seen(id, stage, at)
	ctx.SetStatusCode(fasthttp.StatusNoContent)
}
