package mock

import (
	"context"
	"io"
	"time"

	"github.com/replay-dev/replay/internal/listen"
	"github.com/replay-dev/replay/internal/outfile"
	"github.com/replay-dev/replay/pkg/metrics/expo"
)

// Run is what `replay mock` adds around a server: its report file, its
// live metrics, how long it serves and how it stops.
type Run struct {
	// Out is the JSON report's path (--out; "" none), written whole or
	// not at all on exit.
	Out string
	// Metrics is where live counts are served (--metrics ADDR; "" none),
	// bound as the mock's own addresses are: beyond loopback only with
	// --allow-remote, public clients closed unless --allow-public-clients.
	Metrics string
	// Duration stops the mock after this long (0: when ctx ends).
	Duration time.Duration
	// Grace lets the answers under way finish on stop; a second signal
	// (outfile.Exit) cuts it short, and the report is still written.
	Grace time.Duration
	// Text gets the text report on exit (nil: none).
	Text io.Writer
}

// Serve runs a mock until ctx ends (or r.Duration), then closes it and
// writes its report. The process's exit is held from the start to the
// report's last byte (outfile.Hold), so a second signal, however soon
// after the first, cuts the grace short and the report is still written,
// never leaving a temporary file.
func Serve(ctx context.Context, o Options, r Run) error {
	hurry, release := outfile.Hold()
	defer release()
	files := []outfile.Named{outfile.In("--file", o.File), outfile.In("--transforms", o.TransformsFile), outfile.Out("--out", r.Out), outfile.Out("--record-misses", o.RecordMisses)}
	if err := outfile.CheckDistinct(files); err != nil {
		return err
	}
	outs, err := outfile.CreateSet(outfile.Output[*Report]{Flag: "--out", Path: r.Out, Write: WriteJSON})
	if err != nil {
		return err
	}
	defer outs.Close()
	s, err := Start(o)
	if err != nil {
		return err
	}
	if r.Metrics != "" {
		ln, err := listen.Bind(r.Metrics, "--metrics", s.policy, "mock metrics", o.Log)
		if err != nil {
			s.Close(context.Background())
			return err
		}
		srv := expo.Serve(ln, s.WriteMetrics)
		defer srv.Close()
	}
	o.Log.Info().Strs("addrs", s.Addrs()).Str("file", o.File).Msg("mock serving; stop with Ctrl-C")
	waitStop(ctx, r.Duration, hurry)
	cctx, cancel := context.WithTimeout(context.Background(), r.Grace)
	defer cancel()
	go func() {
		select {
		case <-hurry:
			cancel()
		case <-cctx.Done():
		}
	}()
	err = s.Close(cctx)
	rep := s.Report()
	if r.Text != nil {
		rep.WriteText(r.Text)
	}
	if werr := outs.Write(&rep); err == nil {
		err = werr
	}
	return err
}

// waitStop waits until ctx ends, d when given, or hurry closes.
func waitStop(ctx context.Context, d time.Duration, hurry <-chan struct{}) {
	var after <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		after = t.C
	}
	select {
	case <-ctx.Done():
	case <-after:
	case <-hurry:
	}
}
