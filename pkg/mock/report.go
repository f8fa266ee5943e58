package mock

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/replay-dev/replay/internal/plural"
	"github.com/replay-dev/replay/pkg/metrics/expo"
	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
)

// stats are what the mock counts while it serves. Counters are atomic;
// mu guards the rest.
type stats struct {
	hits, loose, misses, passed, passErrors atomic.Int64
	broken, tlsErrors, rewriteFailed        atomic.Int64
	tunnels                                 atomic.Int64
	overLimit                               atomic.Int64 // bodies past their limit (body.go)
	faults                                  [faultKinds]atomic.Int64
	epHits, epMisses                        []atomic.Int64 // by the file's endpoint
	epUnknown                               atomic.Int64   // misses on no endpoint of the file

	mu        sync.Mutex
	missList  map[uint64]*MissStats // by signature, at most maxMissKinds
	missOther int64                 // misses past them
	sigMisses map[int]int64         // nearest pair -> misses
}

// maxMissKinds bounds the distinct misses kept with their nearest.
const maxMissKinds = 100

func (st *stats) init(endpoints int) {
	st.epHits = make([]atomic.Int64, endpoints)
	st.epMisses = make([]atomic.Int64, endpoints)
	st.missList = map[uint64]*MissStats{}
	st.sigMisses = map[int]int64{}
}

// MissStats is a distinct miss: the request, how often it came, and its
// nearest recorded request.
type MissStats struct {
	Request string   `json:"request"`
	Count   int64    `json:"count"`
	Nearest *Nearest `json:"nearest,omitempty"`
	// UnknownHost: the request's host was never recorded (no nearest is
	// looked for; the answer lists the recorded hosts).
	UnknownHost bool `json:"unknown_host,omitempty"`
	pair        int  // the nearest pair
}

// missOf counts a miss of signature sig and returns its entry, made by
// mk (outside the lock) the first time.
func (st *stats) missOf(sig uint64, mk func() *MissStats) *MissStats {
	st.mu.Lock()
	if m, ok := st.missList[sig]; ok {
		m.Count++
		st.mu.Unlock()
		return m
	}
	st.mu.Unlock()
	m := mk()
	st.mu.Lock()
	defer st.mu.Unlock()
	if prev, ok := st.missList[sig]; ok {
		prev.Count++
		return prev
	}
	m.Count = 1
	if len(st.missList) < maxMissKinds {
		st.missList[sig] = m
	} else {
		st.missOther++
	}
	return m
}

func (st *stats) endpointMiss(id int) {
	if id >= 0 && id < len(st.epMisses) {
		st.epMisses[id].Add(1)
		return
	}
	st.epUnknown.Add(1)
}

func (st *stats) sigMiss(pair int) {
	st.mu.Lock()
	st.sigMisses[pair]++
	st.mu.Unlock()
}

// Report is what a mock did: the --out JSON, and the text on exit.
type Report struct {
	File  string `json:"file"`
	Pairs int    `json:"pairs"` // pairs answered from
	// Skipped are the lines of the file not answered from: valid lines
	// of another protocol or without a request (rrpair's kinds), and
	// pairs whose answer cannot be sent; SkippedKinds counts them by kind.
	Skipped      int          `json:"skipped"`
	SkippedKinds SkippedKinds `json:"skipped_kinds"`
	SkippedPairs []Skip       `json:"skipped_pairs,omitempty"` // the first unsendable ones
	Started      time.Time    `json:"started"`
	DurationS    float64      `json:"duration_s"`
	Requests     int64        `json:"requests"`
	Hits         int64        `json:"hits"`
	// HitsLoose are the hits of the second pass, rotating values ignored.
	HitsLoose int64 `json:"hits_loose"`
	Misses    int64 `json:"misses"`
	// BodiesOverLimit are the misses whose body was longer than any
	// recorded request of their method, host and path could match
	// (answered 413, the rest not read).
	BodiesOverLimit   int64            `json:"bodies_over_limit"`
	Passthrough       int64            `json:"passthrough"`
	PassthroughErrors int64            `json:"passthrough_errors"`
	Faults            map[string]int64 `json:"faults"`
	Tunnels           int64            `json:"tunnels"`
	TLSErrors         int64            `json:"tls_errors"`
	// ConnWaits are the times accepting waited for one of the
	// --max-conns slots: the bound reached, connections arriving then
	// left in the listen queue (listen.Slots.Waited).
	ConnWaits int64 `json:"conn_waits"`
	// UnusedAnswers are recorded answers never given.
	UnusedAnswers int64           `json:"unused_answers"`
	Endpoints     []EndpointStats `json:"endpoints"`
	// Signatures are listed by activity, at most maxListed;
	// SignaturesNotListed says how many more there are.
	SignatureCount      int              `json:"signature_count"`
	Signatures          []SignatureStats `json:"signatures"`
	SignaturesNotListed int              `json:"signatures_not_listed,omitempty"`
	NearestMisses       []MissStats      `json:"nearest_misses"`
	// MissesNotListed are misses of requests past the distinct ones kept.
	MissesNotListed int64                   `json:"misses_not_listed,omitempty"`
	Transforms      []result.TransformCount `json:"transforms,omitempty"`
	// RewriteFailed are answers the transforms could not rewrite (sent as
	// recorded).
	RewriteFailed int64 `json:"rewrite_failed,omitempty"`
	// WebSocket counts the sessions played (absent when none was asked).
	WebSocket *WSReport `json:"websocket,omitempty"`
}

// SkippedKinds counts the lines not answered from, by kind:
//
//	{"protocol": {"postgres": 2091}, "response_only": 3, "unsendable": 1}
type SkippedKinds struct {
	rrpair.Skipped
	// Unsendable are pairs whose recorded answer cannot be sent (no
	// status, an interim 1xx, over 599, a 204 or 304 with a body).
	Unsendable int `json:"unsendable,omitempty"`
}

// EndpointStats are an endpoint's hits and misses.
type EndpointStats struct {
	Name   string `json:"name"`
	Hits   int64  `json:"hits"`
	Misses int64  `json:"misses"`
}

// SignatureStats are a signature's: the first recorded request, its
// recorded answers, the hits and misses (misses whose nearest it was),
// and the answers never given.
type SignatureStats struct {
	Request string `json:"request"`
	Line    int    `json:"line"`
	Answers int    `json:"answers"`
	Hits    int64  `json:"hits"`
	Misses  int64  `json:"misses"`
	Unused  int    `json:"unused"`
}

const maxListed = 10_000

// Report is what the mock did so far (after Close: in all).
func (s *Server) Report() Report {
	if s.final != nil {
		return *s.final
	}
	return s.report()
}

func (s *Server) report() Report {
	st, ix := &s.st, s.ix
	r := Report{File: s.o.File, Pairs: ix.kept, SkippedKinds: SkippedKinds{Skipped: ix.f.Skipped(), Unsendable: ix.skippedTotal}, SkippedPairs: ix.skipped,
		Started: s.started, DurationS: s.o.Now().Sub(s.started).Seconds(),
		Hits: st.hits.Load(), HitsLoose: st.loose.Load(), Misses: st.misses.Load(), BodiesOverLimit: st.overLimit.Load(), Passthrough: st.passed.Load(),
		PassthroughErrors: st.passErrors.Load(), Faults: map[string]int64{}, Tunnels: st.tunnels.Load(), TLSErrors: st.tlsErrors.Load(),
		RewriteFailed: st.rewriteFailed.Load(), WebSocket: s.ws.report(), ConnWaits: s.connSlots.Waited()}
	r.Skipped = r.SkippedKinds.Total() + r.SkippedKinds.Unsendable
	r.Requests = r.Hits + r.Misses + r.Passthrough + st.broken.Load()
	for k, name := range faultNames {
		r.Faults[name] = st.faults[k].Load()
	}
	for i, name := range ix.f.Endpoints() {
		if h, m := st.epHits[i].Load(), st.epMisses[i].Load(); h+m > 0 {
			r.Endpoints = append(r.Endpoints, EndpointStats{Name: name, Hits: h, Misses: m})
		}
	}
	if n := st.epUnknown.Load(); n > 0 {
		r.Endpoints = append(r.Endpoints, EndpointStats{Name: "(not in the file)", Misses: n})
	}
	sort.SliceStable(r.Endpoints, func(i, j int) bool {
		return r.Endpoints[i].Hits+r.Endpoints[i].Misses > r.Endpoints[j].Hits+r.Endpoints[j].Misses
	})
	st.mu.Lock()
	for _, m := range st.missList {
		r.NearestMisses = append(r.NearestMisses, *m)
	}
	r.MissesNotListed = st.missOther
	sigMisses := make(map[int]int64, len(st.sigMisses))
	for k, v := range st.sigMisses {
		sigMisses[k] = v
	}
	st.mu.Unlock()
	sort.Slice(r.NearestMisses, func(i, j int) bool {
		a, b := r.NearestMisses[i], r.NearestMisses[j]
		return a.Count > b.Count || a.Count == b.Count && a.Request < b.Request
	})
	r.Signatures, r.UnusedAnswers = s.signatureStats(sigMisses)
	r.SignatureCount = len(r.Signatures)
	sort.SliceStable(r.Signatures, func(i, j int) bool {
		a, b := r.Signatures[i], r.Signatures[j]
		if a.Hits+a.Misses != b.Hits+b.Misses {
			return a.Hits+a.Misses > b.Hits+b.Misses
		}
		return a.Line < b.Line
	})
	if len(r.Signatures) > maxListed {
		r.SignaturesNotListed = len(r.Signatures) - maxListed
		r.Signatures = r.Signatures[:maxListed]
	}
	if s.chain != nil {
		r.Transforms = s.chain.Counts()
	}
	return r
}

// signatureStats walks the exact index, a signature at a time.
func (s *Server) signatureStats(sigMisses map[int]int64) ([]SignatureStats, int64) {
	ix := s.ix
	var out []SignatureStats
	var unused int64
	cur := ix.f.NewCursor()
	var p rrpair.Pair
	for lo := 0; lo < len(ix.exact.hash); {
		hi := lo + 1
		for hi < len(ix.exact.hash) && ix.exact.hash[hi] == ix.exact.hash[lo] {
			hi++
		}
		ss := SignatureStats{Answers: hi - lo}
		for _, pi := range ix.exact.pair[lo:hi] {
			n := ix.served[pi].Load()
			ss.Hits += int64(n)
			if n == 0 {
				ss.Unused++
			}
			ss.Misses += sigMisses[int(pi)]
		}
		unused += int64(ss.Unused)
		if cur.Decode(int(ix.exact.pair[lo]), &p) == nil {
			ss.Line, ss.Request = p.Line, describePair(&p)
		}
		out = append(out, ss)
		lo = hi
	}
	return out, unused
}

// WriteText writes the report as text: what a person reads on exit.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "replay mock: %s in %.1fs: %s", plural.Count(int(r.Requests), "request"), r.DurationS, plural.Count(int(r.Hits), "hit"))
	if r.HitsLoose > 0 {
		fmt.Fprintf(&b, " (%d with rotating values ignored)", r.HitsLoose)
	}
	if r.Misses == 1 {
		b.WriteString(", 1 miss")
	} else {
		fmt.Fprintf(&b, ", %d misses", r.Misses)
	}
	if r.BodiesOverLimit > 0 {
		fmt.Fprintf(&b, " (%d with a body over its limit, answered 413)", r.BodiesOverLimit)
	}
	if r.Passthrough > 0 {
		fmt.Fprintf(&b, ", %d passed through (%d failed)", r.Passthrough, r.PassthroughErrors)
	}
	fmt.Fprintf(&b, "\nanswered from %s of %s (%s)", plural.Count(r.Pairs, "pair"), r.File, plural.Count(r.SignatureCount+r.SignaturesNotListed, "signature"))
	if kinds := r.SkippedKinds.Kinds(); r.Skipped > 0 {
		if n := r.SkippedKinds.Unsendable; n > 0 {
			kinds = append(kinds, fmt.Sprintf("unsendable %d", n))
		}
		fmt.Fprintf(&b, "; %s skipped (%s)", plural.Count(r.Skipped, "line"), strings.Join(kinds, ", "))
	}
	fmt.Fprintf(&b, "; %s never given\n", plural.Count(int(r.UnusedAnswers), "recorded answer"))
	if f := r.Faults; f["error"]+f["delay"]+f["reset"] > 0 {
		fmt.Fprintf(&b, "faults injected: error %d, delay %d, reset %d\n", f["error"], f["delay"], f["reset"])
	}
	if r.TLSErrors > 0 || r.RewriteFailed > 0 {
		fmt.Fprintf(&b, "TLS handshakes failed: %d; answers the transforms could not rewrite: %d\n", r.TLSErrors, r.RewriteFailed)
	}
	if r.ConnWaits > 0 {
		fmt.Fprintf(&b, "--max-conns reached %s: connections arriving then waited to be accepted\n", plural.Count(int(r.ConnWaits), "time"))
	}
	if r.WebSocket != nil {
		b.WriteString(r.WebSocket.text())
	}
	if len(r.Endpoints) > 0 {
		b.WriteString("endpoints:\n")
		for _, e := range r.Endpoints[:min(len(r.Endpoints), 20)] {
			fmt.Fprintf(&b, "  %-40s hits %d  misses %d\n", e.Name, e.Hits, e.Misses)
		}
	}
	r.writeMisses(&b)
	_, err := io.WriteString(w, b.String())
	return err
}

// writeMisses writes the distinct misses with their nearest request, and
// the signatures called whose answers were not all given.
func (r *Report) writeMisses(b *strings.Builder) {
	if len(r.NearestMisses) > 0 {
		b.WriteString("misses, with the nearest recorded request:\n")
		for _, m := range r.NearestMisses[:min(len(r.NearestMisses), 10)] {
			fmt.Fprintf(b, "  %d× %s\n", m.Count, m.Request)
			if m.UnknownHost {
				fmt.Fprintf(b, "     its host was never recorded\n")
			}
			if m.Nearest != nil {
				fmt.Fprintf(b, "     nearest, line %d: %s\n", m.Nearest.Line, m.Nearest.Request)
				for _, d := range m.Nearest.Differs {
					fmt.Fprintf(b, "       %s\n", d)
				}
			}
		}
	}
	listed := 0
	for _, sg := range r.Signatures {
		if sg.Unused > 0 && sg.Hits > 0 && listed < 10 {
			if listed == 0 {
				b.WriteString("signatures called with answers never given:\n")
			}
			fmt.Fprintf(b, "  line %-6d %s: %d answers, %d never given\n", sg.Line, sg.Request, sg.Answers, sg.Unused)
			listed++
		}
	}
}

// WriteMetrics writes the mock's live numbers in Prometheus's text
// format, as `replay run --metrics` does its own.
func (s *Server) WriteMetrics(b *strings.Builder) {
	e := expo.Writer{B: b}
	st := &s.st
	e.Family("replay_mock_requests_total", "counter", "Requests answered, by result: hit (a recorded answer), miss, passthrough.")
	e.Sample("replay_mock_requests_total", expo.Label("result", "hit"), float64(st.hits.Load()))
	e.Sample("replay_mock_requests_total", expo.Label("result", "miss"), float64(st.misses.Load()))
	e.Sample("replay_mock_requests_total", expo.Label("result", "passthrough"), float64(st.passed.Load()))
	e.Family("replay_mock_faults_total", "counter", "Faults injected, by kind.")
	for k, name := range faultNames {
		e.Sample("replay_mock_faults_total", expo.Label("kind", name), float64(st.faults[k].Load()))
	}
	s.ws.writeMetrics(&e)
	e.Family("replay_mock_endpoint_requests_total", "counter", "Requests by endpoint of the file and result.")
	for i, name := range s.ix.f.Endpoints() {
		if h := st.epHits[i].Load(); h > 0 {
			e.Sample("replay_mock_endpoint_requests_total", expo.Labels("endpoint", name, "result", "hit"), float64(h))
		}
		if m := st.epMisses[i].Load(); m > 0 {
			e.Sample("replay_mock_endpoint_requests_total", expo.Labels("endpoint", name, "result", "miss"), float64(m))
		}
	}
}

// WriteJSON writes the report as JSON (--out).
func WriteJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
