package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/replay-dev/replay/pkg/capture"
	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
)

func newRecordCmd(io stdio, logger func() (zerolog.Logger, error)) *cobra.Command {
	var listen, upstream, out, session string
	var duration time.Duration
	var forward bool
	var fo capture.ForwardOptions
	opt := &fo.Options
	cmd := &cobra.Command{
		Use:   "record",
		Short: "Record traffic: a reverse proxy (or, --forward, a forward proxy) that writes every exchange as an RRPair",
		Long: `Put replay in front of a service: every request passes to --upstream
unchanged (method, raw path, header case and order, body) and its answer
comes back unchanged, while each exchange is written as an RRPair line with
ts, duration, the recorded answer and a session tag: one per client
connection, or --session header:NAME / cookie:NAME; its host the upstream's,
the client's Host header kept. Lines go in the order requests began. Large or binary bodies
are written as base64. --redact-header and --redact-json keep secrets out of
the file. An exchange a replay could not send (a request target that is not
a path) is passed on but not written, counted as unreplayable. Stop with Ctrl-C (or SIGTERM): exchanges under way finish, the
file is flushed and closed (or after --duration). Plain HTTP/1.x upstreams.

With --forward, record the service's own calls instead: point its
HTTP_PROXY and HTTPS_PROXY at --listen. TLS inside CONNECT is terminated
with a certificate of the CA of --ca-cert/--ca-key, or of one generated once
into --ca-out (the service must trust it); each call is made again to the
real host, its certificate checked (--upstream-insecure, --upstream-ca,
--client-cert/--client-key). HTTP/2 and gRPC when the service offers h2.
Pairs say direction OUT, for replay mock.`,
		Example: `  replay record --listen :8080 --upstream http://svc:80 -o traffic.jsonl
  replay record --listen 127.0.0.1:9000 --upstream http://127.0.0.1:8080 --session cookie:sid --redact-header Authorization -o t.jsonl
  replay record --forward --listen 127.0.0.1:8888 --ca-out ./ca -o outbound.jsonl`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := logger()
			if err != nil {
				return err
			}
			opt.Session = session
			w, closeOut, err := output(out, io.out)
			if err != nil {
				return err
			}
			p, err := capture.Start(listen, upstream, forward, w, fo)
			if err != nil {
				closeOut()
				return err
			}
			log.Info().Str("listen", p.Addr()).Str("upstream", upstream).Bool("forward", forward).Str("output", out).Msg("recording; stop with Ctrl-C")
			waitStop(cmd.Context(), duration)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err = p.Close(ctx)
			if cerr := closeOut(); err == nil {
				err = cerr
			}
			st := p.Stats()
			log.Info().Int64("pairs", st.Pairs).Int64("connections", st.Connections).Int64("tunnels", st.Tunnels).Int64("errors", st.Errors).
				Int64("too_large", st.TooLarge).Int64("unreplayable", st.Unreplayable).Int64("out_of_order", st.OutOfOrder).Msg("recorded")
			return err
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&listen, "listen", "127.0.0.1:8080", "listen on `ADDR`")
	fs.StringVar(&upstream, "upstream", "", "forward to this `URL` (http://host:port)")
	fs.StringVarP(&out, "output", "o", "", "write the pairs to `FILE` (default: standard output)")
	fs.StringVar(&session, "session", "", "the session of a pair: `header:NAME` or cookie:NAME (default: one per client connection)")
	fs.StringArrayVar(&opt.RedactHeader, "redact-header", nil, "record this header's values as REDACTED (repeatable)")
	fs.StringArrayVar(&opt.RedactJSON, "redact-json", nil, "record this JSON body field (a dotted path) as REDACTED (repeatable)")
	fs.Int64Var(&opt.MaxBody, "max-body", 16<<20, "an exchange with a larger request body is passed on but not recorded; a larger answer body is not recorded (`BYTES`)")
	fs.DurationVar(&duration, "duration", 0, "stop recording after this long (default: when interrupted)")
	fs.DurationVar(&opt.IdleTimeout, "idle-timeout", 2*time.Minute, "close client connections idle this long")
	fs.DurationVar(&opt.Window, "reorder-window", capture.DefaultWindow, "lines go in the order requests began: a finished exchange waits this long at most for earlier ones; one under way longer is written when it ends, counted out_of_order")
	fs.BoolVar(&forward, "forward", false, "a forward proxy for the service's own calls (HTTP_PROXY, HTTPS_PROXY): pairs with direction OUT")
	addCAFlags(fs, &fo.CA)
	addUpstreamFlags(fs, &fo.Reach)
	return cmd
}

// output opens -o, or returns stdout. A recording is written as it goes
// (what was recorded before a crash stays), not put in place at the end.
func output(path string, stdout io.Writer) (io.Writer, func() error, error) {
	if path == "" || path == "-" {
		return stdout, func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, fmt.Errorf("-o: %w", err)
	}
	return f, f.Close, nil
}
