package main

import (
	"context"
	"time"

	"github.com/replay-dev/replay/pkg/mock"
	"github.com/replay-dev/replay/pkg/reach"
	"github.com/replay-dev/replay/pkg/tlsca"
	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// mockFlags are replay mock's flags beyond mock.Options.
type mockFlags struct {
	o     mock.Options
	run   mock.Run
	quiet bool
}

func newMockCmd(std stdio, logger func() (zerolog.Logger, error)) *cobra.Command {
	f := &mockFlags{}
	cmd := &cobra.Command{
		Use:   "mock -f FILE [--listen ADDR] [--serve HOST=ADDR]...",
		Short: "Stand in for a service's dependencies: answer its calls from recorded pairs",
		Long: `Answer a service's calls to its dependencies from the OUT pairs of FILE (what
replay record --forward writes), so that the service runs for real while
replay plays every dependency around it. Point the service's HTTP_PROXY and
HTTPS_PROXY at --listen (TLS inside CONNECT is terminated with the CA of
--ca-cert/--ca-key or --ca-out, which the service must trust), or its base
URLs at --serve HOST=ADDR listeners; a file with one host needs no mapping.
A Speedscale snapshot's reaction file is answered from too: each line an
answer whose request is a signature (mutableSignature), its answers given
in instance order.

A call matches a recorded one by method, host, path, query (in any order)
and body (JSON in any key order); headers only with --match-header; a
REDACTED value matches anything. When nothing matches exactly, the values
that rotate (UUIDs, times, JWTs, nonces) are ignored and the match tried
again (--no-auto-ignore). The k-th identical call gets the k-th recorded
answer, then the last again (--cycle: round again). A miss fails closed:
--miss-status (404) naming the nearest recorded request and what differs,
unless --passthrough. SIGINT or SIGTERM stops it and prints the report.`,
		Example: `  replay mock -f outbound.jsonl --listen 127.0.0.1:8888 --ca-out ./ca
  replay mock -f outbound.jsonl --serve api.stripe.com=127.0.0.1:9001 --ca-cert ca/ca.pem --ca-key ca/ca-key.pem
  replay mock -f traffic.jsonl --keep direction=IN --listen :8080 --latency 0 --out mock.json
  replay mock -f snapshot-reaction.jsonl --listen 127.0.0.1:8888 --ca-out ./ca`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := logger()
			if err != nil {
				return err
			}
			return f.serve(cmd.Context(), std, log)
		},
	}
	f.addFlags(cmd.Flags())
	return cmd
}

func (f *mockFlags) addFlags(fs *pflag.FlagSet) {
	o := &f.o
	fs.StringVarP(&o.File, "file", "f", "", "traffic `FILE` to answer from (RRPair JSON Lines)")
	fs.StringVar(&o.Listen, "listen", "127.0.0.1:8080", "serve as the proxy (HTTP_PROXY, HTTPS_PROXY) on `ADDR`; also origin-form requests to the file's one host (\"\" for none)")
	fs.StringArrayVar(&o.Serve, "serve", nil, "answer origin-form requests on ADDR as the recorded HOST (`HOST=ADDR`, repeatable)")
	fs.StringArrayVar(&o.Keep, "keep", nil, "keep only pairs matching `KEY=VALUE` (repeatable, all must match), as replay run reads it (default direction=OUT)")
	fs.StringArrayVar(&o.Drop, "drop", nil, "drop pairs matching `KEY=VALUE` (repeatable, any may match), keys as --keep")
	addCAFlags(fs, &o.CA)
	fs.StringArrayVar(&o.MatchHeaders, "match-header", nil, "match this header's values too (`NAME`, repeatable; headers are ignored otherwise)")
	fs.StringArrayVar(&o.Ignore, "ignore", nil, "ignore this JSON `PATH` (id, items.*.ts) and query parameter when matching (repeatable)")
	fs.BoolVar(&o.NoAutoIgnore, "no-auto-ignore", false, "no second pass ignoring the values that rotate (UUIDs, ULIDs, times, JWTs, nonces)")
	fs.StringVar(&o.Order, "order", "global", "count the k-th call of a signature across all callers (global) or per client connection (session)")
	fs.StringVar(&o.Session, "session", "", "with --order session: per value of `header:NAME` or cookie:NAME instead of per connection")
	fs.BoolVar(&o.Cycle, "cycle", false, "after the last recorded answer of a signature, round again (default: the last again)")
	fs.IntVar(&o.MissStatus, "miss-status", mock.DefaultMissStatus, "the `STATUS` of a miss")
	fs.BoolVar(&o.Passthrough, "passthrough", false, "send a miss to the real host instead, and answer with its answer")
	fs.BoolVar(&o.AllowRemote, "allow-remote", false, "let --listen and --serve bind beyond loopback (refused otherwise: an open relay into this host)")
	fs.BoolVar(&o.AllowPublicClients, "allow-public-clients", false, "with --allow-remote, answer clients from public addresses too (closed otherwise)")
	fs.StringArrayVar(&o.AllowUpstream, "allow-upstream", nil, "let --passthrough reach loopback and link-local addresses of this `CIDR` (repeatable; refused otherwise)")
	fs.StringVar(&o.RecordMisses, "record-misses", "", "with --passthrough: record those exchanges to `FILE` (direction OUT)")
	addUpstreamFlags(fs, &o.Upstream)
	fs.StringVar(&o.Latency, "latency", "recorded", "answer after the recorded duration (recorded), at once (0), or after it times a `FACTOR` (0.5)")
	fs.StringVar(&o.WSPace, "ws-pace", mock.WSPaceReply, "send a WebSocket session's server messages each after the client message it followed (reply), or at its recorded offset times --latency's factor (recorded)")
	fs.StringVar(&o.TransformsFile, "transforms", "", "rewrite answers with the transforms of `FILE` (timestamps, headers, echo)")
	fs.StringVar(&o.Faults.ErrorRate, "error-rate", "", "answer this share with an error status instead (`PERCENT:STATUS`, 5%:503)")
	fs.StringVar(&o.Faults.Delay, "delay", "", "answer this share later (`PERCENT:DURATION`, 10%:200ms)")
	fs.StringVar(&o.Faults.ResetRate, "reset-rate", "", "reset the connection of this `PERCENT` of requests (1%)")
	fs.Uint64Var(&o.Seed, "seed", 1, "seed of the faults: the same seed, the same faults on the same calls")
	fs.StringVar(&f.run.Out, "out", "", "write the report as JSON to `FILE` on exit")
	fs.StringVar(&f.run.Metrics, "metrics", "", "serve live counts in Prometheus format at /metrics on `ADDR`")
	fs.DurationVar(&f.run.Duration, "duration", 0, "stop after this long (default: when interrupted)")
	fs.DurationVar(&f.run.Grace, "grace", 5*time.Second, "on stop, let answers under way finish within this long")
	fs.DurationVar(&o.IdleTimeout, "idle-timeout", 2*time.Minute, "close client connections idle this long (HTTP/1.1, HTTP/2, tunnels), and those whose body or answer stalls this long")
	fs.IntVar(&o.MaxConns, "max-conns", mock.DefaultMaxConns, "serve at most `N` client connections at once (the rest wait to be accepted)")
	fs.DurationVar(&o.HeadTimeout, "head-timeout", mock.DefaultHeadTimeout, "close a connection whose request head (TLS handshake, HTTP/2 preface) has not all come this long after its first byte")
	fs.BoolVarP(&f.quiet, "quiet", "q", false, "do not print the text report")
}

// serve runs the mock until ctx ends (or --duration), then writes its
// report.
func (f *mockFlags) serve(ctx context.Context, std stdio, log zerolog.Logger) error {
	f.o.Log, f.run.Text = log, std.out
	if f.quiet {
		f.run.Text = nil
	}
	return mock.Serve(ctx, f.o, f.run)
}

// waitStop waits until ctx ends, or d when given.
func waitStop(ctx context.Context, d time.Duration) {
	if d <= 0 {
		<-ctx.Done()
		return
	}
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// addCAFlags adds the flags of the CA that terminates TLS (record
// --forward, mock).
func addCAFlags(fs *pflag.FlagSet, o *tlsca.Options) {
	fs.StringVar(&o.Cert, "ca-cert", "", "the CA certificate (PEM `FILE`) whose leaf certificates terminate TLS; the service trusts it")
	fs.StringVar(&o.Key, "ca-key", "", "the CA's private key (PEM `FILE`)")
	fs.StringVar(&o.OutDir, "ca-out", "", "generate a CA once into `DIR` (ca.pem 0644, ca-key.pem 0600), or use the one there")
	fs.IntVar(&o.MaxLeaves, "leaf-cache", tlsca.DefaultMaxLeaves, "keep the leaf certificates of this many server `NAMES`, the least recently used dropped")
}

// addUpstreamFlags adds how the real hosts are reached (record --forward,
// mock --passthrough).
func addUpstreamFlags(fs *pflag.FlagSet, o *reach.Options) {
	fs.BoolVar(&o.Insecure, "upstream-insecure", false, "do not check the real hosts' certificates")
	fs.StringVar(&o.CA, "upstream-ca", "", "trust the CAs of this PEM `FILE` for the real hosts (default: the system's)")
	fs.StringVar(&o.Cert, "client-cert", "", "present this client certificate (PEM `FILE`) to real hosts that want mutual TLS")
	fs.StringVar(&o.Key, "client-key", "", "the client certificate's key (PEM `FILE`)")
}
