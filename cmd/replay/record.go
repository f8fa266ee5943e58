package main

import (
	"context"
	"time"

	"github.com/replay-dev/replay/internal/outfile"
	"github.com/replay-dev/replay/pkg/capture"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
)

func newRecordCmd(io stdio, logger func() (zerolog.Logger, error)) *cobra.Command {
	var listen, upstream, session string
	var out capture.Output
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
are written as base64. Credentials are recorded as REDACTED (--redact
credentials: Authorization, Cookie, Set-Cookie, API keys, tokens; --redact
none to keep them), and --redact-header and --redact-json add to them. The
file (0600) is written beside -o and put in place when recording stops; an
existing one is refused without --force or --append. An exchange a replay could not send (a request target that is not
a path) is passed on but not written, counted as unreplayable. Stop with Ctrl-C (or SIGTERM): exchanges under way finish, the
file is flushed and put in place (or after --duration). Bodies stream
through, at most --max-body of each recorded. Plain HTTP/1.x upstreams.
It listens on loopback unless --allow-remote.

With --forward, record the service's own calls instead: point its
HTTP_PROXY and HTTPS_PROXY at --listen. TLS inside CONNECT is terminated
with a certificate of the CA of --ca-cert/--ca-key, or of one generated once
into --ca-out (the service must trust it); each call is made again to the
real host, its certificate checked (--upstream-insecure, --upstream-ca,
--client-cert/--client-key); loopback and link-local hosts only when
--allow-upstream names them. HTTP/2 and gRPC when the service offers h2.
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
			opt.Session, out.Stdout, opt.Log = session, io.out, log
			p, err := capture.Start(listen, upstream, forward, out, fo)
			if err != nil {
				return err
			}
			// A second signal waits for the recording to be put in place,
			// cutting the exchanges still under way short.
			hurry, release := outfile.Hold()
			defer release()
			log.Info().Str("listen", p.Addr()).Str("upstream", upstream).Bool("forward", forward).Str("output", out.Path).Str("redact", opt.Redact).Msg("recording (credentials as --redact says); stop with Ctrl-C")
			waitStop(cmd.Context(), duration)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			go func() {
				select {
				case <-hurry:
					cancel()
				case <-ctx.Done():
				}
			}()
			err = p.Close(ctx)
			log.Info().EmbedObject(p.Stats()).Msg("recorded")
			return err
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&listen, "listen", "127.0.0.1:8080", "listen on `ADDR`")
	fs.StringVar(&upstream, "upstream", "", "forward to this `URL` (http://host:port)")
	fs.StringVarP(&out.Path, "output", "o", "", "write the pairs to `FILE`, 0600, put in place when recording stops (default: standard output)")
	fs.BoolVar(&out.Force, "force", false, "replace -o's file if it exists")
	fs.BoolVar(&out.Append, "append", false, "add to -o's file if it exists, its lines kept")
	fs.StringVar(&session, "session", "", "the session of a pair: `header:NAME` or cookie:NAME (default: one per client connection)")
	fs.StringVar(&opt.Redact, "redact", capture.RedactCredentials, "the headers redacted: `PRESET` credentials (Authorization, Cookie, Set-Cookie, API keys, tokens) or none")
	fs.StringArrayVar(&opt.RedactHeader, "redact-header", nil, "record this header's values as REDACTED (repeatable)")
	fs.StringArrayVar(&opt.RedactJSON, "redact-json", nil, "record this JSON body field (a dotted path) as REDACTED (repeatable)")
	fs.Int64Var(&opt.MaxBody, "max-body", 16<<20, "an exchange with a larger request body is passed on but not recorded; a larger answer body is not recorded (`BYTES`)")
	fs.DurationVar(&duration, "duration", 0, "stop recording after this long (default: when interrupted)")
	fs.IntVar(&opt.MaxConns, "max-conns", capture.DefaultMaxConns, "serve at most `N` client connections at once (the rest wait to be accepted)")
	fs.DurationVar(&opt.IdleTimeout, "idle-timeout", 2*time.Minute, "close client connections idle this long: waiting for a request, or no byte of a body for this long (HTTP/2 too)")
	fs.DurationVar(&opt.HeadTimeout, "head-timeout", capture.DefaultHeadTimeout, "close client connections whose request head is not whole this long after its first byte")
	fs.DurationVar(&opt.Window, "reorder-window", rrpair.DefaultWindow, "lines go in the order requests began: a finished exchange waits this long at most for earlier ones; one under way longer is written when it ends, counted out_of_order")
	fs.BoolVar(&forward, "forward", false, "a forward proxy for the service's own calls (HTTP_PROXY, HTTPS_PROXY): pairs with direction OUT")
	fs.BoolVar(&opt.AllowRemote, "allow-remote", false, "listen beyond loopback (--listen :8080): anyone who reaches the port is served")
	fs.BoolVar(&opt.AllowPublicClients, "allow-public-clients", false, "with --allow-remote, serve clients from public addresses too (closed by default)")
	fs.StringArrayVar(&opt.AllowUpstream, "allow-upstream", nil, "with --forward, reach loopback or link-local upstreams in this `CIDR` for clients (refused by default; repeatable)")
	addCAFlags(fs, &fo.CA)
	addUpstreamFlags(fs, &fo.Reach)
	return cmd
}
