package run

import (
	"io"
	"time"

	"github.com/replay-dev/replay/pkg/recording"
	"github.com/replay-dev/replay/pkg/report"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/transform"
	"github.com/replay-dev/replay/pkg/transport"
	"github.com/replay-dev/replay/pkg/transport/conn"
	"github.com/replay-dev/replay/pkg/transport/negotiate"
	"github.com/replay-dev/replay/pkg/vu"
	"github.com/rs/zerolog"
)

// Defaults of the options (DefaultOptions), as the flags show them.
const (
	DefaultTimeout   = conn.DefaultTimeout
	DefaultGrace     = vu.DefaultGrace
	DefaultLateAfter = vu.DefaultLateAfter
	DefaultCookies   = transform.CookiesAuto
	// DefaultMaxAnswerBody and DefaultMaxHeaderBytes bound what is kept
	// of an answer.
	DefaultMaxAnswerBody  = transport.DefaultMaxBody
	DefaultMaxHeaderBytes = transport.DefaultMaxHeaderBytes
	// DefaultDecodeCacheMiB bounds the request bodies unescaped once at
	// open: 256 MiB holds a file of a million 256-byte escaped bodies.
	DefaultDecodeCacheMiB = 256
)

// Options are one run as a user asks for it: the flags of replay run, as
// given (durations parsed, everything else raw). Execute checks them all
// before anything is sent. Start from DefaultOptions: the zero value of a
// field means what the flag's zero means (--speed 0 is an error), not its
// default.
type Options struct {
	// File is the traffic file, "-" for Stdin (spooled to a temporary
	// file so that it can be mapped). Open, when set, opens the traffic
	// instead (the demo's built-in traffic).
	File  string
	Stdin io.Reader
	Open  func(rrpair.Options) (*rrpair.File, error)

	Load       Load
	HTTP       HTTP
	Transforms Transforms
	Events     Events
	Filter     Filter
	Shard      Shard
	Compare    Compare

	// DecodeCacheMiB bounds, in MiB, the request bodies with JSON escapes
	// unescaped once when the file is opened (rrpair.Options.BodyCache)
	// rather than at each request; a file whose bodies need more keeps
	// unescaping them at each request. 0 turns the cache off.
	DecodeCacheMiB int

	// Grace is how long in-flight requests may finish after the stop.
	Grace time.Duration
	// Thresholds are --threshold expressions ("p99<200ms"): checked
	// before the run, and with AbortOnFail watched during it; a judged
	// run evaluates them against its summary (Summary.Thresholds).
	Thresholds  []string
	AbortOnFail bool
	// Tolerance: a step of --stages keeps up when its achieved rate is at
	// least (1 − Tolerance) × its target (Summary.JudgeSteps).
	Tolerance float64
	// SUTCPUs, when above 0, is the SUT's vCPUs: the summary gives the
	// requests a second per vCPU.
	SUTCPUs float64
	// DryRun > 0 writes that many requests, as they would go on the wire,
	// to DryRunTo and sends nothing; Execute then returns no summary.
	DryRun   int
	DryRunTo io.Writer
	// DumpFailures is a file to write failed requests to (JSON lines), at
	// most DumpMax per endpoint and kind of failure.
	DumpFailures string
	DumpMax      int
	// CPUProfile is a file to write a Go CPU profile of the run to.
	CPUProfile string

	// Log receives the run's own messages (never one per request); the
	// zero Logger discards them.
	Log zerolog.Logger
	// Ready, when set, is called once every option is checked, the file
	// is open and the run is built, before anything is started or sent
	// (not on a dry run): the caller creates its output files there. An
	// error ends the run with nothing sent.
	Ready func(Plan) error
	// Live, when set, is called just before the first request with the
	// counters of the run under way (progress, metrics). An error ends
	// the run with nothing sent. The stop it returns, when not nil, is
	// called once the VUs have stopped, before events are drained.
	Live func(recording.LiveView) (stop func(), err error)
}

// Load is the load: the flags shared by every command that describes one
// (run, demo, export k6).
type Load struct {
	// Target, "scheme://host[:port]", replaces every recorded host.
	Target string
	// VUs are the closed model's users, an open model's starting pool.
	VUs int
	// MaxVUs lets an open model's pool grow (0: max(VUs, 1000)).
	MaxVUs   int
	Duration time.Duration
	// DurationGiven and MaxVUsGiven say that --duration and --max-vus
	// were given explicitly: then 0 is refused rather than meaning "not
	// set" (the caller knows, cobra's Flags().Changed).
	DurationGiven, MaxVUsGiven bool
	Iterations                 int64
	// Mode is the file walk: "once", "loop", or "" to infer it.
	Mode string
	// Rate is an arrival rate: "2000/s", "120000/m".
	Rate string
	// Stages ramp the rate, or the VUs: "30s:1000/s,1000/s@1m".
	Stages string
	// Pace is "" or "recorded"; Think is "", "none" or "recorded".
	Pace, Think string
	// Speed divides recorded times (Pace, Think).
	Speed     float64
	LateAfter time.Duration
	// PrecisePacing has an open model's scheduler spin through the last
	// stretch before each due time (up to a CPU core) for a smaller lag.
	PrecisePacing bool
}

// HTTP is where requests go and how they are sent.
type HTTP struct {
	// HostMap sends a recorded host elsewhere: "HOST=URL" items, or
	// "@FILE" naming a file of such lines (blank lines and # comments
	// skipped).
	HostMap           []string
	KeepHost          bool
	NoConnectionReuse bool
	// Timeout bounds each request: connect, write and the whole answer.
	Timeout time.Duration
	// Insecure skips certificate verification; CA, Cert and Key are PEM
	// files; ServerName is sent (SNI) and verified instead of the host.
	Insecure        bool
	CA, Cert, Key   string
	ServerName      string
	Proxy           string // http://[user:password@]host:port
	Timings         bool
	FollowRedirects int
	MaxConnDuration time.Duration
	// HTTP2 is "auto", "on" or "off": whether TLS handshakes offer h2
	// (auto: when the file holds HTTP/2 or gRPC pairs). H2C speaks
	// cleartext HTTP/2 by prior knowledge to http:// targets.
	HTTP2 string
	H2C   bool
	// Streams, above 1, has that many VUs share each HTTP/2 connection,
	// each with its one request in flight as a stream of it.
	Streams int
	// MaxAnswerBody bounds the answer body kept for those who read it
	// (--compare body, correlate, --dump-failures): a longer answer fails
	// as "other". When nothing reads bodies they are dropped as they
	// arrive and this does not apply. 0 means DefaultMaxAnswerBody.
	MaxAnswerBody int
	// MaxHeaderBytes bounds an answer's status line and headers; a longer
	// head fails the request. 0 means DefaultMaxHeaderBytes.
	MaxHeaderBytes int
}

// Transforms are the rewrites of outgoing requests: a YAML file, and the
// common cases, appended after it in this order: host, headers,
// timestamps, jwt.
type Transforms struct {
	File          string
	ShiftTime     bool
	JWTSecret     string
	JWTKey        string
	SetHeaders    []string // "Name: value"
	RemoveHeaders []string
	HostHeader    string
	Cookies       string // auto, on, off
	// Builtin is a transforms file's content, used when File is empty
	// (the demo's), named BuiltinName in errors.
	Builtin     []byte
	BuiltinName string
}

// Events follow what a request becomes after the SUT accepted it: a
// correlation ID stamped on each request, and the sinks that see the
// events leave the SUT.
type Events struct {
	// Correlate is where the ID goes: "header", "body", "both", or ""
	// (header, when a sink is given or Only is set).
	Correlate string
	// Only stamps only these endpoints (as reports name them).
	Only []string
	// Header and JSON are the header and top-level JSON body field that
	// carry the ID.
	Header, JSON string
	// HTTP is an address to receive events on; Redis and NATS are URLs
	// of lists, streams and subjects to consume.
	HTTP        string
	Redis, NATS []string
	// Drain is how long to wait after the last request for events still
	// on their way; DrainIdle stops the drain once no event came for 3
	// times as long.
	Drain, DrainIdle time.Duration
	// Deltas measures the time between consecutive e2e stages of the same
	// event (settled → completed), at a cost of e2e.DeltaBytes per event
	// in flight, forgotten after Drain.
	Deltas bool
}

// Stamped reports that requests carry a correlation ID, and a run then
// tracks their events (and waits Drain for them after it).
func (e *Events) Stamped() bool {
	return e.Correlate != "" || len(e.Only) > 0 || e.HTTP != "" || len(e.Redis)+len(e.NATS) > 0
}

// Overhead is what a run adds to its schedule at most, beside the stop's
// grace and the drain: spawning the VUs, folding the summary.
const Overhead = 250 * time.Millisecond

// MostTime is how long a run of o that issues for d may take at most:
// d, then the in-flight requests' --grace (or --timeout, when shorter:
// no request outlives it), then, when drained, --drain for the events
// still on their way (runs whose requests are stamped), and Overhead.
func (o *Options) MostTime(d time.Duration, drained bool) time.Duration {
	t := d + Overhead
	if timeout := o.HTTP.Timeout; timeout > 0 {
		t += min(o.Grace, timeout)
	} else {
		t += o.Grace
	}
	if drained && o.Events.Stamped() {
		t += o.Events.Drain
	}
	return t
}

// Filter chooses the pairs to replay (run and inspect).
type Filter struct {
	// Keep (all must match) and Drop (any may match) are KEY=VALUE rules:
	// method=GET,POST path=REGEX uri=REGEX status=2xx endpoint=NAME
	// host=HOST[:PORT] direction=IN,OUT tag.NAME=VALUE (rrpair.Rule).
	Keep, Drop []string
	// From and To bound the recorded time (RFC 3339).
	From, To string
	// Sample keeps this fraction of iterations, chosen by Seed. Seed
	// also derives fresh values (transform fresh) when SeedGiven says
	// the user gave it; otherwise each run draws its own.
	Sample    float64
	Seed      uint64
	SeedGiven bool
}

// Shard splits a run over processes: Shard is "i/n"; or Shards is n and
// i is JobIndex (a Kubernetes Indexed Job's JOB_COMPLETION_INDEX, which
// the caller reads). StartAt (RFC 3339) has every shard begin together.
type Shard struct {
	Shard    string
	Shards   int
	JobIndex string
	StartAt  string
}

// Compare checks each answer against the recorded one: Mode "status" or
// "body" (status and body, JSON-aware), ignoring the JSON paths in Ignore;
// Headers are response headers compared too.
type Compare struct {
	Mode    string
	Ignore  []string
	Headers []string
}

// DefaultOptions are the options of replay run given no flag.
func DefaultOptions() Options {
	return Options{
		Load:           Load{VUs: 1, Speed: 1, LateAfter: DefaultLateAfter},
		HTTP:           HTTP{Timeout: DefaultTimeout, HTTP2: negotiate.Auto, MaxAnswerBody: DefaultMaxAnswerBody, MaxHeaderBytes: DefaultMaxHeaderBytes},
		Transforms:     Transforms{Cookies: DefaultCookies},
		Events:         Events{Header: "ce-id", JSON: "id", Drain: 30 * time.Second, DrainIdle: time.Second},
		Filter:         Filter{Sample: 1, Seed: 1},
		Grace:          DefaultGrace,
		DecodeCacheMiB: DefaultDecodeCacheMiB,
		DumpMax:        5,
		Tolerance:      report.DefaultTolerance,
	}
}

// Plan is what a run is about to do, given to Options.Ready.
type Plan struct {
	// Endpoints is the file's endpoint table, as reports name them.
	Endpoints []string
	// Settings are the run's configuration, for the HTML report.
	Settings []report.Setting
	// Empty says that the run has no iteration to issue: a shard that got
	// none of the file (more shards than iterations). It sends nothing
	// and returns a valid empty summary; its thresholds do not apply.
	Empty bool
}
