package http1

import (
	"net/url"

	"github.com/replay-dev/replay/pkg/rrpair"
)

// Redirect implements transport.Client: it turns req, the request of the
// last Do, into the next hop of the redirect its answer asked for, and
// reports whether there is one to follow: 301, 302 and 303 turn a request
// with a body into a GET without one (as browsers and k6 do), 307 and 308
// keep method and body. A Location with a host goes where that recorded
// host would (--host-map, --target).
func (c *client) Redirect(req *rrpair.Request) bool {
	switch c.status { // 0 without an answer
	case 301, 302, 303, 307, 308:
	default:
		return false
	}
	loc := c.resp.Header.Peek("Location")
	if len(loc) == 0 {
		return false
	}
	c.loc = append(c.loc[:0], loc...)
	switch {
	case hasPrefixFold(c.loc, "http://") || hasPrefixFold(c.loc, "https://"):
		u, err := url.Parse(string(c.loc))
		if err != nil || u.Host == "" {
			return false
		}
		req.Scheme, req.Host = []byte(u.Scheme), []byte(u.Host)
		req.HostHeader = nil // a transform's Host was for the first host
		req.URI = []byte(u.RequestURI())
	case c.loc[0] == '/':
		req.URI = c.loc
	default: // relative to the current path
		base, err := url.Parse(string(req.URI))
		ref, err2 := url.Parse(string(c.loc))
		if err != nil || err2 != nil {
			return false
		}
		req.URI = []byte(base.ResolveReference(ref).RequestURI())
	}
	if s := c.status; (s == 303 || s == 301 || s == 302) && string(req.Method) != "HEAD" {
		req.Method, req.Body = []byte("GET"), nil
		hs := req.Headers[:0]
		for _, h := range req.Headers {
			if !equalFold(h.Name, "content-length") && !equalFold(h.Name, "content-type") {
				hs = append(hs, h)
			}
		}
		req.Headers = hs
	}
	return true
}

func hasPrefixFold(b []byte, prefix string) bool {
	return len(b) >= len(prefix) && equalFold(b[:len(prefix)], prefix)
}
