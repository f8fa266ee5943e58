package transform

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Spec is a transform chain as configured: a list of transforms, applied in
// order, and the cookie jar. A transforms file is its YAML form:
//
//	transforms:
//	  - timestamps: {auto: true}
//	  - jwt: {secret: s3cret}
//	  - headers: {set: {X-Env: staging}}
//	  - correlate: {endpoint: POST /orders, json: id}
//	  - fresh: {headers: [Idempotency-Key], json: [order.id]}
//	cookies: auto        # auto (on when recorded answers set cookies), on, off
type Spec struct {
	Transforms []Entry `yaml:"transforms"`
	Cookies    string  `yaml:"cookies"`

	// Where each entry came from, for errors: "transforms.yaml:7" or a flag.
	origins []string
	dir     string // relative key files are read from here
}

// Entry is one transform: exactly one field is set.
type Entry struct {
	Timestamps *TimestampSpec `yaml:"timestamps"`
	JWT        *JWTSpec       `yaml:"jwt"`
	Headers    *HeaderSpec    `yaml:"headers"`
	Query      *QuerySpec     `yaml:"query"`
	Path       *PathSpec      `yaml:"path"`
	Host       *string        `yaml:"host"`
	Correlate  *CorrelateSpec `yaml:"correlate"`
	Fresh      *FreshSpec     `yaml:"fresh"`
	// Echo rewrites a mock's answers only (replay mock --transforms).
	Echo *EchoSpec `yaml:"echo"`
}

// Cookie jar settings.
const (
	CookiesAuto = "auto"
	CookiesOn   = "on"
	CookiesOff  = "off"
)

// ConfigError is a bad transforms file or flag: where, and what is wrong.
type ConfigError struct {
	Where string // "transforms.yaml:7", or "--set-header"
	Err   error
}

func (e *ConfigError) Error() string { return e.Where + ": " + e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// ReadFile reads a transforms file. Unknown keys are errors, with the line.
func ReadFile(name string) (*Spec, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	return Parse(b, name, filepath.Dir(name))
}

// Parse reads a transforms file's content; name is used in errors, and
// relative key files are read from dir.
func Parse(b []byte, name, dir string) (*Spec, error) {
	spec := &Spec{dir: dir}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(spec); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &ConfigError{name, errors.New("empty: want a list of transforms")}
		}
		return nil, yamlError(name, err)
	}
	// A second pass, over nodes, for the line of each entry.
	var lines struct {
		Transforms []yaml.Node `yaml:"transforms"`
	}
	if err := yaml.Unmarshal(b, &lines); err != nil {
		return nil, yamlError(name, err)
	}
	for i := range spec.Transforms {
		spec.origins = append(spec.origins, fmt.Sprintf("%s:%d", name, lines.Transforms[i].Line))
	}
	return spec, nil
}

var yamlLine = regexp.MustCompile(`^line (\d+): (.*)$`)
var unknownField = regexp.MustCompile(`^field (\S+) not found in type transform\.(\w+)$`)

// yamlError turns the YAML decoder's messages into file:line: message,
// naming the keys a section takes when one is unknown.
func yamlError(name string, err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		if m := yamlLine.FindStringSubmatch(msg); m != nil {
			return &ConfigError{name + ":" + m[1], errors.New(m[2])}
		}
		return &ConfigError{name, errors.New(msg)}
	}
	var out []string
	where := name
	for i, e := range te.Errors {
		m := yamlLine.FindStringSubmatch(e)
		if m == nil {
			out = append(out, e)
			continue
		}
		if i == 0 {
			where = name + ":" + m[1]
		}
		msg := m[2]
		if u := unknownField.FindStringSubmatch(msg); u != nil {
			msg = fmt.Sprintf("unknown key %q in %s; want one of %s", u[1], section(u[2]), strings.Join(keysOf(u[2]), ", "))
		}
		if i > 0 {
			msg = "line " + m[1] + ": " + msg
		}
		out = append(out, msg)
	}
	return &ConfigError{where, errors.New(strings.Join(out, "; "))}
}

// specTypes are the configuration types by name, for error messages.
var specTypes = map[string]reflect.Type{
	"Spec": reflect.TypeFor[Spec](), "Entry": reflect.TypeFor[Entry](),
	"TimestampSpec": reflect.TypeFor[TimestampSpec](), "JWTSpec": reflect.TypeFor[JWTSpec](),
	"HeaderSpec": reflect.TypeFor[HeaderSpec](), "QuerySpec": reflect.TypeFor[QuerySpec](),
	"PathSpec": reflect.TypeFor[PathSpec](), "CorrelateSpec": reflect.TypeFor[CorrelateSpec](),
	"FreshSpec": reflect.TypeFor[FreshSpec](), "EchoSpec": reflect.TypeFor[EchoSpec](),
}

func section(typ string) string {
	switch typ {
	case "Spec":
		return "the file (top level)"
	case "Entry":
		return "a transforms entry"
	}
	return strings.ToLower(strings.TrimSuffix(typ, "Spec"))
}

func keysOf(typ string) []string {
	t, ok := specTypes[typ]
	if !ok {
		return nil
	}
	var keys []string
	for f := range t.Fields() {
		if tag := f.Tag.Get("yaml"); tag != "" {
			keys = append(keys, tag)
		}
	}
	return keys
}

// NeedsSeed reports whether a transform of s draws on Options.Seed
// (fresh).
func (s *Spec) NeedsSeed() bool {
	if s == nil {
		return false
	}
	for _, e := range s.Transforms {
		if e.Fresh != nil {
			return true
		}
	}
	return false
}

// Add appends a transform configured by a flag (origin names it in errors).
func (s *Spec) Add(e Entry, origin string) {
	s.Transforms = append(s.Transforms, e)
	s.origins = append(s.origins, origin)
}

// Program is a Spec compiled: each transform checked and built once (key
// files read and checked, paths, expressions and endpoints resolved),
// from which each run makes its own Chain. What one run's chain learns or
// keeps (correlated values, cookie jars, re-signed tokens, fresh values
// made, counts) never reaches another's. A Program is read-only: safe to
// share.
type Program struct {
	steps []step
}

// renewer is a compiled step with state of its own (a cache) or settings
// of the run (the seed of fresh values): Program.Chain gives each chain
// its own copy.
type renewer interface {
	renew(opt Options) (step, error)
}

// Compile checks the spec and compiles its transforms. cookiesAuto says
// whether the cookie jar runs under "auto" (the recorded answers set
// cookies). opt.Stamp, when set, is checked here too (its To is not
// used). Every error names where it was configured and what is wrong.
func Compile(s *Spec, cookiesAuto bool, opt Options) (*Program, error) {
	if s == nil {
		s = &Spec{}
	}
	p := &Program{}
	for i := range s.Transforms {
		origin := "transforms"
		if i < len(s.origins) {
			origin = s.origins[i]
		}
		if err := s.Transforms[i].fits(opt.Answers); err != nil {
			return nil, &ConfigError{origin, err}
		}
		st, err := s.Transforms[i].build(s.dir, opt)
		if err != nil {
			return nil, &ConfigError{origin, err}
		}
		p.steps = append(p.steps, st)
	}
	if opt.Answers && s.Cookies != "" && s.Cookies != CookiesOff {
		return nil, &ConfigError{"cookies", fmt.Errorf("a cookie jar keeps a replay's sessions; replay mock rewrites answers (timestamps, headers, echo): drop cookies: %s", s.Cookies)}
	}
	switch s.Cookies {
	case "", CookiesAuto:
		if cookiesAuto {
			p.steps = append(p.steps, cookies{})
		}
	case CookiesOn:
		p.steps = append(p.steps, cookies{})
	case CookiesOff:
	default:
		return nil, &ConfigError{"cookies", fmt.Errorf("want auto, on or off, got %q", s.Cookies)}
	}
	if opt.Stamp != nil {
		if err := checkStamp(opt.Stamp, opt.Endpoints); err != nil {
			return nil, &ConfigError{"--correlate", err}
		}
	}
	return p, nil
}

// Chain makes the chain of one run: the compiled transforms, each with
// state of its own, fresh values derived from opt (Seed, VUs, shards),
// and last, with opt.Stamp, the correlation ID.
func (p *Program) Chain(opt Options) (*Chain, error) {
	steps := make([]step, 0, len(p.steps)+1)
	for _, st := range p.steps {
		if r, ok := st.(renewer); ok {
			var err error
			if st, err = r.renew(opt); err != nil {
				return nil, err
			}
		}
		steps = append(steps, st)
	}
	if opt.Stamp != nil {
		st, err := newStamp(opt.Stamp, opt.Endpoints)
		if err != nil {
			return nil, &ConfigError{"--correlate", err}
		}
		steps = append(steps, st)
	}
	return newChain(steps, opt), nil
}

// Len is the number of transforms compiled (a chain adds the stamp).
func (p *Program) Len() int { return len(p.steps) }

// Learns reports whether the chains of p learn from live answers
// (correlate, cookies), and so read their bodies. A chain that stamps
// correlation IDs learns too (Chain.Learns).
func (p *Program) Learns() bool {
	for _, st := range p.steps {
		if _, ok := st.(learner); ok {
			return true
		}
	}
	return false
}

// Build checks the spec and makes its chain: Compile, then Chain, for a
// spec used by one run.
func Build(s *Spec, cookiesAuto bool, opt Options) (*Chain, error) {
	p, err := Compile(s, cookiesAuto, opt)
	if err != nil {
		return nil, err
	}
	return p.Chain(opt)
}

// answerKinds are the transforms that rewrite a mock's answers: what an
// answer holds that goes stale (timestamps), its headers, and what it
// repeated of its request (echo). The others rewrite requests.
var answerKinds = map[string]bool{"timestamps": true, "headers": true, "echo": true}

// fits says why the entry's transform does not apply where it is used: a
// request transform in a mock's answer transforms, or echo in a replay's.
// An entry that names none or several is build's to refuse.
func (e *Entry) fits(answers bool) error {
	kind := e.kind()
	switch {
	case kind == "":
	case answers && !answerKinds[kind]:
		return fmt.Errorf("%s: rewrites the requests of a replay; replay mock rewrites answers with timestamps, headers and echo only", kind)
	case !answers && kind == "echo":
		return fmt.Errorf("echo: rewrites the answers of replay mock (replay mock --transforms), from the live request; a replay sends requests")
	}
	return nil
}

// kind is the name of the one transform the entry sets ("" for none or
// several).
func (e *Entry) kind() string {
	if set := e.set(); len(set) == 1 {
		return set[0]
	}
	return ""
}

// set names the transforms the entry sets, by their keys.
func (e *Entry) set() []string {
	var set []string
	v := reflect.ValueOf(e).Elem()
	for i := range v.NumField() {
		if !v.Field(i).IsNil() {
			set = append(set, v.Type().Field(i).Tag.Get("yaml"))
		}
	}
	return set
}

func (e *Entry) build(dir string, opt Options) (step, error) {
	set := e.set()
	switch len(set) {
	case 0:
		return nil, fmt.Errorf("the entry names no transform; want one of %s", strings.Join(keysOf("Entry"), ", "))
	case 1:
	default:
		return nil, fmt.Errorf("one transform per entry, got %s (start each with its own -)", strings.Join(set, " and "))
	}
	var st step
	var err error
	switch {
	case e.Timestamps != nil:
		st, err = newTimestamps(e.Timestamps)
	case e.JWT != nil:
		st, err = newJWT(e.JWT, dir)
	case e.Headers != nil:
		st, err = newHeaders(e.Headers)
	case e.Query != nil:
		st, err = newQuery(e.Query)
	case e.Path != nil:
		st, err = newPath(e.Path)
	case e.Host != nil:
		st, err = newHost(*e.Host)
	case e.Fresh != nil:
		st, err = newFresh(e.Fresh, opt)
	case e.Echo != nil:
		st, err = newEcho(e.Echo)
	default:
		st, err = newCorrelate(e.Correlate, opt.Endpoints)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", set[0], err)
	}
	return st, nil
}
