package http1

import (
	"net/url"

	"github.com/replay-dev/replay/pkg/rrpair"
)

// Redirect implements transport.Client: it turns req, the request of the
// last Do, into the next hop of the redirect its answer asked for, and
// reports whether there is one to follow: 301, 302 and 303 turn a request
// with a body into a GET without one (as browsers and k6 do), 307 and 308
// keep method and body. Only http and https locations are followed (not
// ftp:, mailto:, javascript:...); a protocol-relative one ("//host/p")
// keeps the current scheme. A Location with a host goes where that
// recorded host would (--host-map, --target).
func (c *Client) Redirect(req *rrpair.Request) bool {
	if c.status == 0 { // no answer
		return false
	}
	return c.RedirectTo(req, c.status, c.resp.Header.Peek("Location"))
}

// RedirectTo is Redirect for an answer another protocol read (over a
// connection Connect lent): its status and Location header.
func (c *Client) RedirectTo(req *rrpair.Request, status int, loc []byte) bool {
	switch status {
	case 301, 302, 303, 307, 308:
	default:
		return false
	}
	if len(loc) == 0 {
		return false
	}
	c.loc = append(c.loc[:0], loc...)
	if c.loc[0] == '/' && (len(c.loc) == 1 || c.loc[1] != '/') {
		req.URI = c.loc // a path: sent as given, raw
	} else if !c.resolve(req) {
		return false
	}
	if s := status; (s == 303 || s == 301 || s == 302) && string(req.Method) != "HEAD" {
		req.Method, req.Body = []byte("GET"), nil
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

// resolve points req at c.loc, a URL or a reference relative to the
// current one, and reports whether it is one to follow: http or https,
// with a host.
func (c *Client) resolve(req *rrpair.Request) bool {
	ref, err := url.Parse(string(c.loc))
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
