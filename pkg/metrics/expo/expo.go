// Package expo writes the Prometheus text exposition format (version
// 0.0.4) and serves it on GET /metrics. It imports nothing of the
// project: a run's metrics (pkg/metrics) and a server's own (replay
// mock's) are both written with it, and a server that uses it links
// nothing of the run.
//
// A page reads:
//
//	# HELP replay_mock_requests_total Requests answered, by result.
//	# TYPE replay_mock_requests_total counter
//	replay_mock_requests_total{result="hit"} 12
package expo

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Writer writes families and their samples to B.
type Writer struct{ B *strings.Builder }

// Family writes a family's # HELP and # TYPE lines.
func (e Writer) Family(name, typ, help string) {
	e.B.WriteString("# HELP " + name + " " + help + "\n# TYPE " + name + " " + typ + "\n")
}

// Sample writes one sample; labels is "" or `{k="v"}`.
func (e Writer) Sample(name, labels string, v float64) {
	e.B.WriteString(name + labels + " " + strconv.FormatFloat(v, 'g', -1, 64) + "\n")
}

// Label is one label, `{k="v"}`, its value escaped as the format asks
// (\\, \", \n).
func Label(k, v string) string { return Labels(k, v) }

// Labels are labels from name, value pairs: `{a="1",b="2"}`.
func Labels(kv ...string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(kv[i] + `="` + escaper.Replace(kv[i+1]) + `"`)
	}
	b.WriteByte('}')
	return b.String()
}

var escaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// Server serves GET /metrics: each scrape is what its write function
// writes then.
type Server struct {
	ln   net.Listener
	srv  *http.Server
	done chan error
}

// Listen binds addr (":9090", "127.0.0.1:0") at once, so that a bad
// address fails before anything else starts, and serves write's page
// until Close.
func Listen(addr string, write func(*strings.Builder)) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return Serve(ln, write), nil
}

// Serve serves write's page on ln (a listener the caller bound, such as
// a server's listen.Bind) in the background until Close, which closes ln.
func Serve(ln net.Listener, write func(*strings.Builder)) *Server {
	s := &Server{ln: ln, done: make(chan error, 1)}
	mux := http.NewServeMux()
	mux.Handle("/metrics", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		var b strings.Builder
		write(&b)
		w.Write([]byte(b.String()))
	}))
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { s.done <- s.srv.Serve(ln) }()
	return s
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the server, letting a scrape under way finish.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if serr := <-s.done; err == nil && !errors.Is(serr, http.ErrServerClosed) {
		err = serr
	}
	return err
}
