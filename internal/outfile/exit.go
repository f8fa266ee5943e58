package outfile

import (
	"os"
	"sync"
)

// A process stopped by a second signal exits at once (replay run's
// documented behaviour), but never in the middle of writing its outputs
// and never leaving a temporary file beside them: main calls Exit before
// os.Exit, and Exit waits for the holds (Hold: an output being written and
// put in place, or a command's orderly stop that ends in writing its
// report, as replay mock's), then removes the temporary files of the
// outputs not put in place. A command that holds is told to hurry (its
// grace cut short) and its outputs are written whole before the process
// exits.

// gate is the process's: every File registers its temporary file there.
var gate = newExitGate()

// exitGate counts the holds on a process's exit and the temporary files
// that would be left by it. mu guards every field; cond waits for holds
// to reach zero.
type exitGate struct {
	mu      sync.Mutex
	cond    *sync.Cond
	holds   int
	exiting bool // Exit has begun: hurry is closed
	gone    bool // Exit is done: the process exits, nothing begins
	hurry   chan struct{}
	temps   map[string]struct{}
}

func newExitGate() *exitGate {
	g := &exitGate{hurry: make(chan struct{}), temps: map[string]struct{}{}}
	g.cond = sync.NewCond(&g.mu)
	return g
}

// Hold keeps Exit waiting until release is called (once; more calls do
// nothing). hurry is closed when an Exit waits: the holder should cut
// short what it waits for and write what it must. Once Exit is done, Hold
// never returns: the process is exiting.
func Hold() (hurry <-chan struct{}, release func()) { return gate.hold() }

// Exit waits until nothing holds the exit (telling the holders to hurry),
// then removes the temporary files of outputs not put in place. Call it
// right before os.Exit on a second signal; after it, nothing writes.
func Exit() { gate.exit() }

func (g *exitGate) hold() (<-chan struct{}, func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for g.gone {
		g.cond.Wait() // never woken: the process exits
	}
	g.holds++
	var once sync.Once
	return g.hurry, func() {
		once.Do(func() {
			g.mu.Lock()
			g.holds--
			g.cond.Broadcast()
			g.mu.Unlock()
		})
	}
}

func (g *exitGate) exit() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.exiting {
		g.exiting = true
		close(g.hurry)
	}
	for g.holds > 0 {
		g.cond.Wait()
	}
	for name := range g.temps {
		os.Remove(name)
	}
	clear(g.temps)
	g.gone = true
}

// track notes a temporary file (false: the process is exiting, nothing is
// created).
func (g *exitGate) track(name string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.gone {
		return false
	}
	g.temps[name] = struct{}{}
	return true
}

// untrack forgets a temporary file put in place or removed.
func (g *exitGate) untrack(name string) {
	g.mu.Lock()
	delete(g.temps, name)
	g.mu.Unlock()
}
