package result

import (
	"bytes"
	"compress/flate"
	"errors"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zlib"
	"github.com/klauspost/compress/zstd"
	brotli "github.com/molecule-man/go-brrr"
	"github.com/replay-dev/replay/pkg/rrpair"
)

func encode(t *testing.T, coding string, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	var w interface {
		Write([]byte) (int, error)
		Close() error
	}
	var err error
	switch coding {
	case "gzip":
		w = gzip.NewWriter(&buf)
	case "deflate":
		w = zlib.NewWriter(&buf)
	case "raw-deflate":
		w, err = flate.NewWriter(&buf, flate.DefaultCompression)
	case "br":
		w, err = brotli.NewWriter(&buf, 5)
	case "zstd":
		w, err = zstd.NewWriter(&buf)
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestDecode(t *testing.T) {
	body := []byte(strings.Repeat(`{"id":"evt-1","ok":true}`, 50))
	gz := encode(t, "gzip", body)
	for _, tt := range []struct {
		name, encoding string
		in             []byte
	}{
		{"none", "", body},
		{"identity", "identity", body},
		{"gzip", "gzip", gz},
		{"x-gzip, any case", "X-GZip", gz},
		{"deflate (zlib)", "deflate", encode(t, "deflate", body)},
		{"deflate sent raw", "deflate", encode(t, "raw-deflate", body)},
		{"br", "br", encode(t, "br", body)},
		{"zstd", "zstd", encode(t, "zstd", body)},
		{"two codings, undone last first", "gzip, br", encode(t, "br", gz)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Decode([]byte(tt.encoding), tt.in, 0)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, body) {
				t.Errorf("got %d bytes %.40q, want the %d bytes encoded", len(got), got, len(body))
			}
		})
	}
	if _, err := Decode([]byte("gzip"), gz, 100); !errors.Is(err, ErrTooLarge) {
		t.Errorf("over the limit: got %v, want ErrTooLarge", err)
	}
	if _, err := Decode([]byte("compress"), gz, 0); err == nil || !strings.Contains(err.Error(), "content-encoding compress") {
		t.Errorf("unknown coding: got %v, want an error naming it", err)
	}
	if _, err := Decode([]byte("gzip"), body, 0); err == nil {
		t.Error("a body that is not gzip decoded without error")
	}
}

func TestRecordedBody(t *testing.T) {
	body := []byte(`{"id":1}`)
	gz := encode(t, "gzip", body)
	for _, tt := range []struct {
		name    string
		headers []rrpair.Header
		in      []byte
		want    []byte
	}{
		{"no encoding recorded", nil, body, body},
		{"gzip recorded", []rrpair.Header{{Name: []byte("content-encoding"), Value: []byte("gzip")}}, gz, body},
		{"says gzip, is not", []rrpair.Header{{Name: []byte("Content-Encoding"), Value: []byte("gzip")}}, body, body},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := &rrpair.Response{Status: 200, Headers: tt.headers, Body: tt.in}
			if got := RecordedBody(r); !bytes.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
