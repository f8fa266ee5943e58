package result

import (
	"bytes"
	"compress/flate"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zlib"
	"github.com/klauspost/compress/zstd"
	brotli "github.com/molecule-man/go-brrr"
	"github.com/replay-dev/replay/pkg/rrpair"
)

// ErrTooLarge is returned by Decode when the decoded body would pass its
// limit.
var ErrTooLarge = errors.New("decoded body over the limit")

// Decode returns body decoded by the Content-Encoding value encoding:
// identity, gzip (x-gzip), deflate (zlib-wrapped, or raw as some servers
// send it), br and zstd, several codings undone in the reverse of the
// order listed ("gzip, br"). An empty or identity encoding returns body
// itself. The decoded body is at most limit bytes (0: no limit). The same
// function decodes a live answer (Answer.Body) and a recorded one, so that
// the two compare as what they mean, whatever each was sent as.
func Decode(encoding, body []byte, limit int) ([]byte, error) {
	codings := bytes.Split(encoding, []byte(","))
	out := body
	for i := len(codings) - 1; i >= 0; i-- {
		c := bytes.ToLower(bytes.TrimSpace(codings[i]))
		if len(c) == 0 || string(c) == "identity" {
			continue
		}
		var err error
		if out, err = decodeOne(string(c), out, limit); err != nil {
			return nil, fmt.Errorf("content-encoding %s: %w", c, err)
		}
	}
	return out, nil
}

func decodeOne(coding string, body []byte, limit int) ([]byte, error) {
	var r io.Reader
	src := bytes.NewReader(body)
	switch coding {
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(src)
		if err != nil {
			return nil, err
		}
		r = zr
	case "deflate":
		zr, err := zlib.NewReader(src)
		if err != nil { // raw deflate, without the zlib wrapper
			r = flate.NewReader(bytes.NewReader(body))
		} else {
			r = zr
		}
	case "br":
		r = brotli.NewReader(src)
	case "zstd":
		zr, err := zstd.NewReader(src, zstd.WithDecoderConcurrency(1))
		if err != nil {
			return nil, err
		}
		defer zr.Close()
		r = zr
	default:
		return nil, fmt.Errorf("not a coding replay decodes (gzip, deflate, br, zstd)")
	}
	if limit > 0 {
		r = io.LimitReader(r, int64(limit)+1)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	if limit > 0 && len(out) > limit {
		return nil, ErrTooLarge
	}
	return out, nil
}

// RecordedBody is the recorded answer's body decoded by its recorded
// Content-Encoding, as Answer.Body decodes the live one, so that both sides
// of a comparison or a correlation mean the same bytes: a gzip answer
// against a decoded recording (HAR keeps bodies decoded) or a gzip one. A
// body that cannot be decoded is returned as recorded.
func RecordedBody(r *rrpair.Response) []byte {
	for _, h := range r.Headers {
		if !strings.EqualFold(string(h.Name), "Content-Encoding") {
			continue
		}
		if b, err := Decode(h.Value, r.Body, 0); err == nil {
			return b
		}
		break
	}
	return r.Body
}
