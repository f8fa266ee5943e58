package transport

import (
	"net/url"

	"github.com/replay-dev/replay/pkg/rrpair"
)

// Redirector applies the redirect rule every protocol follows to the
// answers of one client. Its zero value is ready. It keeps the Location
// being followed, which req.URI may point into until the next Follow, so
// each client has its own. Following a Location that is a path allocates
// nothing once its buffer has grown; a URL or a relative reference is
// resolved by net/url, as browsers would.
type Redirector struct {
	loc []byte // the Location being followed
}

// Follow turns req, the request an answer with status and Location loc
// answered, into the next hop of the redirect it asks for, and reports
// whether there is one to follow: 301, 302 and 303 turn a request with a
// body into a GET without one (as browsers and k6 do), 307 and 308 keep
// method and body. Only http and https locations are followed (not ftp:,
// mailto:, javascript:...); a protocol-relative one ("//host/p") keeps the
// current scheme. A Location with a host goes where that recorded host
// would (--host-map, --target).
func (r *Redirector) Follow(req *rrpair.Request, status int, loc []byte) bool {
	switch status {
	case 301, 302, 303, 307, 308:
	default:
		return false
	}
	if len(loc) == 0 {
		return false
	}
	r.loc = append(r.loc[:0], loc...)
	if r.loc[0] == '/' && (len(r.loc) == 1 || r.loc[1] != '/') {
		req.URI = r.loc // a path: sent as given, raw
	} else if !r.resolve(req) {
		return false
	}
	if s := status; (s == 303 || s == 301 || s == 302) && string(req.Method) != "HEAD" {
		req.Method, req.Body = methodGET, nil
		hs := req.Headers[:0]
		for _, h := range req.Headers {
			if !rrpair.EqualFold(h.Name, "content-length") && !rrpair.EqualFold(h.Name, "content-type") {
				hs = append(hs, h)
			}
		}
		req.Headers = hs
	}
	return true
}

// methodGET is the method of a request a 301, 302 or 303 turns into a
// GET: shared by every request, never written (its capacity is its
// length, so that an append copies).
var methodGET = []byte("GET")[:3:3]

// resolve points req at r.loc, a URL or a reference relative to the
// current one, and reports whether it is one to follow: http or https,
// with a host.
func (r *Redirector) resolve(req *rrpair.Request) bool {
	ref, err := url.Parse(string(r.loc))
	if err != nil {
		return false
	}
	scheme := "http"
	if rrpair.EqualFold(req.Scheme, "https") {
		scheme = "https"
	}
	path := "/"
	if len(req.URI) > 0 && req.URI[0] == '/' {
		path = string(req.URI)
	}
	base, err := url.Parse(scheme + "://host" + path)
	if err != nil {
		return false
	}
	u := base.ResolveReference(ref)
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" || u.Opaque != "" {
		return false
	}
	if ref.Host != "" { // another host: where that recorded host would go
		req.Scheme, req.Host = []byte(u.Scheme), []byte(u.Host)
		req.HostHeader = nil // a transform's Host was for the first host
	}
	req.URI = []byte(u.RequestURI())
	return true
}
