package main

import (
	"fmt"
	"strings"

	"github.com/replay-dev/replay/pkg/report"
	"github.com/replay-dev/replay/pkg/rrpair"
	"github.com/replay-dev/replay/pkg/transform"
	"github.com/replay-dev/replay/pkg/vu"
	"github.com/spf13/pflag"
)

// transformOptions are the transform flags: a file, and the common cases.
type transformOptions struct {
	file         string
	shiftTime    bool
	jwtSecret    string
	jwtKey       string
	setHeaders   []string
	removeHeader []string
	hostHeader   string
	cookies      string
	// builtin is used when no --transforms file is given (the demo's).
	builtin     []byte
	builtinName string
}

func (o *transformOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.file, "transforms", "", "rewrite requests as the YAML `FILE` says (timestamps, jwt, headers, query, path, host, correlate)")
	fs.BoolVar(&o.shiftTime, "shift-time", false, "move timestamps found in requests by (now − recorded ts)")
	fs.StringVar(&o.jwtSecret, "jwt-secret", "", "re-sign JWTs (Authorization, cookies) with this HMAC `SECRET`")
	fs.StringVar(&o.jwtKey, "jwt-key", "", "re-sign JWTs (Authorization, cookies) with this PEM private key `FILE` (RSA, EC, Ed25519)")
	fs.StringArrayVar(&o.setHeaders, "set-header", nil, "set a request header, `'Name: value'` (repeatable)")
	fs.StringArrayVar(&o.removeHeader, "remove-header", nil, "remove a request header `NAME` (repeatable)")
	fs.StringVar(&o.hostHeader, "host-header", "", "send this Host header `HOST[:PORT]`, whatever --target says")
	fs.StringVar(&o.cookies, "cookies", transform.CookiesAuto, "per-session cookie jar: auto (on when recorded answers set cookies), on, off")
}

// spec reads the transforms file and appends what the flags ask for, in
// this order: host, headers, timestamps, jwt.
func (o *transformOptions) spec() (*transform.Spec, error) {
	spec := &transform.Spec{}
	var err error
	switch {
	case o.file != "":
		if spec, err = transform.ReadFile(o.file); err != nil {
			return nil, fmt.Errorf("--transforms: %w", err)
		}
	case o.builtin != nil:
		if spec, err = transform.Parse(o.builtin, o.builtinName, "."); err != nil {
			return nil, err
		}
	}
	if o.cookies != transform.CookiesAuto {
		if spec.Cookies != "" && spec.Cookies != o.cookies {
			return nil, fmt.Errorf("--cookies %s: %s says cookies: %s", o.cookies, o.file, spec.Cookies)
		}
		spec.Cookies = o.cookies
	}
	if o.hostHeader != "" {
		spec.Add(transform.Entry{Host: &o.hostHeader}, "--host-header")
	}
	if len(o.setHeaders)+len(o.removeHeader) > 0 {
		h := &transform.HeaderSpec{Remove: o.removeHeader}
		for _, s := range o.setHeaders {
			name, value, ok := strings.Cut(s, ":")
			if !ok {
				return nil, flagError("--set-header", "'Name: value'", s)
			}
			h.Set = append(h.Set, transform.Pair{Name: strings.TrimSpace(name), Value: strings.TrimSpace(value)})
		}
		spec.Add(transform.Entry{Headers: h}, "--set-header/--remove-header")
	}
	if o.shiftTime {
		spec.Add(transform.Entry{Timestamps: &transform.TimestampSpec{Auto: true}}, "--shift-time")
	}
	switch {
	case o.jwtSecret != "" && o.jwtKey != "":
		return nil, fmt.Errorf("--jwt-secret and --jwt-key: give one")
	case o.jwtSecret != "":
		spec.Add(transform.Entry{JWT: &transform.JWTSpec{Secret: o.jwtSecret}}, "--jwt-secret")
	case o.jwtKey != "":
		spec.Add(transform.Entry{JWT: &transform.JWTSpec{KeyFile: o.jwtKey}}, "--jwt-key")
	}
	return spec, nil
}

// install builds the chain for f and wires it into the pool: as its
// rewriter, and as an observer when it learns from answers. It returns nil
// when nothing is configured.
func installTransforms(spec *transform.Spec, f *rrpair.File, cfg *vu.Config, pool *vu.Pool, stamp *transform.StampOptions) (*transform.Chain, error) {
	chain, err := transform.Build(spec, f.SetsCookies(), transform.Options{
		VUs: cfg.MostVUs(), Endpoints: f.Endpoints(), Stamp: stamp,
	})
	if err != nil {
		return nil, err
	}
	if chain.Len() == 0 {
		return nil, nil
	}
	pool.Rewriter = chain
	if chain.Learns() {
		pool.Observers = append(pool.Observers, chain)
	}
	if chain.NeedsResponses() {
		pool.DecodeResponses = true
	}
	return chain, nil
}

// transformCounts is the report's view of what the chain did.
func transformCounts(chain *transform.Chain) []report.Transform {
	if chain == nil {
		return nil
	}
	return chain.Counts()
}
