// Package export writes recorded traffic in other tools' formats: a k6
// script (with its data beside it) and vegeta's JSON targets. Both stream
// the file: one pair decoded at a time.
package export

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
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
}

// Walk calls fn for each pair of f, iteration by iteration, in file order;
// r.Body is valid only during the call.
// target replaces the recorded scheme and host when not empty. Pairs that
// cannot be exported (no host and no target) are skipped, and reported to
// skip with their line.
func Walk(f *rrpair.File, target string, fn func(iter int, r *Request) error, skip func(line int, why string)) error {
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
				Name: endpoints[p.Endpoint], Status: p.Res.Status}
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

// Vegeta writes one vegeta JSON target per pair. It returns the number of
// targets written.
func Vegeta(w io.Writer, f *rrpair.File, target string, skip func(line int, why string)) (int, error) {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	n := 0
	err := Walk(f, target, func(_ int, r *Request) error {
		t := vegetaTarget{Method: r.Method, URL: r.URL, Body: r.Body}
		if len(r.Headers) > 0 {
			t.Header = map[string][]string{}
			for _, h := range r.Headers {
				t.Header[h.Name] = append(t.Header[h.Name], h.Value)
			}
		}
		n++
		return enc.Encode(t)
	}, skip)
	if err != nil {
		return n, err
	}
	return n, bw.Flush()
}

// K6Load is the load a k6 script's scenario reflects: replay's load flags.
type K6Load struct {
	VUs        int
	MaxVUs     int
	Duration   time.Duration // closed model: run this long (constant-vus); 0: every iteration once (shared-iterations)
	Iterations int64         // closed model without duration: this many in total (0: the file's)
	Rate       float64       // iterations per second: constant-arrival-rate
	Stages     []K6Stage     // ramping-arrival-rate (RateStages) or ramping-vus
	RateStages bool          // the stages' targets are iterations per second
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
}

// K6 writes a k6 script to script and its data (one JSON array of
// iterations, each an array of requests) to data; dataName is how the
// script opens it ("./script.data.json"). It returns the iterations and
// requests written.
func K6(script, data io.Writer, dataName string, f *rrpair.File, target, source string, load K6Load, skip func(line int, why string)) (iters, reqs int, err error) {
	bw := bufio.NewWriter(data)
	bw.WriteString("[")
	last := -1
	err = Walk(f, target, func(k int, r *Request) error {
		if k != last {
			if last >= 0 {
				bw.WriteString("],\n")
			}
			bw.WriteString("[")
			last = k
			iters++
		} else {
			bw.WriteString(",")
		}
		kr := k6Request{Method: r.Method, URL: r.URL, Name: r.Name, Status: r.Status}
		if len(r.Headers) > 0 {
			kr.Headers = map[string]string{}
			for _, h := range r.Headers { // k6 takes one value a name: join as HTTP allows
				if v, ok := kr.Headers[h.Name]; ok {
					kr.Headers[h.Name] = v + ", " + h.Value
				} else {
					kr.Headers[h.Name] = h.Value
				}
			}
		}
		if utf8.Valid(r.Body) {
			kr.Body = string(r.Body)
		} else {
			kr.Body, kr.Base64 = base64.StdEncoding.EncodeToString(r.Body), true
		}
		b, err := json.Marshal(kr)
		if err != nil {
			return err
		}
		reqs++
		_, err = bw.Write(b)
		return err
	}, skip)
	if err != nil {
		return iters, reqs, err
	}
	if last >= 0 {
		bw.WriteString("]")
	}
	bw.WriteString("]\n")
	if err := bw.Flush(); err != nil {
		return iters, reqs, err
	}
	_, err = fmt.Fprintf(script, k6Script, source, iters, reqs, dataName, scenario(load, iters))
	return iters, reqs, err
}

// scenario is the options.scenarios entry for load.
func scenario(l K6Load, iters int) string {
	vus := max(l.VUs, 1)
	stages := func() string {
		var b strings.Builder
		for _, s := range l.Stages {
			fmt.Fprintf(&b, "\n        { duration: '%s', target: %s },", k6Duration(s.Duration), trimFloat(s.Target))
		}
		return b.String() + "\n      "
	}
	switch {
	case l.RateStages && len(l.Stages) > 0:
		return fmt.Sprintf(`{
      executor: 'ramping-arrival-rate',
      startRate: %s,
      timeUnit: '1s',
      preAllocatedVUs: %d,
      maxVUs: %d,
      stages: [%s],
    }`, trimFloat(l.Rate), vus, max(l.MaxVUs, vus), stages())
	case l.Rate > 0:
		return fmt.Sprintf(`{
      executor: 'constant-arrival-rate',
      rate: %s,
      timeUnit: '1s',
      duration: '%s',
      preAllocatedVUs: %d,
      maxVUs: %d,
    }`, trimFloat(l.Rate), k6Duration(rateDuration(l, iters)), vus, max(l.MaxVUs, vus))
	case len(l.Stages) > 0:
		return fmt.Sprintf(`{
      executor: 'ramping-vus',
      startVUs: 0,
      stages: [%s],
    }`, stages())
	case l.Duration > 0:
		return fmt.Sprintf(`{
      executor: 'constant-vus',
      vus: %d,
      duration: '%s',
    }`, vus, k6Duration(l.Duration))
	}
	n := int64(iters)
	if l.Iterations > 0 {
		n = l.Iterations
	}
	return fmt.Sprintf(`{
      executor: 'shared-iterations',
      vus: %d,
      iterations: %d,
      maxDuration: '1h',
    }`, min(int64(vus), max(n, 1)), max(n, 1))
}

// rateDuration is how long an arrival rate runs: --duration, else long
// enough to start every iteration once, as replay does.
func rateDuration(l K6Load, iters int) time.Duration {
	if l.Duration > 0 {
		return l.Duration
	}
	return max(time.Duration(float64(iters)/l.Rate*float64(time.Second)).Round(time.Second), time.Second)
}

func k6Duration(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("%ds", int64(d/time.Second))
	}
	return fmt.Sprintf("%dms", d.Milliseconds())
}

func trimFloat(f float64) string {
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.3f", f), "0"), ".")
}

const k6Script = `// Generated by replay export k6 from %s: %d iterations, %d requests.
// Each k6 iteration replays one recorded iteration (a session, or a single
// request) in order, as replay does. The requests are in the data file
// beside this script, loaded once and shared by every VU.
//
// k6 sends header names canonicalized (Go's net/http: "x-api-key" goes out
// as "X-Api-Key"), and sets Host, Content-Length and User-Agent itself
// (User-Agent only when the recording has none).
import http from 'k6/http';
import { check } from 'k6';
import { SharedArray } from 'k6/data';
import encoding from 'k6/encoding';
import exec from 'k6/execution';

const iterations = new SharedArray('iterations', () => JSON.parse(open('%s')));

export const options = {
  scenarios: {
    replay: %s,
  },
};

export default function () {
  const requests = iterations[exec.scenario.iterationInTest %% iterations.length];
  for (const r of requests) {
    const body = r.b64 ? encoding.b64decode(r.body, 'std') : (r.body || null);
    const res = http.request(r.method, r.url, body, {
      headers: r.headers,
      tags: { name: r.name },
      redirects: 0,
      responseType: 'none',
    });
    if (r.status) {
      check(res, { ['status was ' + r.status]: (x) => x.status === r.status });
    }
  }
}
`
