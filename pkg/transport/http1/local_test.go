//go:build linux

package http1

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/schedule"
	"github.com/replay-dev/replay/pkg/transport/conn"
	"github.com/replay-dev/replay/pkg/vu"
	"github.com/rs/zerolog"
)

// TestOutOfDescriptorsIsLocal runs out of file descriptors for real: the
// process's soft limit lowered to what is open, the VU's socket fails with
// EMFILE, and that is the generator's limit (local), not a connect error
// of the SUT, logged once with the limit and how to raise it. Not
// parallel: the limit is the whole process's while it runs.
func TestOutOfDescriptorsIsLocal(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	f := openLines(t, manyLines(3)...)
	tr := newTransport(t, Options{Conn: conn.Options{Target: "http://" + ln.Addr().String(), Timeout: 5 * time.Second}})
	var logs bytes.Buffer
	sink := &collect{}
	p := &vu.Pool{File: f, Sink: sink, Transport: tr, Config: vu.Config{Load: schedule.Load{VUs: 1}, Log: zerolog.New(&logs)}}

	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	low := old
	low.Cur = uint64(len(ents)) + 8
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	var fill []*os.File // take every descriptor left under the limit
	for i := 0; i < 64; i++ {
		fh, err := os.Open(os.DevNull)
		if err != nil {
			if !errors.Is(err, syscall.EMFILE) {
				t.Errorf("open: %v", err)
			}
			break
		}
		fill = append(fill, fh)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	_, runErr := p.Run(ctx)
	cancel()
	for _, fh := range fill {
		fh.Close()
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	if runErr != nil {
		t.Fatal(runErr)
	}
	if n := sink.Count(func(r result.Result) bool { return r.Err == result.ErrLocal }); n != 3 {
		t.Errorf("got %d local errors, want 3: %+v", n, sink.Results())
	}
	out := logs.String()
	if n := strings.Count(out, "ran out of its own resources"); n != 1 {
		t.Errorf("got %d log lines about the generator's limits, want 1:\n%s", n, out)
	}
	for _, want := range []string{`"nofile_soft":`, `"nofile_hard":`, "ulimit -n"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %s:\n%s", want, out)
		}
	}
}
