package main

import (
	"fmt"
	"time"

	"github.com/replay-dev/replay/cmd/replay/internal/progress"
	"github.com/replay-dev/replay/internal/outfile"
	"github.com/replay-dev/replay/pkg/e2e"
	"github.com/replay-dev/replay/pkg/run"
	"github.com/spf13/pflag"
)

// runFlags are the flags of replay run (and demo): the run's options, and
// what the command makes of the run: reports, progress, metrics.
type runFlags struct {
	run      run.Options
	report   reportOptions
	progress progress.Mode
	metrics  string
	linger   time.Duration
}

func newRunFlags() *runFlags {
	return &runFlags{run: run.DefaultOptions()}
}

// addLoadFlags adds the load flags, shared by every command that describes
// a load (run, demo, export k6); vus is --vus's default.
func addLoadFlags(fs *pflag.FlagSet, o *run.Load, vus int) {
	o.VUs = vus
	fs.StringVar(&o.Target, "target", o.Target, "send every request to `URL` (scheme://host[:port]) instead of its recorded host")
	fs.IntVar(&o.VUs, "vus", o.VUs, "virtual users, each on its own connection: the closed model's users, an open model's starting pool")
	fs.IntVar(&o.MaxVUs, "max-vus", o.MaxVUs, "with --rate or --pace recorded: the pool may grow to this many VUs; beyond, due iterations are dropped (default max(--vus, 1000))")
	fs.DurationVar(&o.Duration, "duration", o.Duration, "issue for this long, walking the file round and round (implies --mode loop, as --iterations and --stages do)")
	fs.Int64Var(&o.Iterations, "iterations", o.Iterations, "stop after this many iterations in total (implies --mode loop)")
	fs.StringVar(&o.Mode, "mode", o.Mode, "file walk: once (every iteration once, the default without --duration) or loop")
	fs.StringVar(&o.Rate, "rate", o.Rate, "arrival rate: start iterations at `R`/s (or R/m) on a clock, whatever the SUT does; Rreq/s: R requests a second, as iterations of the mean requests one holds")
	fs.StringVar(&o.Stages, "stages", o.Stages, "ramp the --rate, or the --vus without --rate: `LIST` of DURATION:TARGET (ramp) and TARGET@DURATION (hold); they set the run's length")
	fs.StringVar(&o.Pace, "pace", o.Pace, "recorded: send each request at its recorded time (ts) / --speed, on one timeline")
	fs.Float64Var(&o.Speed, "speed", o.Speed, "with --pace recorded or --think recorded: divide recorded times by this factor")
	fs.StringVar(&o.Think, "think", o.Think, "recorded: in the closed model, wait a session's recorded gaps between requests")
	fs.DurationVar(&o.LateAfter, "late-after", o.LateAfter, "count a request begun more than this after it was due as late")
	fs.BoolVar(&o.PrecisePacing, "precise-pacing", false, "with --rate or --pace recorded: the scheduler spins (yielding) through the last 2ms before each due time rather than trusting timers that round sub-millisecond waits up; costs up to one CPU core while it waits")
}

// markGiven records which load flags were given explicitly, so that an
// explicit zero is refused rather than taken for "not set".
func markGiven(fs *pflag.FlagSet, o *run.Load) {
	o.DurationGiven = fs.Changed("duration")
	o.MaxVUsGiven = fs.Changed("max-vus")
}

// addFlags adds the flags of replay run; vus is --vus's default.
func (f *runFlags) addFlags(fs *pflag.FlagSet, vus int) {
	o := &f.run
	addLoadFlags(fs, &o.Load, vus)
	addTransformFlags(fs, &o.Transforms)
	addEventFlags(fs, &o.Events)
	addFilterFlags(fs, &o.Filter)
	addShardFlags(fs, &o.Shard)
	addHTTPFlags(fs, &o.HTTP)
	fs.DurationVar(&o.Grace, "grace", o.Grace, "after the stop, how long in-flight requests may finish")
	fs.IntVar(&o.DecodeCacheMiB, "decode-cache", o.DecodeCacheMiB, "unescape request bodies written as JSON text with escapes once, at start, when they fit in this many `MIB`; otherwise (or 0) at each request")
	f.report.addFlags(fs, "out")
	fs.IntVar(&o.DryRun, "dry-run", o.DryRun, "print the first `N` requests exactly as they would go on the wire, and send nothing")
	fs.StringVar(&o.DumpFailures, "dump-failures", o.DumpFailures, "write failed requests (request as sent, answer received) as JSON lines to `FILE`")
	fs.IntVar(&o.DumpMax, "dump-max", o.DumpMax, "with --dump-failures: at most this many per endpoint and kind of failure")
	fs.StringVar(&o.Compare.Mode, "compare", o.Compare.Mode, "compare each answer with the recorded one: `status`, or body (status and body, JSON-aware)")
	fs.StringArrayVar(&o.Compare.Headers, "compare-header", nil, "with --compare: also compare this response header `NAME` with the recorded one (repeatable)")
	fs.StringArrayVar(&o.Compare.Ignore, "compare-ignore", nil, "with --compare body: ignore this JSON `PATH` (id, data.created_at, items.*.ts; repeatable)")
	fs.BoolVar(&o.AbortOnFail, "abort-on-fail", o.AbortOnFail, "stop the run (and write the reports) as soon as a threshold can no longer pass: errors<N, dropped<N, late<N")
	fs.Float64Var(&o.Tolerance, "tolerance", o.Tolerance, "a step of --stages keeps up when it achieves at least (1 − `FRACTION`) of its target")
	fs.Float64Var(&o.SUTCPUs, "sut-cpus", 0, "the SUT's vCPUs: also report requests a second per vCPU (answered and succeeded)")
	fs.StringVar(&f.progress.Name, "progress", "auto", "live progress: auto (a bar on a terminal, log lines otherwise), bar, log or off")
	fs.DurationVar(&f.progress.Every, "progress-every", 0, "how often progress updates (default 1s for the bar, 5s for log lines)")
	fs.MarkHidden("progress-every")
	fs.StringVar(&f.metrics, "metrics", "", "serve live Prometheus metrics on `ADDR` (such as :9090) at /metrics during the run")
	fs.DurationVar(&f.linger, "metrics-linger", 0, "with --metrics: keep serving this long after the run, for a last scrape")
	fs.StringVar(&o.CPUProfile, "cpuprofile", o.CPUProfile, "write a Go CPU profile of the run to `FILE` (for developers)")
	fs.MarkHidden("cpuprofile")
}

// files are the files the run reads and writes, for outfile.CheckDistinct.
func (f *runFlags) files() []outfile.Named {
	o := &f.run
	return append(f.report.paths("--out"), outfile.In("--file", o.File), outfile.In("--transforms", o.Transforms.File),
		outfile.Out("--dump-failures", o.DumpFailures), outfile.Out("--cpuprofile", o.CPUProfile))
}

// addHTTPFlags adds the flags of where requests go and how they are sent.
func addHTTPFlags(fs *pflag.FlagSet, o *run.HTTP) {
	fs.BoolVar(&o.KeepHost, "keep-host", o.KeepHost, "send the recorded Host header instead of the --target host")
	fs.BoolVar(&o.NoConnectionReuse, "no-connection-reuse", o.NoConnectionReuse, "open a new connection for every request")
	fs.BoolVar(&o.Insecure, "insecure", o.Insecure, "skip TLS certificate verification")
	fs.DurationVar(&o.Timeout, "timeout", o.Timeout, "per-request timeout: connect, write and the whole answer")
	fs.StringArrayVar(&o.HostMap, "host-map", nil, "send a recorded host elsewhere: `HOST=URL` (repeatable), or @FILE of such lines; unmapped hosts go to --target")
	fs.StringVar(&o.CA, "ca", o.CA, "trust the certificate authorities in this PEM `FILE` (instead of the system's)")
	fs.StringVar(&o.Cert, "cert", o.Cert, "client certificate, PEM `FILE` (with --key)")
	fs.StringVar(&o.Key, "key", o.Key, "client certificate key, PEM `FILE` (with --cert)")
	fs.StringVar(&o.ServerName, "server-name", o.ServerName, "TLS server `NAME` to send (SNI) and verify, instead of the host dialed")
	fs.StringVar(&o.Proxy, "proxy", o.Proxy, "carry connections through an HTTP CONNECT proxy: `URL` http://[user:password@]host:port")
	fs.BoolVar(&o.Timings, "timings", o.Timings, "measure the phases of each request: connecting, tls, sending, waiting (first byte), receiving")
	fs.IntVar(&o.FollowRedirects, "follow-redirects", o.FollowRedirects, "follow up to `N` redirects of each request (each hop counted as a request); 0: a 3xx is the answer, as recorded")
	fs.IntVar(&o.MaxAnswerBody, "max-answer-body", o.MaxAnswerBody, "keep at most this many `BYTES` of an answer's body when something reads it (--compare body, correlate, cookies, --dump-failures); a longer answer fails as other. Otherwise bodies are read and dropped as they arrive")
	fs.IntVar(&o.MaxHeaderBytes, "max-header-bytes", o.MaxHeaderBytes, "an answer's status line and headers must fit in this many `BYTES`; a longer head fails the request")
	fs.StringVar(&o.HTTP2, "http2", o.HTTP2, "HTTP/2 over TLS, chosen per connection by ALPN: auto (offer h2 when the file holds HTTP/2 or gRPC pairs), on (always offer it) or off (HTTP/1.1 only)")
	fs.BoolVar(&o.H2C, "h2c", o.H2C, "speak cleartext HTTP/2 (prior knowledge) to http:// targets")
	fs.IntVar(&o.Streams, "streams", o.Streams, "HTTP/2: `N` VUs share each connection, each with its one request in flight as a stream of it (h2load's -m N); 1: a connection each")
	fs.DurationVar(&o.MaxConnDuration, "max-conn-duration", o.MaxConnDuration, "close and reopen a VU's connection once it is this old, to spread load over the pods behind a Service")
}

// addTransformFlags adds the transform flags: a file, and the common cases.
func addTransformFlags(fs *pflag.FlagSet, o *run.Transforms) {
	fs.StringVar(&o.File, "transforms", o.File, "rewrite requests as the YAML `FILE` says (timestamps, jwt, headers, query, path, host, correlate, fresh)")
	fs.BoolVar(&o.ShiftTime, "shift-time", o.ShiftTime, "move timestamps found in requests by (now − recorded ts)")
	fs.StringVar(&o.JWTSecret, "jwt-secret", o.JWTSecret, "re-sign JWTs (Authorization, cookies) with this HMAC `SECRET`")
	fs.StringVar(&o.JWTKey, "jwt-key", o.JWTKey, "re-sign JWTs (Authorization, cookies) with this PEM private key `FILE` (RSA, EC, Ed25519)")
	fs.StringArrayVar(&o.SetHeaders, "set-header", nil, "set a request header, `'Name: value'` (repeatable)")
	fs.StringArrayVar(&o.RemoveHeaders, "remove-header", nil, "remove a request header `NAME` (repeatable)")
	fs.StringVar(&o.HostHeader, "host-header", o.HostHeader, "send this Host header `HOST[:PORT]`, whatever --target says")
	fs.StringVar(&o.Cookies, "cookies", o.Cookies, "per-session cookie jar: auto (on when recorded answers set cookies), on, off")
}

// addEventFlags adds the flags that follow events out of the SUT:
// correlation IDs on the requests, and the sinks that see the events leave.
func addEventFlags(fs *pflag.FlagSet, o *run.Events) {
	fs.StringVar(&o.Correlate, "correlate", o.Correlate, "stamp each request with a correlation ID: header, body or both (header when a sink is given)")
	fs.StringArrayVar(&o.Only, "correlate-only", nil, "stamp only the requests of this `ENDPOINT` (as reports name it: 'POST /events'), those that become events (repeatable)")
	fs.StringVar(&o.Header, "correlate-header", o.Header, "the header that carries the ID (CloudEvents binary mode)")
	fs.StringVar(&o.JSON, "correlate-json", o.JSON, "the top-level JSON body field that carries the ID (a structured CloudEvent)")
	addSinkFlags(fs, o)
	fs.DurationVar(&o.Drain, "drain", o.Drain, "after the last request, wait at most this long for events still on their way")
	fs.DurationVar(&o.DrainIdle, "drain-idle", o.DrainIdle, "stop draining once no event arrived for 3 times this long")
	fs.BoolVar(&o.Deltas, "e2e-deltas", o.Deltas, fmt.Sprintf("also time each event from one e2e stage to the next (settled → completed); costs about %d bytes per event in flight (events seen within one --drain window)", e2e.DeltaBytes))
}

// addSinkFlags adds the sink flags, shared by run and sink.
func addSinkFlags(fs *pflag.FlagSet, o *run.Events) {
	fs.StringVar(&o.HTTP, "sink-http", o.HTTP, "receive events delivered over HTTP on `ADDR` (CloudEvents, or any POST with the ID); the stage from /stage/NAME")
	fs.StringArrayVar(&o.Redis, "sink-redis", nil, "consume events from Redis: `redis://host:port/db?list=NAME` or ?stream=NAME[&group=G][&stage=S] (repeatable)")
	fs.StringArrayVar(&o.NATS, "sink-nats", nil, "subscribe to events on NATS: `nats://host:port?subject=NAME`[&stage=S] (repeatable)")
}

// addFilterFlags adds the flags that choose which pairs to replay, shared
// by run and inspect.
func addFilterFlags(fs *pflag.FlagSet, o *run.Filter) {
	fs.StringArrayVar(&o.Keep, "keep", nil, "keep only pairs matching `KEY=VALUE` (repeatable, all must match): method=GET,POST  path=REGEX  uri=REGEX  status=2xx,404  endpoint=NAME;NAME  host=HOST[:PORT],...  direction=IN,OUT (default IN: OUT pairs skipped)  tag.NAME=VALUE,...")
	fs.StringArrayVar(&o.Drop, "drop", nil, "drop pairs matching `KEY=VALUE` (repeatable, any may match), keys as --keep")
	fs.StringVar(&o.From, "from", o.From, "drop pairs recorded before this RFC 3339 `TIME` (and pairs without ts)")
	fs.StringVar(&o.To, "to", o.To, "drop pairs recorded at or after this RFC 3339 `TIME` (and pairs without ts)")
	fs.Float64Var(&o.Sample, "sample", o.Sample, "keep this `FRACTION` of iterations (whole sessions), chosen by --seed")
	fs.Uint64Var(&o.Seed, "seed", o.Seed, "seed of --sample (the same seed keeps the same iterations) and of fresh values (transform fresh; random without --seed)")
}

// addShardFlags adds the flags that split a run across processes (pods):
// each takes a disjoint share of the iterations and of the load.
func addShardFlags(fs *pflag.FlagSet, o *run.Shard) {
	fs.StringVar(&o.Shard, "shard", o.Shard, "run share `i/n` of the iterations (k mod n = i, sessions whole) with 1/n of the VUs and rate")
	fs.IntVar(&o.Shards, "shards", o.Shards, "run one of `n` shards, i taken from JOB_COMPLETION_INDEX (a Kubernetes Indexed Job)")
	fs.StringVar(&o.StartAt, "start-at", o.StartAt, "wait until this RFC 3339 `TIME` before sending, so that all shards begin together")
}

// flagError is the error for a flag value that is not one of the allowed.
func flagError(flag, want, got string) error {
	return fmt.Errorf("%s: want %s, got %q", flag, want, got)
}
