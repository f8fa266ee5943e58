// Package printflog routes the logs of libraries that write through a
// Printf method (fasthttp's servers: fasthttp.Logger) into the process's
// zerolog logger, so that every line of replay's log is one of its own
// (JSON with --log-format json), never a library's raw text on stderr.
// It imports no such library: the interface is the method alone.
package printflog

import (
	"fmt"
	"strings"

	"github.com/rs/zerolog"
)

// Logger has a Printf method (fasthttp.Logger) that writes each message
// as one event of Log at Level, with from naming the library. The zero
// Logger discards messages (a zero zerolog.Logger writes nothing): never
// the library's default logger, which writes raw lines to stderr.
type Logger struct {
	Log   zerolog.Logger
	Level zerolog.Level
	From  string // "fasthttp"
}

// Printf writes one event: the message formatted, its trailing newline
// dropped.
func (l Logger) Printf(format string, args ...any) {
	ev := l.Log.WithLevel(l.Level)
	if ev == nil {
		return
	}
	ev.Str("from", l.From).Msg(strings.TrimRight(fmt.Sprintf(format, args...), "\n"))
}
