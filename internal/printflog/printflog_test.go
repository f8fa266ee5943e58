package printflog

import (
	"bytes"
	"testing"

	"github.com/rs/zerolog"
)

// TestPrintf: a message becomes one JSON event at the level given, naming
// its library, without the trailing newline a Printf logger may carry;
// below the logger's level, or on the zero Logger, nothing is written.
func TestPrintf(t *testing.T) {
	var b bytes.Buffer
	Logger{Log: zerolog.New(&b), Level: zerolog.WarnLevel, From: "fasthttp"}.Printf("error when serving connection %q: %v\n", "a<->b", "EOF")
	if got, want := b.String(), `{"level":"warn","from":"fasthttp","message":"error when serving connection \"a<->b\": EOF"}`+"\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	b.Reset()
	Logger{Log: zerolog.New(&b).Level(zerolog.InfoLevel), Level: zerolog.DebugLevel, From: "fasthttp"}.Printf("quiet")
	Logger{}.Printf("nowhere")
	if b.Len() != 0 {
		t.Errorf("got %q, want nothing below the level", b.String())
	}
}
