package rrpair

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Filter selects the pairs of a file a run replays. A pair is kept when it
// matches every Keep rule and no Drop rule, its ts lies in [From, To), and
// its iteration is in the Sample. Without a Keep rule on direction, a
// file's OUT pairs are skipped (and counted, Skipped.DirectionOut) as if
// direction=IN were kept, whether or not there is a Filter.
type Filter struct {
	Keep, Drop []Rule
	From, To   time.Time // zero: unbounded; a pair without ts is dropped when either is set
	// Sample keeps this fraction of iterations (0 < Sample ≤ 1; 0 means 1),
	// chosen by hashing Seed with the session (or, for a pair alone, its
	// line number): the same seed gives the same traffic every time.
	Sample float64
	Seed   uint64
}

// Rule matches pairs on one field.
//
//	method=GET,POST        the method is one of these
//	path=^/api/            the path (without query) matches the regular expression
//	uri=token=             the path and query match
//	status=2xx,404         the recorded status is one of these (a class, or a code)
//	endpoint=GET /health   the endpoint name is one of these (as reports name them; ; separates several)
//	host=api,auth:8443     the recorded host is one of these (any case; a name without a port matches any port)
//	direction=IN,OUT       the direction is one of these (no direction is IN)
//	tag.tenant=acme,beta   the tag (any tags.* key) is one of these values (also tags.NAME=)
//
// Rules are matched when the file is indexed, never per request.
type Rule struct {
	Key   string
	text  string
	tag   string // the tag name of tag.NAME
	re    *regexp.Regexp
	set   map[string]bool
	codes []statusMatch
}

type statusMatch struct{ lo, hi int }

// ParseRule reads "KEY=VALUE" as documented on Rule.
func ParseRule(s string) (Rule, error) {
	key, val, ok := strings.Cut(s, "=")
	if !ok || val == "" {
		return Rule{}, fmt.Errorf("want KEY=VALUE (%s), got %q", ruleKeys, s)
	}
	r := Rule{Key: key, text: s}
	if name, ok := tagName(key); ok {
		if name == "" {
			return Rule{}, fmt.Errorf("%s: want tag.NAME=VALUE[,VALUE], such as tag.tenant=acme, got %q", key, s)
		}
		r.tag = name
		r.set = listSet(val, ",", strings.TrimSpace)
		return r, nil
	}
	parse, ok := ruleParsers[key]
	if !ok {
		return Rule{}, fmt.Errorf("unknown key %q: want %s", key, ruleKeys)
	}
	if err := parse(&r, val); err != nil {
		return Rule{}, err
	}
	return r, nil
}

// ruleParsers reads a rule's value, one parser a key.
var ruleParsers = map[string]func(r *Rule, val string) error{
	"method":    parseMethodRule,
	"endpoint":  parseEndpointRule,
	"host":      parseHostRule,
	"direction": parseDirectionRule,
	"path":      parsePatternRule,
	"uri":       parsePatternRule,
	"status":    parseStatusRule,
}

// parseMethodRule reads method=GET,POST: methods in any case.
func parseMethodRule(r *Rule, val string) error {
	r.set = map[string]bool{}
	for _, m := range strings.Split(val, ",") {
		r.set[strings.ToUpper(strings.TrimSpace(m))] = true
	}
	return nil
}

// parseEndpointRule reads endpoint=NAME;NAME: names hold commas, so ';'
// separates them.
func parseEndpointRule(r *Rule, val string) error {
	r.set = map[string]bool{}
	for _, e := range strings.Split(val, ";") {
		r.set[strings.TrimSpace(e)] = true
	}
	return nil
}

// parseHostRule reads host=HOST,HOST: hosts in any case.
func parseHostRule(r *Rule, val string) error {
	r.set = listSet(val, ",", func(h string) string { return strings.ToLower(strings.TrimSpace(h)) })
	return nil
}

// parseDirectionRule reads direction=IN, OUT or IN,OUT.
func parseDirectionRule(r *Rule, val string) error {
	r.set = listSet(val, ",", func(d string) string { return strings.ToUpper(strings.TrimSpace(d)) })
	for d := range r.set {
		if d != "IN" && d != "OUT" {
			return fmt.Errorf("direction: want IN, OUT or IN,OUT, got %q", val)
		}
	}
	return nil
}

// parsePatternRule reads path=REGEXP or uri=REGEXP.
func parsePatternRule(r *Rule, val string) error {
	re, err := regexp.Compile(val)
	if err != nil {
		return fmt.Errorf("%s: %w", r.Key, err)
	}
	r.re = re
	return nil
}

// parseStatusRule reads status=200,404,5xx: codes and classes.
func parseStatusRule(r *Rule, val string) error {
	for _, c := range strings.Split(val, ",") {
		c = strings.TrimSpace(strings.ToLower(c))
		if len(c) == 3 && c[1:] == "xx" && c[0] >= '1' && c[0] <= '5' {
			lo := int(c[0]-'0') * 100
			r.codes = append(r.codes, statusMatch{lo, lo + 99})
			continue
		}
		n, err := strconv.Atoi(c)
		if err != nil || n < 0 || n > 999 {
			return fmt.Errorf("status: want codes or classes such as 200,404,5xx, got %q", c)
		}
		r.codes = append(r.codes, statusMatch{n, n})
	}
	return nil
}

const ruleKeys = "method, path, uri, status, endpoint, host, direction or tag.NAME"

// tagName returns NAME of a key tag.NAME (or tags.NAME, the field's name).
func tagName(key string) (string, bool) {
	if name, ok := strings.CutPrefix(key, "tag."); ok {
		return name, true
	}
	return strings.CutPrefix(key, "tags.")
}

// listSet is the set of the items of list, separated by sep, each through
// norm; empty items are left out.
func listSet(list, sep string, norm func(string) string) map[string]bool {
	set := map[string]bool{}
	for _, item := range strings.Split(list, sep) {
		if item = norm(item); item != "" {
			set[item] = true
		}
	}
	return set
}

func (r *Rule) String() string { return r.text }

// match reports whether p (whose endpoint name is endpoint) matches r.
func (r *Rule) match(p *Pair, endpoint []byte) bool {
	if r.tag != "" {
		v, ok := tagValue(p.Tags, r.tag)
		return ok && r.set[string(v)]
	}
	switch r.Key {
	case "host":
		return r.matchHost(p.Req.Host)
	case "direction":
		if p.IsOut() {
			return r.set["OUT"]
		}
		return r.set["IN"]
	case "method":
		return r.set[string(p.Req.Method)]
	case "endpoint":
		return r.set[string(endpoint)]
	case "path":
		path := p.Req.URI
		if i := bytes.IndexByte(path, '?'); i >= 0 {
			path = path[:i]
		}
		return r.re.Match(path)
	case "uri":
		return r.re.Match(p.Req.URI)
	case "status":
		for _, c := range r.codes {
			if p.Res.Status >= c.lo && p.Res.Status <= c.hi {
				return true
			}
		}
	}
	return false
}

// matchHost reports whether host (host[:port] as recorded) is in the set:
// as written, or by its name alone, any case.
func (r *Rule) matchHost(host []byte) bool {
	if len(host) == 0 {
		return false
	}
	h := strings.ToLower(string(host))
	return r.set[h] || r.set[hostName(h)]
}

// hostName is host[:port] without its port ("[::1]:80" is "[::1]").
func hostName(h string) string {
	if strings.HasPrefix(h, "[") {
		if i := strings.IndexByte(h, ']'); i >= 0 {
			return h[:i+1]
		}
		return h
	}
	if i := strings.LastIndexByte(h, ':'); i >= 0 && strings.IndexByte(h, ':') == i {
		return h[:i]
	}
	return h
}

// tagValue finds tag name in tags, a tags object as written: a string
// value unescaped, a number or boolean as its JSON text. ok is false when
// the tag is absent or null. It allocates, and runs when a file is
// indexed only.
func tagValue(tags []byte, name string) (v []byte, ok bool) {
	if len(tags) == 0 {
		return nil, false
	}
	s := scanner{b: tags}
	if s.peek() != '{' {
		return nil, false
	}
	s.i++
	for first := true; ; first = false {
		key, more, err := s.nextKey(first)
		if err != nil || !more {
			return nil, false
		}
		if bytes.IndexByte(key, '\\') >= 0 {
			key, _ = AppendUnescaped(nil, key)
		}
		if string(key) != name {
			if s.skip(0) != nil {
				return nil, false
			}
			continue
		}
		switch c := s.peek(); c {
		case '"':
			raw, escaped, err := s.str()
			if err != nil {
				return nil, false
			}
			if escaped {
				raw, err = AppendUnescaped(nil, raw)
			}
			return raw, err == nil
		case 'n', '{', '[':
			return nil, false
		default:
			start := s.i
			if s.skip(0) != nil {
				return nil, false
			}
			return tags[start:s.i], true
		}
	}
}

// choosesDirection reports whether a Keep rule names the direction: then
// it decides, and OUT pairs are not skipped by default.
func (f *Filter) choosesDirection() bool {
	if f == nil {
		return false
	}
	for i := range f.Keep {
		if f.Keep[i].Key == "direction" {
			return true
		}
	}
	return false
}

// Validate checks the filter's own values.
func (f *Filter) Validate() error {
	if f.Sample < 0 || f.Sample > 1 {
		return fmt.Errorf("--sample: want a fraction in (0, 1], got %v", f.Sample)
	}
	if !f.From.IsZero() && !f.To.IsZero() && !f.From.Before(f.To) {
		return errors.New("--from: want a time before --to")
	}
	return nil
}

// active reports whether the filter can drop anything.
func (f *Filter) active() bool {
	return f != nil && (len(f.Keep) > 0 || len(f.Drop) > 0 || !f.From.IsZero() || !f.To.IsZero() || (f.Sample > 0 && f.Sample < 1))
}

// keeps reports whether the filter keeps pair p of a file being indexed.
func (f *Filter) keeps(p *Pair, endpoint []byte) bool {
	for i := range f.Keep {
		if !f.Keep[i].match(p, endpoint) {
			return false
		}
	}
	for i := range f.Drop {
		if f.Drop[i].match(p, endpoint) {
			return false
		}
	}
	if !f.From.IsZero() || !f.To.IsZero() {
		if !f.inWindow(p) {
			return false
		}
	}
	if f.Sample > 0 && f.Sample < 1 {
		return f.sampled(p)
	}
	return true
}

// inWindow reports whether the pair's time is within [From, To): a pair
// without a readable time is not.
func (f *Filter) inWindow(p *Pair) bool {
	ns, ok := p.UnixNano()
	return !(!ok || (!f.From.IsZero() && ns < f.From.UnixNano()) || (!f.To.IsZero() && ns >= f.To.UnixNano()))
}

// sampled reports whether the pair falls in the sample: a hash of the seed
// and the pair's session (or line, for a pair of no session), so that a
// session is kept or dropped whole.
func (f *Filter) sampled(p *Pair) bool {
	h := fnv.New64a()
	var seed [8]byte
	binary.LittleEndian.PutUint64(seed[:], f.Seed)
	h.Write(seed[:])
	if len(p.Session) > 0 {
		h.Write([]byte("s:"))
		h.Write(p.Session)
	} else {
		h.Write([]byte("l:"))
		h.Write(strconv.AppendInt(nil, int64(p.Line), 10))
	}
	// Mixed (FNV's high bits are weak on short keys), the top 53 bits
	// as a fraction in [0, 1).
	return float64(mix64(h.Sum64())>>11)/(1<<53) < f.Sample
}

// mix64 is SplitMix64's finalizer: every input bit reaches every output bit.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
