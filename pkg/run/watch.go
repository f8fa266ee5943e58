package run

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/replay-dev/replay/pkg/recording"
	"github.com/replay-dev/replay/pkg/report"
	"github.com/rs/zerolog"
)

// watchEvery is how often the threshold watcher looks.
const watchEvery = 100 * time.Millisecond

// watchThresholds returns a context cancelled, with a cause wrapping
// ErrAborted, once one of ts can no longer pass, whatever the rest of
// the run does (errors<N, dropped<N, late<N). stop ends the watch and
// waits for its goroutine; it may be called more than once.
func watchThresholds(ctx context.Context, ts []report.Threshold, src recording.LiveView, log zerolog.Logger) (_ context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(watchEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				if th, ok := hopeless(ts, src); ok {
					log.Warn().Str("threshold", th.Text).Msg("--abort-on-fail: the threshold can no longer pass; stopping")
					cancel(fmt.Errorf("%w: %s", ErrAborted, th.Text))
					return
				}
			}
		}
	})
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			close(done)
			wg.Wait()
			cancel(nil)
		})
	}
}

// hopeless returns the first threshold that can no longer pass.
func hopeless(ts []report.Threshold, src recording.LiveView) (report.Threshold, bool) {
	l := src.Now()
	for _, th := range ts {
		if th.Hopeless(l.Failed, l.Dropped, l.Late) {
			return th, true
		}
	}
	return report.Threshold{}, false
}
