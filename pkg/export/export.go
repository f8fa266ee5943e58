// Package export writes recorded traffic in other tools' formats: a k6
// script (with its data beside it) and vegeta's JSON targets. Both stream
// the file: one pair decoded at a time. Neither tool replays gRPC (a
// request content-type of application/grpc...): those pairs are skipped
// and counted.
package export

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/replay-dev/replay/pkg/rrpair"
)

// Request is one pair as the exporters see it.
type Request struct {
	Method  string
	URL     string // absolute: the target (or the recorded scheme and host) and the raw URI
	Headers []rrpair.Field
	Body    []byte
	Name    string // the endpoint, as reports name it
	Status  int    // recorded; 0 when not recorded
	// TS is the recorded time (Unix ns; HasTS false without ts), and
	// Duration the recorded response time (0 when not recorded): what
	// recorded think time is made of.
	TS       int64
	HasTS    bool
	Duration time.Duration
	// Pair is the pair decoded, its recorded answer with it: what a
	// transform carried into the export reads of it.
	Pair *rrpair.Pair
}

// Stats are what an export wrote and skipped.
type Stats struct {
	Iterations int // k6 only: recorded iterations written
	Requests   int // requests (vegeta targets) written
	GRPC       int // gRPC pairs skipped (also reported to skip)
	Sessions   int // k6 only: WebSocket sessions written (among Requests)
	// Env names the environment variables a k6 script reads (the JWT keys
	// of its transforms not embedded), each with what it holds:
	// "REPLAY_JWT_KEY (the HS256 key)"; "" for none.
	Env string
	// Warning, when not empty, says how the export had to change what
	// was asked for (a rate k6 cannot write exactly), for the user to
	// read before using the script.
	Warning string
}

// skipGRPC is why a gRPC pair is not exported.
const skipGRPC = "a gRPC pair: neither k6's http module nor vegeta replays gRPC"

// Walk calls fn for each pair of f, iteration by iteration, in file order;
// r.Body is valid only during the call.
// target replaces the recorded scheme and host when not empty. Pairs that
// cannot be exported (no host and no target, gRPC) are skipped, and
// reported to skip with their line; gRPC pairs are also counted in
// st.GRPC.
func Walk(f *rrpair.File, target string, st *Stats, fn func(iter int, r *Request) error, skip func(line int, why string)) error {
	cur := f.NewCursor().WithResponses()
	endpoints := f.Endpoints()
	target = strings.TrimRight(target, "/")
	var p rrpair.Pair
	for k := 0; k < f.Iterations(); k++ {
		cur.Start(k)
		for {
			more, err := cur.Next(&p)
			if err != nil {
				return err
			}
			if !more {
				break
			}
			if p.IsGRPC() {
				st.GRPC++
				skip(p.Line, skipGRPC)
				continue
			}
			base := target
			if base == "" {
				if len(p.Req.Host) == 0 {
					skip(p.Line, "no recorded host, and no --target")
					continue
				}
				scheme := string(p.Req.Scheme)
				if scheme == "" {
					scheme = "http"
				}
				base = scheme + "://" + string(p.Req.Host)
			}
			r := Request{Method: string(p.Req.Method), URL: base + string(p.Req.URI), Body: p.Req.Body,
				Name: endpoints[p.Endpoint], Status: p.Res.Status, Pair: &p}
			r.TS, r.HasTS = p.UnixNano()
			r.Duration, _ = p.RecordedDuration() // a bad duration: none, as a replay reads it
			for _, h := range p.Req.Headers {
				name := string(h.Name)
				if strings.EqualFold(name, "Host") || strings.EqualFold(name, "Content-Length") ||
					rrpair.ConnectionHeader(name) || strings.HasPrefix(name, ":") {
					continue // the tool sets these itself
				}
				r.Headers = append(r.Headers, rrpair.Field{Name: name, Value: string(h.Value)})
			}
			if err := fn(k, &r); err != nil {
				return err
			}
		}
	}
	return nil
}

// vegetaTarget is one line of vegeta's JSON targets format
// (vegeta attack -format=json).
type vegetaTarget struct {
	Method string              `json:"method"`
	URL    string              `json:"url"`
	Body   []byte              `json:"body,omitempty"` // base64, as vegeta reads it
	Header map[string][]string `json:"header,omitempty"`
}

// Vegeta writes one vegeta JSON target per pair. A repeated header goes
// out as vegeta sends it: one line per value, as recorded.
func Vegeta(w io.Writer, f *rrpair.File, target string, skip func(line int, why string)) (Stats, error) {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	var st Stats
	err := Walk(f, target, &st, func(_ int, r *Request) error {
		if isUpgrade(r.Pair) {
			skip(r.Pair.Line, "a WebSocket session: vegeta sends HTTP requests only")
			return nil
		}
		t := vegetaTarget{Method: r.Method, URL: r.URL, Body: r.Body}
		if len(r.Headers) > 0 {
			t.Header = map[string][]string{}
			for _, h := range r.Headers {
				t.Header[h.Name] = append(t.Header[h.Name], h.Value)
			}
		}
		st.Requests++
		return enc.Encode(t)
	}, skip)
	if err != nil {
		return st, err
	}
	return st, bw.Flush()
}

// K6Load is the load a k6 script's scenario reflects: replay's load flags.
type K6Load struct {
	VUs int
	// MostVUs is the most VUs the run could use (schedule.Load.MostVUs): an
	// arrival rate's preAllocatedVUs and maxVUs, so that k6 has every VU
	// replay would have before the first iteration is due, instead of
	// dropping iterations while it creates them.
	MostVUs    int
	Duration   time.Duration // closed model: run this long (constant-vus); 0: every iteration once (shared-iterations)
	Iterations int64         // closed model: this many in total (0: the file's, or as many as Duration allows)
	Rate       float64       // iterations per second: constant-arrival-rate
	Stages     []K6Stage     // ramping-arrival-rate (RateStages) or ramping-vus
	RateStages bool          // the stages' targets are iterations per second
	// Think waits the recorded gap before each request of an iteration
	// but the first, as --think recorded does: (its ts − the previous
	// request's ts − that one's recorded duration) / Speed, at least 0.
	Think bool
	Speed float64 // divides the recorded gaps (0: 1)
}

// K6Stage is one stage: reach Target (VUs or iterations/s) over Duration.
type K6Stage struct {
	Duration time.Duration
	Target   float64
}

// k6Request is one request in the script's data file.
type k6Request struct {
	Method  string            `json:"method"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    string            `json:"body,omitempty"`
	Base64  bool              `json:"b64,omitempty"`
	Name    string            `json:"name"`
	Status  int               `json:"status,omitempty"`
	Think   float64           `json:"think,omitempty"` // seconds to sleep before it
	// TS is the recorded time in Unix ns (a string: JavaScript's numbers
	// do not hold it), for the transforms; Learn the recorded values the
	// correlations learn the live counterparts of, by step.
	TS    string            `json:"ts,omitempty"`
	Learn map[string]string `json:"learn,omitempty"`
	// WS is the recorded WebSocket session of an upgrade pair (k6ws.go).
	WS *k6WS `json:"ws,omitempty"`
}

// K6Options are what a k6 script is made of beside the traffic.
type K6Options struct {
	Target string // replaces the recorded scheme and host when not empty
	Source string // the traffic file's name, for the script's header
	Load   K6Load
	// Transforms, when set, are done inside the script at run time.
	Transforms *K6Transforms
	// Checks, when set, are the thresholds the script carries.
	Checks *K6Checks
}

// K6 writes a k6 script to script and its data (one JSON array of
// iterations, each an array of requests) to data; dataName is how the
// script opens it ("./script.data.json").
func K6(script, data io.Writer, dataName string, f *rrpair.File, o K6Options, skip func(line int, why string)) (Stats, error) {
	load := o.Load
	bw := bufio.NewWriter(data)
	bw.WriteString("[")
	last := -1
	var st Stats
	var prev Request // the previous request of the iteration (its times), for think time
	rates, warning, err := k6Rates(load)
	if err != nil {
		return st, err
	}
	st.Warning = warning
	err = Walk(f, o.Target, &st, func(k int, r *Request) error {
		var ws *k6WS
		if isUpgrade(r.Pair) {
			var why string
			if ws, why = k6WSOf(r); ws == nil {
				skip(r.Pair.Line, why)
				return nil
			}
			st.Sessions++
		}
		if k != last {
			if last >= 0 {
				bw.WriteString("],\n")
			}
			bw.WriteString("[")
			last, prev = k, Request{}
			st.Iterations++
		} else {
			bw.WriteString(",")
		}
		kr := k6RequestOf(r, o, &prev)
		if ws != nil {
			kr.WS, kr.Status, kr.Body, kr.Base64 = ws, 0, "", false
			kr.Headers = k6Headers(slices.DeleteFunc(r.Headers, func(h rrpair.Field) bool { return wsHandshakeHeader(h.Name) }))
		}
		b, err := json.Marshal(kr)
		if err != nil {
			return err
		}
		st.Requests++
		_, err = bw.Write(b)
		return err
	}, skip)
	if err != nil {
		return st, err
	}
	if last >= 0 {
		bw.WriteString("]")
	}
	bw.WriteString("]\n")
	if err := bw.Flush(); err != nil {
		return st, err
	}
	st.Env = k6Env(o, st.Env)
	b, err := k6Script(o, dataName, st, rates)
	if err != nil {
		return st, err
	}
	_, err = io.WriteString(script, b)
	return st, err
}

// k6RequestOf is a request as the data file holds it: its think time after
// *prev (which it then becomes), and with transforms its time and what
// they learn from it; a body that is not UTF-8 in base64.
func k6RequestOf(r *Request, o K6Options, prev *Request) k6Request {
	kr := k6Request{Method: r.Method, URL: r.URL, Name: r.Name, Status: r.Status, Headers: k6Headers(r.Headers)}
	if o.Load.Think {
		kr.Think = thinkTime(prev, r, o.Load.Speed)
	}
	*prev = Request{TS: r.TS, HasTS: r.HasTS, Duration: r.Duration}
	if o.Transforms != nil {
		if r.HasTS {
			kr.TS = strconv.FormatInt(r.TS, 10)
		}
		kr.Learn = o.Transforms.learn(r.Pair)
	}
	if utf8.Valid(r.Body) {
		kr.Body = string(r.Body)
	} else {
		kr.Body, kr.Base64 = base64.StdEncoding.EncodeToString(r.Body), true
	}
	return kr
}

// k6Env adds to env the signing keys the script reads from the
// environment, those the transforms were given no value of.
func k6Env(o K6Options, env string) string {
	if o.Transforms == nil {
		return env
	}
	for _, k := range o.Transforms.Keys {
		if k.Value == "" {
			env = strings.TrimPrefix(env+", "+k.Env+" (the "+k.Alg+" key)", ", ")
		}
	}
	return env
}

// k6Headers are a request's headers as k6 takes them, one value a name.
// Names that differ only in case are one header to k6 (it canonicalizes
// them), so they are merged under the first spelling. Repeated values are
// joined as HTTP allows, with ", ", except Cookie's, which are joined with
// "; " (RFC 6265 §5.4, RFC 9113 §8.2.3): a server reads "a=1, b=2" as one
// cookie a with the value "1, b=2".
func k6Headers(hs []rrpair.Field) map[string]string {
	if len(hs) == 0 {
		return nil
	}
	out := make(map[string]string, len(hs))
	spelled := make(map[string]string, len(hs)) // lower-case name → the key in out
	for _, h := range hs {
		lower := strings.ToLower(h.Name)
		key, ok := spelled[lower]
		if !ok {
			spelled[lower] = h.Name
			out[h.Name] = h.Value
			continue
		}
		sep := ", "
		if lower == "cookie" {
			sep = "; "
		}
		out[key] += sep + h.Value
	}
	return out
}

// thinkTime is the recorded gap before r, after prev, in seconds (to the
// millisecond), as --think recorded waits it: 0 unless both have ts (the
// first request of an iteration has no prev).
func thinkTime(prev, r *Request, speed float64) float64 {
	if !prev.HasTS || !r.HasTS {
		return 0
	}
	if speed <= 0 {
		speed = 1
	}
	gap := max(time.Duration(r.TS-prev.TS)-prev.Duration, 0)
	return math.Round(gap.Seconds()/speed*1000) / 1000
}

// scenario is the options.scenarios entry for load; rates are its
// arrival rates as k6 writes them (k6Rates), the start rate first.
func scenario(l K6Load, iters int, rates K6Rates) string {
	vus := max(l.VUs, 1)
	most := max(l.MostVUs, vus)
	stages := func() string {
		var b strings.Builder
		for i, s := range l.Stages {
			target := trimFloat(s.Target)
			if l.RateStages {
				target = fmt.Sprint(rates.Counts[i+1])
			}
			fmt.Fprintf(&b, "\n        { duration: '%s', target: %s },", k6Duration(s.Duration), target)
		}
		return b.String() + "\n      "
	}
	switch {
	case l.RateStages && len(l.Stages) > 0:
		return fmt.Sprintf(`{
      executor: 'ramping-arrival-rate',%s
      startRate: %d,
      timeUnit: '%s',
      preAllocatedVUs: %d,
      maxVUs: %d,
      stages: [%s],
    }`, rateNote(l, rates), rates.Counts[0], k6Duration(rates.Unit), most, most, stages())
	case l.Rate > 0:
		return fmt.Sprintf(`{
      executor: 'constant-arrival-rate',%s
      rate: %d,
      timeUnit: '%s',
      duration: '%s',
      preAllocatedVUs: %d,
      maxVUs: %d,
    }`, rateNote(l, rates), rates.Counts[0], k6Duration(rates.Unit), k6Duration(rateDuration(l, iters)), most, most)
	case len(l.Stages) > 0:
		return fmt.Sprintf(`{
      executor: 'ramping-vus',
      startVUs: 0,
      stages: [%s],
    }`, stages())
	case l.Duration > 0 && l.Iterations == 0:
		return fmt.Sprintf(`{
      executor: 'constant-vus',
      vus: %d,
      duration: '%s',
    }`, vus, k6Duration(l.Duration))
	}
	// Every iteration once, or --iterations in total, stopping at
	// --duration if that comes first, as replay stops.
	n := int64(iters)
	if l.Iterations > 0 {
		n = l.Iterations
	}
	maxDuration := "1h"
	if l.Duration > 0 {
		maxDuration = k6Duration(l.Duration)
	}
	return fmt.Sprintf(`{
      executor: 'shared-iterations',
      vus: %d,
      iterations: %d,
      maxDuration: '%s',
    }`, min(int64(vus), max(n, 1)), max(n, 1), maxDuration)
}

// rateNote is a comment on an arrival rate written per a timeUnit other
// than 1s: the rates asked for in iterations a second, and how near.
func rateNote(l K6Load, rates K6Rates) string {
	if rates.Unit == time.Second {
		return ""
	}
	asked := []string{rateFigure(l.Rate)}
	for i := 1; i < len(rates.Counts); i++ {
		asked = append(asked, rateFigure(l.Stages[i-1].Target))
	}
	how := "exact"
	if rates.RelErr > 0 {
		how = "within " + percent(rates.RelErr) + " of it"
	}
	return fmt.Sprintf("\n      // %s iterations/s (k6 takes a whole number of iterations per timeUnit: the rates below are %s)", strings.Join(asked, ", "), how)
}

// rateDuration is how long an arrival rate runs: --duration, else long
// enough to start every iteration once, as replay does.
func rateDuration(l K6Load, iters int) time.Duration {
	if l.Duration > 0 {
		return l.Duration
	}
	return max(time.Duration(float64(iters)/l.Rate*float64(time.Second)).Round(time.Second), time.Second)
}

//
// Before each request but the first of an iteration, a VU sleeps the
// recorded gap (--think recorded): the time between the previous request's
// recorded answer and this request's recorded start, divided by %s.`

func k6Duration(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("%ds", int64(d/time.Second))
	}
	return fmt.Sprintf("%dms", d.Milliseconds())
}

func trimFloat(f float64) string {
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.3f", f), "0"), ".")
}

// SessionsWritten is a summary line's word on the WebSocket sessions among
// the requests: none, or " (N WebSocket sessions)".
func (st Stats) SessionsWritten() string {
	if st.Sessions == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d WebSocket sessions)", st.Sessions)
}

// GRPCSkipped is a summary line's word on the gRPC pairs an export
// skipped: none, or "; N gRPC pairs skipped".
func (st Stats) GRPCSkipped() string {
	switch st.GRPC {
	case 0:
		return ""
	case 1:
		return "; 1 gRPC pair skipped"
	}
	return fmt.Sprintf("; %d gRPC pairs skipped", st.GRPC)
}
