package mock

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zlib"
	"github.com/klauspost/compress/zstd"
	brotli "github.com/molecule-man/go-brrr"
	"github.com/replay-dev/replay/pkg/result"
	"github.com/replay-dev/replay/pkg/rrpair"
)

// transform rewrites the answer in sc.out with the chain (--transforms):
// a compressed body is decoded first and encoded again, in the same
// codings, when the chain changed it. An answer the chain cannot rewrite
// (a coding replay cannot write back) goes as recorded, counted.
func (s *Server) transform(l *live, sc *scratch) {
	o := &sc.out
	enc := headerValue(o.headers, "content-encoding")
	body := o.body
	if len(enc) > 0 && len(body) > 0 {
		dec, err := result.Decode(enc, body, 64<<20)
		if err != nil {
			s.st.rewriteFailed.Add(1)
			return
		}
		body = dec
	}
	sc.ans = rrpair.Request{Headers: o.headers, Body: body}
	slot := <-s.slots
	req := rrpair.Request{Method: l.v.method, URI: l.v.uri, Host: l.v.host, Headers: l.v.headers, Body: l.v.body}
	err := s.chain.RewriteAnswer(slot, &sc.ans, &sc.pair, &req)
	// The chain's buffers are the slot's: copy what it made before the
	// slot goes back.
	headers := make([]rrpair.Header, len(sc.ans.Headers))
	for i, h := range sc.ans.Headers {
		headers[i] = rrpair.Header{Name: bytes.Clone(h.Name), Value: bytes.Clone(h.Value)}
	}
	out := sc.ans.Body
	changed := !sameBytes(out, body)
	if changed {
		out = bytes.Clone(out)
	}
	s.slots <- slot
	if err != nil {
		s.st.rewriteFailed.Add(1)
		return
	}
	o.headers = headers
	if !changed {
		return
	}
	if len(enc) > 0 {
		if out, err = encode(string(enc), out); err != nil {
			s.st.rewriteFailed.Add(1)
			return
		}
	}
	o.body = out
}

// sameBytes reports whether a and b are the same slice (not just equal).
func sameBytes(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

func headerValue(hs []rrpair.Header, name string) []byte {
	for _, h := range hs {
		if rrpair.EqualFold(h.Name, name) {
			return h.Value
		}
	}
	return nil
}

// encode encodes body by a Content-Encoding value, the codings applied in
// the order listed (the reverse of result.Decode).
func encode(encoding string, body []byte) ([]byte, error) {
	for _, c := range strings.Split(encoding, ",") {
		c = strings.ToLower(strings.TrimSpace(c))
		var buf bytes.Buffer
		var err error
		switch c {
		case "", "identity":
			continue
		case "gzip", "x-gzip":
			w := gzip.NewWriter(&buf)
			_, err = w.Write(body)
			err = firstErr(err, w.Close())
		case "deflate":
			w := zlib.NewWriter(&buf)
			_, err = w.Write(body)
			err = firstErr(err, w.Close())
		case "br":
			w, werr := brotli.NewWriter(&buf, 5)
			if werr != nil {
				return nil, werr
			}
			_, err = w.Write(body)
			err = firstErr(err, w.Close())
		case "zstd":
			w, werr := zstd.NewWriter(&buf, zstd.WithEncoderConcurrency(1))
			if werr != nil {
				return nil, werr
			}
			_, err = w.Write(body)
			err = firstErr(err, w.Close())
		default:
			return nil, fmt.Errorf("content-encoding %s: not a coding replay writes", c)
		}
		if err != nil {
			return nil, err
		}
		body = buf.Bytes()
	}
	return body, nil
}

func firstErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}
