// Package wspeer is a WebSocket server for tests, independent of the
// project's own framer (gorilla/websocket, which no command links: test
// helpers stay out of the commands, held by the architecture test): it
// serves upgrades with a handler and keeps, in order, the messages each
// session's handler kept.
package wspeer

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	gorilla "github.com/gorilla/websocket"
)

// Server serves WebSocket upgrades on loopback.
type Server struct {
	*httptest.Server
	mu       sync.Mutex
	sessions [][]string
}

// Handler plays one session on c; keep keeps a message of it.
type Handler func(c *gorilla.Conn, keep func(string))

// Serve serves upgrades with handle until the test ends; each session's
// reads time out after 10 s.
func Serve(t testing.TB, handle Handler) *Server {
	s := &Server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := (&gorilla.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		s.mu.Lock()
		i := len(s.sessions)
		s.sessions = append(s.sessions, nil)
		s.mu.Unlock()
		handle(c, func(m string) {
			s.mu.Lock()
			s.sessions[i] = append(s.sessions[i], m)
			s.mu.Unlock()
		})
	}))
	t.Cleanup(s.Close)
	return s
}

// Sessions is a copy of the messages kept so far, a slice a session in
// the order the sessions began.
func (s *Server) Sessions() [][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([][]string, len(s.sessions))
	for i, sess := range s.sessions {
		out[i] = append([]string(nil), sess...)
	}
	return out
}

// Forget drops the sessions kept so far.
func (s *Server) Forget() {
	s.mu.Lock()
	s.sessions = nil
	s.mu.Unlock()
}

// Echo answers each message with itself, keeping it, until the client
// closes.
func Echo(c *gorilla.Conn, keep func(string)) {
	for {
		op, p, err := c.ReadMessage()
		if err != nil {
			return
		}
		keep(string(p))
		if c.WriteMessage(op, p) != nil {
			return
		}
	}
}
