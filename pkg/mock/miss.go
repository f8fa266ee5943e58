package mock

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/replay-dev/replay/pkg/rrpair"
)

// A miss fails closed: the miss status (404), with a JSON body naming the
// nearest recorded request and what differs; for a gRPC call, a
// Trailers-Only answer with grpc-status UNIMPLEMENTED and the same text in
// grpc-message.
//
//	{"error": "replay mock: no recorded answer (a miss)",
//	 "request": "POST api.example.com/v1/charges?currency=eur",
//	 "nearest": {"line": 12, "request": "POST api.example.com/v1/charges?currency=usd",
//	             "differs": ["query parameter currency: recorded \"usd\", got \"eur\""]}}

// Nearest is the recorded request nearest a miss, and what differs.
type Nearest struct {
	Line    int      `json:"line"`
	Request string   `json:"request"`
	Differs []string `json:"differs"`
}

// missBody is a miss's answer body: its nearest recorded request, or,
// for a host never recorded, the hosts that were.
type missBody struct {
	Error         string   `json:"error"`
	Request       string   `json:"request"`
	Nearest       *Nearest `json:"nearest,omitempty"`
	RecordedHosts []string `json:"recorded_hosts,omitempty"`
}

// maxHostsNamed bounds the recorded hosts a miss to an unknown host
// names.
const maxHostsNamed = 20

// knownHosts is what a miss to a host never recorded names: the recorded
// hosts, at most maxHostsNamed, and how many more.
func (ix *index) knownHosts() []string {
	hs := ix.hostList()
	if len(hs) > maxHostsNamed {
		hs = append(hs[:maxHostsNamed], fmt.Sprintf("(%d more)", len(hs)-maxHostsNamed))
	}
	return hs
}

// maxCandidates bounds the recorded requests a miss is compared with.
const maxCandidates = 64

// miss answers l as a miss and counts it: its nearest recorded request is
// found once per distinct request (by signature) and kept.
func (s *Server) miss(l *live, sc *scratch, sig uint64) *outcome {
	s.st.misses.Add(1)
	unknown := !s.ix.hosts[string(l.v.host)]
	me := s.st.missOf(sig, func() *MissStats {
		m := &MissStats{Request: describe(&l.v), UnknownHost: unknown}
		if unknown {
			return m // a host never recorded: no request of it is near
		}
		if pi, differs, ok := s.nearest(l, sc); ok {
			m.Nearest = &Nearest{Line: sc.pair.Line, Request: describePair(&sc.pair), Differs: differs}
			m.pair = pi
		}
		return m
	})
	s.st.endpointMiss(s.endpointOf(&l.v, sc))
	if me.Nearest != nil {
		s.st.sigMiss(me.pair)
	}
	if n, ok := s.missLog.allow(s.o.Now()); ok {
		ev := s.o.Log.Warn().Str("request", me.Request)
		if me.Nearest != nil {
			ev = ev.Int("nearest_line", me.Nearest.Line).Str("nearest", me.Nearest.Request).Strs("differs", me.Nearest.Differs)
		}
		if unknown {
			ev = ev.Strs("recorded_hosts", s.hostsNamed)
		}
		if n > 0 {
			ev = ev.Int64("misses_not_logged", n)
		}
		ev.Msg("miss: no recorded answer")
	}
	o := &sc.out
	text := "replay mock: no recorded answer (a miss)"
	if l.grpc {
		msg := text + ": " + me.Request
		if me.Nearest != nil {
			msg += "; nearest: line " + strconv.Itoa(me.Nearest.Line) + " " + me.Nearest.Request + ": " + strings.Join(me.Nearest.Differs, "; ")
		}
		if unknown {
			msg += "; host not recorded, recorded hosts: " + strings.Join(s.hostsNamed, ", ")
		}
		grpcError(o, 12, msg) // UNIMPLEMENTED
		return o
	}
	mb := missBody{Error: text, Request: me.Request, Nearest: me.Nearest}
	if unknown {
		mb.Error = text + ": host " + string(l.v.host) + " was never recorded"
		mb.RecordedHosts = s.hostsNamed
	}
	body, _ := json.Marshal(mb)
	o.status = s.o.MissStatus
	o.headers = append(o.headers[:0], rrpair.Header{Name: []byte("Content-Type"), Value: []byte("application/json")})
	o.body = body
	return o
}

// describe is a request as the reports name it: "POST host/path?query".
func describe(v *view) string {
	return string(v.method) + " " + string(v.host) + string(v.uri)
}

func describePair(p *rrpair.Pair) string {
	return string(p.Req.Method) + " " + string(normHost(nil, p.Req.Host)) + string(p.Req.URI)
}

// endpointOf is the endpoint a live request falls in, as the file names
// them (-1 when the file has no such endpoint).
func (s *Server) endpointOf(v *view, sc *scratch) int {
	sc.ep = rrpair.AppendEndpointName(sc.ep[:0], v.method, v.uri)
	if id, ok := s.epID[string(sc.ep)]; ok {
		return id
	}
	return -1
}

// nearest finds the recorded request nearest l: among those of its host
// and path, else of its endpoint, else a sample of the file. It leaves
// the nearest decoded in sc.pair.
func (s *Server) nearest(l *live, sc *scratch) (pair int, differs []string, ok bool) {
	ix := s.ix
	cands := ix.candidates(sc.sg.route(&l.v), s.endpointOf(&l.v, sc))
	best, bestScore := -1, 0
	for _, pi := range cands {
		if sc.cur.Decode(pi, &sc.pair) != nil {
			continue
		}
		score, _ := s.compare(&l.v, &sc.pair, sc, false)
		if best < 0 || score < bestScore {
			best, bestScore = pi, score
		}
	}
	if best < 0 || sc.cur.Decode(best, &sc.pair) != nil {
		return 0, nil, false
	}
	_, differs = s.compare(&l.v, &sc.pair, sc, true)
	return best, differs, true
}

// candidates are the pairs a miss is compared with: those of its route
// (host and path), else of its endpoint, else a sample of every pair, at
// most maxCandidates, spread evenly.
func (ix *index) candidates(route uint64, endpoint int) []int {
	var from []uint32
	if lo, hi := ix.route.find(route); lo < hi {
		from = ix.route.pair[lo:hi]
	} else if endpoint >= 0 && ix.epStart[endpoint] < ix.epStart[endpoint+1] {
		from = ix.byEP[ix.epStart[endpoint]:ix.epStart[endpoint+1]]
	} else {
		from = ix.byEP
	}
	step := max(1, len(from)/maxCandidates)
	out := make([]int, 0, min(len(from), maxCandidates))
	for i := 0; i < len(from) && len(out) < maxCandidates; i += step {
		out = append(out, int(from[i]))
	}
	return out
}

// compare scores how far the recorded request of p is from v (0: only
// masked places differ), and with explain says what differs. A masked
// place (redacted, --ignore, rotating) differs only by being there or not.
func (s *Server) compare(v *view, p *rrpair.Pair, sc *scratch, explain bool) (int, []string) {
	var d differ
	d.explain = explain
	m := s.ix.exactM
	if s.ix.looseM != nil {
		m = s.ix.looseM
	}
	host := normHost(nil, p.Req.Host)
	d.field(3, "method", string(p.Req.Method), string(v.method))
	d.field(2, "host", string(host), string(v.host))
	rpath, rquery, _ := bytes.Cut(p.Req.URI, []byte("?"))
	lpath, lquery, _ := bytes.Cut(v.uri, []byte("?"))
	d.field(3, "path", string(rpath), string(lpath))
	d.values("query parameter", queryValues(rquery), queryValues(lquery), m.query)
	if len(s.ix.match) > 0 {
		d.values("header", headerValues(p.Req.Headers, s.ix.match), headerValues(v.headers, s.ix.match), m.header)
	}
	d.body(p.Req.Body, v.body, m.json)
	return d.score, d.out
}

// differ collects differences and their score.
type differ struct {
	explain bool
	score   int
	out     []string
}

func (d *differ) add(weight int, format string, args ...any) {
	d.score += weight
	if d.explain {
		d.out = append(d.out, fmt.Sprintf(format, args...))
	}
}

func (d *differ) field(weight int, name, recorded, got string) {
	if recorded != got {
		d.add(weight, "%s: recorded %s, got %s", name, recorded, got)
	}
}

// values compares named values (query parameters, headers), masked names
// left out, in name order.
func (d *differ) values(what string, rec, got map[string][]string, masked map[string]struct{}) {
	names := map[string]bool{}
	for k := range rec {
		names[k] = true
	}
	for k := range got {
		names[k] = true
	}
	sorted := make([]string, 0, len(names))
	for k := range names {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		r, rok := rec[k]
		g, gok := got[k]
		_, m := masked[k]
		switch {
		case !gok:
			d.add(1, "%s %s: recorded %s, not sent", what, k, quoteAll(r))
		case !rok:
			d.add(1, "%s %s: not recorded, got %s", what, k, quoteAll(g))
		case !m && strings.Join(r, "\x00") != strings.Join(g, "\x00"):
			d.add(1, "%s %s: recorded %s, got %s", what, k, quoteAll(r), quoteAll(g))
		}
	}
}

func quoteAll(vs []string) string {
	q := make([]string, len(vs))
	for i, v := range vs {
		q[i] = strconv.Quote(v)
	}
	return strings.Join(q, ", ")
}

func queryValues(q []byte) map[string][]string {
	m := map[string][]string{}
	for len(q) > 0 {
		var kv []byte
		kv, q, _ = bytes.Cut(q, []byte("&"))
		if len(kv) == 0 {
			continue
		}
		k, v, _ := bytes.Cut(kv, []byte("="))
		name := string(unescape(nil, k))
		m[name] = append(m[name], string(unescape(nil, v)))
	}
	for _, vs := range m {
		sort.Strings(vs)
	}
	return m
}

func headerValues(hs []rrpair.Header, names []string) map[string][]string {
	m := map[string][]string{}
	for _, h := range hs {
		name := strings.ToLower(string(h.Name))
		for _, n := range names {
			if n == name {
				m[name] = append(m[name], string(h.Value))
			}
		}
	}
	return m
}

// body compares two bodies: as JSON, field by field (masked paths left
// out), or by their bytes.
func (d *differ) body(rec, got []byte, masked map[string]struct{}) {
	if bytes.Equal(rec, got) {
		return
	}
	rf, rok := flatten(rec)
	gf, gok := flatten(got)
	if !rok || !gok {
		d.add(2, "body: recorded %d bytes, got %d bytes%s", len(rec), len(got), notJSON(rok, gok, len(rec) > 0, len(got) > 0))
		return
	}
	paths := map[string]bool{}
	for k := range rf {
		paths[k] = true
	}
	for k := range gf {
		paths[k] = true
	}
	sorted := make([]string, 0, len(paths))
	for k := range paths {
		if !maskedAbove(k, masked) {
			sorted = append(sorted, k)
		}
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		r, rok := rf[k]
		g, gok := gf[k]
		_, m := masked[jsonPathOf(k)]
		switch {
		case !gok:
			d.add(1, "body field %s: recorded %s, not sent", k, r)
		case !rok:
			d.add(1, "body field %s: not recorded, got %s", k, g)
		case !m && r != g:
			d.add(1, "body field %s: recorded %s, got %s", k, r, g)
		}
	}
}

// maskedAbove reports whether a path above k (a JSON object or array
// holding it) is masked.
func maskedAbove(k string, masked map[string]struct{}) bool {
	for i := len(k) - 1; i > 0; i-- {
		if k[i] == '.' {
			if _, m := masked[jsonPathOf(k[:i])]; m {
				return true
			}
		}
	}
	return false
}

func notJSON(rok, gok, rhas, ghas bool) string {
	switch {
	case !rok && rhas && !gok && ghas:
		return " (neither JSON: compared byte for byte)"
	case !rok && rhas:
		return " (the recorded one is not JSON)"
	case !gok && ghas:
		return " (this one is not JSON)"
	}
	return ""
}

// flatten reads a JSON body into its scalars by path ("order.items.0.id"),
// each written as JSON; an empty body is an empty document.
func flatten(b []byte) (map[string]string, bool) {
	out := map[string]string{}
	if len(bytes.TrimSpace(b)) == 0 {
		return out, true
	}
	if !looksJSON(b) {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil, false
	}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		join := func(k string) string {
			if prefix == "" {
				return k
			}
			return prefix + "." + k
		}
		switch t := v.(type) {
		case map[string]any:
			for k, e := range t {
				walk(join(k), e)
			}
		case []any:
			for i, e := range t {
				walk(join(strconv.Itoa(i)), e)
			}
		default:
			enc, _ := json.Marshal(t)
			out[prefix] = string(enc)
		}
	}
	walk("", v)
	return out, true
}

// rateLimit lets a log line through at most once a second (after a burst
// of 10), and counts those it held back.
type rateLimit struct {
	mu     sync.Mutex
	tokens float64
	last   time.Time
	held   int64
}

func (r *rateLimit) allow(now time.Time) (held int64, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last.IsZero() {
		r.tokens = 10
	} else {
		r.tokens = min(10, r.tokens+now.Sub(r.last).Seconds())
	}
	r.last = now
	if r.tokens < 1 {
		r.held++
		return 0, false
	}
	r.tokens--
	held, r.held = r.held, 0
	return held, true
}
