package mock

import (
	"bytes"
	"fmt"
	"hash/maphash"
	"slices"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/replay-dev/replay/pkg/rrpair"
)

// index is what the mock answers from: the mapped file and its pairs
// sorted by signature, built once at start. It costs (besides the file's
// own line index) 56 bytes a pair: the exact and the loose signatures
// (8 bytes, the pair 4, a call counter 4, each), the route (12) and its
// longest body (4), the endpoint list (4), and how many times each pair
// was given (4). Nothing
// of a pair is copied: answers are decoded from the mapping when given.
type index struct {
	f    *rrpair.File
	seed maphash.Seed
	// exactM masks what always matches anything (redacted fields,
	// --ignore); looseM adds the places where the recording holds
	// rotating values, for the second pass (nil: --no-auto-ignore).
	exactM, looseM *masks
	exact, loose   sorted
	route          sorted
	// byEP holds the pairs of endpoint e at byEP[epStart[e]:epStart[e+1]],
	// in file order.
	byEP, epStart []uint32
	served        []atomic.Uint32 // per pair of the file: times given
	hosts         map[string]bool // normalized recorded hosts
	single        []byte          // the one recorded host, when there is one
	https         int             // pairs recorded over https
	httpsHost     map[string]bool // hosts with pairs recorded over https
	kept          int             // pairs that can be answered with
	skipped       []Skip          // the first maxSkips
	skippedTotal  int
	match         []string // --match-header names, lower case
	// spell is, for an answer field name the file spells in several ways
	// (ETag and Etag: a recorder that took an HTTP/2 client's answer
	// Go-style), the one spelling every answer uses (spelling.go).
	spell map[string][]byte
	// bodyMax holds, at the first slot of each route, the longest
	// recorded body of the route: how far a live body is read (body.go).
	bodyMax []uint32
}

// Skip is a pair that cannot be answered with: its line and why.
type Skip struct {
	Line   int    `json:"line"`
	Reason string `json:"reason"`
}

const maxSkips = 20

// sorted is a signature index: slots sorted by (hash, pair), so that the
// pairs of one signature stand together in recorded order.
type sorted struct {
	hash  []uint64
	pair  []uint32
	calls []atomic.Uint32 // at the first slot of a signature: its calls
	// rank orders the pairs of one signature (signature lines by
	// instance); nil: file order.
	rank instanceRanks
}

func (s *sorted) Len() int { return len(s.hash) }
func (s *sorted) Less(i, j int) bool {
	return s.hash[i] < s.hash[j] || s.hash[i] == s.hash[j] && s.rank.less(s.pair[i], s.pair[j])
}
func (s *sorted) Swap(i, j int) {
	s.hash[i], s.hash[j] = s.hash[j], s.hash[i]
	s.pair[i], s.pair[j] = s.pair[j], s.pair[i]
}

func (s *sorted) add(h uint64, pair int) {
	s.hash = append(s.hash, h)
	s.pair = append(s.pair, uint32(pair))
}

func (s *sorted) finish(counted bool) {
	sort.Sort(s)
	if counted {
		s.calls = make([]atomic.Uint32, len(s.hash))
	}
}

// find returns the slots [lo, hi) of signature h (lo == hi: none).
func (s *sorted) find(h uint64) (lo, hi int) {
	lo = sort.Search(len(s.hash), func(i int) bool { return s.hash[i] >= h })
	hi = lo
	for hi < len(s.hash) && s.hash[hi] == h {
		hi++
	}
	return lo, hi
}

// unsendable says why the recorded answer of p cannot be sent ("" when it
// can).
func unsendable(p *rrpair.Pair) string {
	switch st := p.Res.Status; {
	case sigUnread(p) != "":
		return sigUnread(p)
	case st == 0:
		return "no recorded answer (http.res.statusCode)"
	case st == 101:
		return "" // a WebSocket upgrade: its session is played (websocket.go)
	case st < 200:
		return fmt.Sprintf("status %d is an interim answer: a client waits for the final one", st)
	case st > 599:
		return fmt.Sprintf("status %d is outside 200-599: no client reads it", st)
	case (st == 204 || st == 304) && len(p.Res.Body) > 0:
		return fmt.Sprintf("status %d has no body, and a body of %d bytes was recorded", st, len(p.Res.Body))
	}
	return ""
}

// normHost writes host as signatures hold it: lower case, without a
// default port (":80", ":443") or a trailing dot.
func normHost(dst, host []byte) []byte {
	dst = append(dst[:0], host...)
	for i, c := range dst {
		if c >= 'A' && c <= 'Z' {
			dst[i] = c + 'a' - 'A'
		}
	}
	for _, port := range []string{":80", ":443"} {
		if bytes.HasSuffix(dst, []byte(port)) {
			dst = dst[:len(dst)-len(port)]
			break
		}
	}
	return bytes.TrimSuffix(dst, []byte("."))
}

// viewOf is the view of a recorded pair's request; host is a buffer for
// its normalized host.
func viewOf(p *rrpair.Pair, host *[]byte) view {
	*host = normHost(*host, p.Req.Host)
	return view{method: p.Req.Method, host: *host, uri: p.Req.URI, headers: p.Req.Headers, body: p.Req.Body}
}

// buildIndex reads every pair of f twice: first for what cannot be sent
// and for the places that hold redacted and rotating values, then for
// the signatures. ignore is --ignore; matchHeaders --match-header.
func buildIndex(f *rrpair.File, ignore, matchHeaders []string, autoIgnore bool) (*index, error) {
	ix := &index{f: f, seed: maphash.MakeSeed(), hosts: map[string]bool{}, httpsHost: map[string]bool{}, served: make([]atomic.Uint32, f.Len())}
	for _, h := range matchHeaders {
		if h = strings.ToLower(h); !slices.Contains(wsVolatile, h) {
			ix.match = append(ix.match, h)
		}
	}
	sort.Strings(ix.match)
	redacted, rotatingAt := newMasks(), newMasks()
	for _, name := range ignore {
		redacted.json[jsonPathOf(name)] = struct{}{}
		if !strings.Contains(name, ".") {
			redacted.query[name] = struct{}{}
		}
	}
	cur := f.NewCursor().WithResponses()
	var p rrpair.Pair
	sg := newSigner(ix.seed, ix.match)
	ok := make([]bool, f.Len())
	var host []byte
	spellings := spellingSet{}
	for i := range f.Len() {
		if err := cur.Decode(i, &p); err != nil {
			return nil, err
		}
		if why := unsendable(&p); why != "" {
			ix.skippedTotal++
			if len(ix.skipped) < maxSkips {
				ix.skipped = append(ix.skipped, Skip{Line: p.Line, Reason: why})
			}
			continue
		}
		ok[i] = true
		ix.kept++
		host = normHost(host, p.Req.Host)
		ix.hosts[string(host)] = true
		if bytes.EqualFold(p.Req.Scheme, []byte("https")) {
			ix.https++
			ix.httpsHost[string(host)] = true
		}
		ix.places(sg, &p, redacted, rotatingAt)
		spellings.note(p.Res.Headers)
	}
	ix.spell = spellings.choose()
	if len(ix.hosts) == 1 {
		for h := range ix.hosts {
			ix.single = []byte(h)
		}
	}
	ix.exactM = redacted
	if autoIgnore {
		ix.looseM = redacted.union(rotatingAt)
		ix.looseM.segments = true
	}
	ix.index(cur, &p, sg, ok)
	return ix, nil
}

// places notes where p's request holds redacted values (they match
// anything) and rotating ones (ignored by the second pass).
func (ix *index) places(sg *signer, p *rrpair.Pair, redacted, rot *masks) {
	note := func(set func(*masks) map[string]struct{}, place string, v []byte) {
		if string(v) == redactedValue {
			set(redacted)[place] = struct{}{}
		} else if rotating(v) {
			set(rot)[place] = struct{}{}
		}
	}
	jsonOf := func(m *masks) map[string]struct{} { return m.json }
	queryOf := func(m *masks) map[string]struct{} { return m.query }
	headerOf := func(m *masks) map[string]struct{} { return m.header }
	if looksJSON(p.Req.Body) {
		sg.path = sg.path[:0]
		sg.jvalue(p.Req.Body, skipWS(p.Req.Body, 0), nil, func(path, v []byte, _ bool) {
			note(jsonOf, string(path), v)
		})
	}
	_, query, _ := bytes.Cut(p.Req.URI, []byte("?"))
	sg.parseQuery(query)
	for _, q := range sg.params {
		note(queryOf, string(sg.buf[q.name[0]:q.name[1]]), sg.buf[q.value[0]:q.value[1]])
	}
	for _, h := range p.Req.Headers {
		if name := strings.ToLower(string(h.Name)); slices.Contains(ix.match, name) {
			note(headerOf, name, h.Value)
		}
	}
}

// redactedValue is what the recorders write for a redacted value.
const redactedValue = "REDACTED"

// index computes the signatures of the pairs that can be sent (ok) and
// sorts them.
func (ix *index) index(cur *rrpair.Cursor, p *rrpair.Pair, sg *signer, ok []bool) {
	n := ix.kept
	ix.exact = sorted{hash: make([]uint64, 0, n), pair: make([]uint32, 0, n)}
	ix.route = sorted{hash: make([]uint64, 0, n), pair: make([]uint32, 0, n)}
	if ix.looseM != nil {
		ix.loose = sorted{hash: make([]uint64, 0, n), pair: make([]uint32, 0, n)}
	}
	bodyLen := make([]uint32, ix.f.Len())
	eps := len(ix.f.Endpoints())
	ix.epStart = make([]uint32, eps+2)
	epOf := make([]uint16, ix.f.Len())
	var host []byte
	var ranks instanceRanks
	for i := range ix.f.Len() {
		if !ok[i] {
			continue
		}
		cur.Decode(i, p) // decoded once before: cannot fail
		ranks.note(ix.f.Len(), i, p)
		v := viewOf(p, &host)
		ix.exact.add(sg.sum(&v, ix.exactM), i)
		if ix.looseM != nil {
			ix.loose.add(sg.sum(&v, ix.looseM), i)
		}
		ix.route.add(sg.route(&v), i)
		bodyLen[i] = uint32(min(len(v.body), 1<<31))
		epOf[i] = p.Endpoint
		ix.epStart[int(p.Endpoint)+1]++
	}
	ix.exact.rank, ix.loose.rank = ranks, ranks
	ix.exact.finish(true)
	ix.loose.finish(ix.looseM != nil)
	ix.route.finish(false)
	ix.bodyMax = make([]uint32, n)
	for lo := 0; lo < n; {
		hi := lo
		for ; hi < n && ix.route.hash[hi] == ix.route.hash[lo]; hi++ {
			ix.bodyMax[lo] = max(ix.bodyMax[lo], bodyLen[ix.route.pair[hi]])
		}
		lo = hi
	}
	for e := 1; e < len(ix.epStart); e++ {
		ix.epStart[e] += ix.epStart[e-1]
	}
	ix.byEP = make([]uint32, n)
	fill := append([]uint32(nil), ix.epStart...)
	for i := range ix.f.Len() {
		if ok[i] {
			ix.byEP[fill[epOf[i]]] = uint32(i)
			fill[epOf[i]]++
		}
	}
}

// hostOf is the recorded host a live request's host stands for: itself
// when recorded, else the one recorded host of a file that has one.
func (ix *index) hostOf(h []byte) []byte {
	if ix.single != nil && !ix.hosts[string(h)] {
		return ix.single
	}
	return h
}

// signatures is the number of distinct exact signatures.
func (ix *index) signatures() int {
	n := 0
	for i := range ix.exact.hash {
		if i == 0 || ix.exact.hash[i] != ix.exact.hash[i-1] {
			n++
		}
	}
	return n
}
