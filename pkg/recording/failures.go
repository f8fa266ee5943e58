package recording

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
)

// MaxDumpBody is how much of a request or response body a failure dump keeps.
const MaxDumpBody = 4 << 10

// FailureDump writes failed requests as JSON lines (--dump-failures): for
// each endpoint and each kind of failure (a status, or an error kind), the
// first few, with the request as sent and the answer received. One line:
//
//	{"time":"...","vu":3,"line":12,"endpoint":"POST /events","failure":"500",
//	 "target":"127.0.0.1:8080","latency_ms":1.2,
//	 "request":{"head":"POST /events HTTP/1.1\r\nHost: ...\r\n\r\n","body":"{...}","body_bytes":90},
//	 "response":{"status":500,"headers":{"Content-Type":["text/plain"]},"body":"boom","body_bytes":4}}
//
// A body that is not UTF-8 comes as body_base64; one longer than
// MaxDumpBody is cut and marked "truncated". An error has "error" and no
// response.
type FailureDump struct {
	endpoints []string
	perKey    int

	mu     sync.Mutex // guards the fields below and writes to w
	w      io.Writer
	counts map[dumpKey]int
	dumped int
	err    error // the first write error
}

type dumpKey struct {
	endpoint uint16
	failure  string
}

// NewFailureDump writes at most perKey failures per endpoint and kind to w.
func NewFailureDump(w io.Writer, endpoints []string, perKey int) *FailureDump {
	return &FailureDump{w: w, endpoints: endpoints, perKey: perKey, counts: map[dumpKey]int{}}
}

var _ result.FailureSink = (*FailureDump)(nil)

type dumpBody struct {
	Head       string              `json:"head,omitempty"`
	Status     int                 `json:"status,omitempty"`
	Headers    map[string][]string `json:"headers,omitempty"`
	Trailers   map[string][]string `json:"trailers,omitempty"`
	Body       string              `json:"body,omitempty"`
	BodyBase64 string              `json:"body_base64,omitempty"`
	BodyBytes  int                 `json:"body_bytes"`
	Truncated  bool                `json:"truncated,omitempty"`
}

type dumpLine struct {
	Time      time.Time `json:"time"`
	VU        int       `json:"vu"`
	Line      int       `json:"line"`
	Endpoint  string    `json:"endpoint"`
	Failure   string    `json:"failure"` // the status, "grpc:" and the gRPC status name, or the error kind
	Error     string    `json:"error,omitempty"`
	Target    string    `json:"target"`
	LatencyMS float64   `json:"latency_ms"`
	Request   dumpBody  `json:"request"`
	Response  *dumpBody `json:"response,omitempty"`
}

// Failed implements result.FailureSink.
func (d *FailureDump) Failed(f *result.Failure) {
	failure := f.Result.Err.String()
	switch {
	case f.Result.Err != result.ErrNone:
	case f.Result.GRPC && f.Result.GRPCStatus != result.GRPCOK:
		failure = "grpc:" + result.GRPCCodeName(f.Result.GRPCStatus)
	default:
		failure = strconv.Itoa(int(f.Result.Status))
	}
	key := dumpKey{f.Result.Endpoint, failure}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.counts[key] >= d.perKey || d.err != nil {
		return
	}
	d.counts[key]++
	line := dumpLine{
		Time: time.Unix(0, f.Result.Due).UTC(), VU: f.VU, Line: f.Pair.Line, Failure: failure,
		Target: f.Addr, LatencyMS: float64(f.Result.End-f.Result.Due) / 1e6,
		Request: dumpBody{Head: string(f.Head)},
	}
	if int(f.Result.Endpoint) < len(d.endpoints) {
		line.Endpoint = d.endpoints[f.Result.Endpoint]
	}
	if f.Err != nil {
		line.Error = f.Err.Error()
	}
	setBody(&line.Request, f.Body)
	if a := f.Answer; a != nil {
		rb := &dumpBody{Status: a.Status(), Headers: fieldMap(a.Headers())}
		if t := a.Trailers(); len(t) > 0 {
			rb.Trailers = fieldMap(t)
		}
		setBody(rb, a.RawBody())
		line.Response = rb
	}
	out, err := json.Marshal(line)
	if err == nil {
		_, err = d.w.Write(append(out, '\n'))
	}
	if err != nil {
		d.err = fmt.Errorf("dump failures: %w", err)
		return
	}
	d.dumped++
}

// Dumped is the number of failures written.
func (d *FailureDump) Dumped() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.dumped
}

// Err is the first write error, if any.
func (d *FailureDump) Err() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.err
}

// fieldMap is header fields as the dump writes them: values by name.
func fieldMap(hs []rrpair.Header) map[string][]string {
	m := make(map[string][]string, len(hs))
	for _, h := range hs {
		m[string(h.Name)] = append(m[string(h.Name)], string(h.Value))
	}
	return m
}

func setBody(b *dumpBody, body []byte) {
	b.BodyBytes = len(body)
	if len(body) > MaxDumpBody {
		body, b.Truncated = body[:MaxDumpBody], true
	}
	if utf8.Valid(body) {
		b.Body = string(body)
	} else {
		b.BodyBase64 = base64.StdEncoding.EncodeToString(body)
	}
}
