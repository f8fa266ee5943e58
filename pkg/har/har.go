// Package har converts HAR 1.2 files (what browsers and proxies export) to
// RRPairs. Entries are decoded one at a time from the JSON stream and
// written ordered by startedDateTime: a file in two passes (offsets and
// times first, 24 bytes an entry), a pipe by holding the converted lines.
package har

import (
	"bufio"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/replay-dev/replay/pkg/rrpair"
)

// Entry is the part of a HAR entry the conversion reads.
type Entry struct {
	PageRef         string  `json:"pageref"`
	StartedDateTime string  `json:"startedDateTime"`
	Time            float64 `json:"time"`
	Request         struct {
		Method      string `json:"method"`
		URL         string `json:"url"`
		HTTPVersion string `json:"httpVersion"`
		Headers     []nv   `json:"headers"`
		PostData    *struct {
			MimeType string `json:"mimeType"`
			Text     string `json:"text"`
			Params   []nv   `json:"params"`
		} `json:"postData"`
	} `json:"request"`
	Response struct {
		Status  int  `json:"status"`
		Headers []nv `json:"headers"`
		Content struct {
			Text     string `json:"text"`
			Encoding string `json:"encoding"`
		} `json:"content"`
	} `json:"response"`
}

type nv struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Stats say what a conversion did.
type Stats struct {
	Entries    int // entries read
	Written    int // pairs written
	Downgraded int // HTTP/2 or 3 entries, written as HTTP/1.1 pairs
}

// Skip receives an entry that could not be converted: its number in the
// file (from 1) and why.
type Skip func(entry int, why string)

// Convert reads a HAR from r and writes its entries to w as RRPair lines,
// ordered by startedDateTime; pages become sessions. When r can seek (a
// file), it streams in two passes: the first keeps each entry's offset and
// time (24 bytes an entry), the second converts the entries in time order.
// Otherwise (a pipe, even as an *os.File) the converted lines are held
// until they can be sorted.
func Convert(r io.Reader, w io.Writer, skip Skip) (Stats, error) {
	if rs, ok := r.(io.ReadSeeker); ok {
		if _, err := rs.Seek(0, io.SeekCurrent); err == nil {
			return convertSeeking(rs, w, skip)
		}
	}
	var st Stats
	type rec struct {
		at   time.Time
		line []byte
	}
	var recs []rec
	err := entries(r, func(n int, _ int64, dec *json.Decoder) error {
		st.Entries = n
		var e Entry
		if err := dec.Decode(&e); err != nil {
			return fmt.Errorf("entry %d: %w", n, err)
		}
		if line, at, ok := convert(&e, n, &st, skip); ok {
			recs = append(recs, rec{at, line})
		}
		return nil
	})
	if err != nil {
		return st, err
	}
	slices.SortStableFunc(recs, func(a, b rec) int { return a.at.Compare(b.at) })
	for _, r := range recs {
		if _, err := w.Write(r.line); err != nil {
			return st, err
		}
		st.Written++
	}
	return st, nil
}

// ref is what the first pass keeps of an entry: 24 bytes.
type ref struct {
	sec  int64 // startedDateTime, as Unix seconds
	off  int64 // where the entry starts (after the previous token)
	nsec int32 // and nanoseconds
	n    int32 // the entry's number
}

func (a ref) compare(b ref) int {
	return cmp.Or(cmp.Compare(a.sec, b.sec), cmp.Compare(a.nsec, b.nsec))
}

// convertSeeking is Convert in two passes over a seekable input.
func convertSeeking(r io.ReadSeeker, w io.Writer, skip Skip) (Stats, error) {
	var st Stats
	var refs []ref
	base, err := r.Seek(0, io.SeekCurrent)
	if err != nil {
		return st, err
	}
	err = entries(r, func(n int, off int64, dec *json.Decoder) error {
		st.Entries = n
		var e struct {
			StartedDateTime string `json:"startedDateTime"`
		}
		if err := dec.Decode(&e); err != nil {
			return fmt.Errorf("entry %d: %w", n, err)
		}
		if n > math.MaxInt32 {
			return fmt.Errorf("entry %d: more entries than a file can be sorted with", n)
		}
		at, _ := time.Parse(time.RFC3339Nano, e.StartedDateTime) // checked in the second pass
		refs = append(refs, ref{at.Unix(), base + off, int32(at.Nanosecond()), int32(n)})
		return nil
	})
	if err != nil {
		return st, err
	}
	slices.SortStableFunc(refs, ref.compare)
	br := bufio.NewReader(r)
	for _, f := range refs {
		if _, err := r.Seek(f.off, io.SeekStart); err != nil {
			return st, err
		}
		br.Reset(r)
		for { // from the end of the previous token: skip "," and space
			c, err := br.ReadByte()
			if err != nil {
				return st, err
			}
			if c != ',' && c != ' ' && c != '\n' && c != '\r' && c != '\t' {
				br.UnreadByte()
				break
			}
		}
		var e Entry
		if err := json.NewDecoder(br).Decode(&e); err != nil {
			return st, fmt.Errorf("entry %d: %w", f.n, err)
		}
		if line, _, ok := convert(&e, int(f.n), &st, skip); ok {
			if _, err := w.Write(line); err != nil {
				return st, err
			}
			st.Written++
		}
	}
	return st, nil
}

// convert makes entry n's line, or skips it.
func convert(e *Entry, n int, st *Stats, skip Skip) ([]byte, time.Time, bool) {
	r, err := Record(e)
	if err != nil {
		skip(n, err.Error())
		return nil, time.Time{}, false
	}
	line, err := rrpair.AppendChecked(nil, r)
	if err != nil {
		skip(n, err.Error())
		return nil, time.Time{}, false
	}
	if r.Version == "2" || r.Version == "3" {
		st.Downgraded++
	}
	return line, r.TS, true
}

// entries walks log.entries of the HAR in r, calling fn for entry n (from
// 1) with the decoder positioned before it and the offset where the
// previous token ended; fn must consume the entry.
func entries(r io.Reader, fn func(n int, off int64, dec *json.Decoder) error) error {
	dec := json.NewDecoder(r)
	if err := expectDelim(dec, '{'); err != nil {
		return fmt.Errorf("not a HAR: %w", err)
	}
	found := false
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return err
		}
		if key != "log" {
			if err := skipValue(dec); err != nil {
				return err
			}
			continue
		}
		found = true
		if err := expectDelim(dec, '{'); err != nil {
			return fmt.Errorf("log: %w", err)
		}
		for dec.More() {
			key, err := dec.Token()
			if err != nil {
				return err
			}
			if key != "entries" {
				if err := skipValue(dec); err != nil {
					return err
				}
				continue
			}
			if err := expectDelim(dec, '['); err != nil {
				return fmt.Errorf("log.entries: %w", err)
			}
			for n := 1; dec.More(); n++ {
				if err := fn(n, dec.InputOffset(), dec); err != nil {
					return err
				}
			}
			if _, err := dec.Token(); err != nil { // ]
				return err
			}
		}
		if _, err := dec.Token(); err != nil { // }
			return err
		}
	}
	if !found {
		return errors.New("not a HAR: no log")
	}
	return nil
}

// dropped are headers a replay must not send as recorded: connection
// handling, a length recomputed from the body, HTTP/2 pseudo-headers.
func dropped(name string) bool {
	if strings.HasPrefix(name, ":") || rrpair.ConnectionHeader(name) {
		return true
	}
	switch strings.ToLower(name) {
	case "upgrade", "te", "content-length": // HTTP/2 forbids the first two; the length is the body's
		return true
	}
	return false
}

// Record converts one entry. An HTTP/2 or 3 entry has Version "2" or "3"
// (a replay sends it as HTTP/1.1).
func Record(e *Entry) (r *rrpair.Record, err error) {
	req := &e.Request
	if req.Method == "" {
		return nil, errors.New("request.method: missing")
	}
	u, err := url.Parse(req.URL)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("request.url: want an absolute http(s) URL, got %q", req.URL)
	}
	r = &rrpair.Record{Method: req.Method, URI: u.RequestURI(), Host: u.Host, Protocol: u.Scheme, Session: e.PageRef}
	if ts, err := time.Parse(time.RFC3339Nano, e.StartedDateTime); err == nil {
		r.TS = ts
	} else if e.StartedDateTime != "" {
		return nil, fmt.Errorf("startedDateTime: want RFC 3339, got %q", e.StartedDateTime)
	}
	if e.Time > 0 {
		r.Duration = time.Duration(e.Time * float64(time.Millisecond))
	}
	v := strings.ToLower(req.HTTPVersion)
	switch {
	case strings.HasPrefix(v, "h2") || strings.HasPrefix(v, "h3") || strings.HasPrefix(v, "http/2") || strings.HasPrefix(v, "http/3"):
		r.Version = "2"
		if strings.Contains(v, "3") {
			r.Version = "3"
		}
		// HTTP/2 has no Host header; the URL's host becomes the pair's.
	case strings.Contains(v, "1.0"):
		r.Version = "1.0"
	default:
		r.Version = "1.1"
	}
	for _, h := range req.Headers {
		if !dropped(h.Name) {
			r.Headers = append(r.Headers, rrpair.Field{Name: h.Name, Value: h.Value})
		}
	}
	if pd := req.PostData; pd != nil {
		switch {
		case pd.Text != "":
			r.Body = []byte(pd.Text)
		case len(pd.Params) > 0:
			if strings.HasPrefix(pd.MimeType, "multipart/") {
				return nil, errors.New("request.postData: multipart params without text cannot be rebuilt")
			}
			var b strings.Builder
			for i, p := range pd.Params {
				if i > 0 {
					b.WriteByte('&')
				}
				b.WriteString(url.QueryEscape(p.Name) + "=" + url.QueryEscape(p.Value))
			}
			r.Body = []byte(b.String())
		}
	}
	res := &e.Response
	if res.Status > 0 {
		r.Status = res.Status
		for _, h := range res.Headers {
			if !dropped(h.Name) {
				r.ResHeaders = append(r.ResHeaders, rrpair.Field{Name: h.Name, Value: h.Value})
			}
		}
		if res.Content.Encoding == "base64" {
			if r.ResBody, err = base64.StdEncoding.DecodeString(res.Content.Text); err != nil {
				return nil, fmt.Errorf("response.content.text: bad base64: %w", err)
			}
		} else {
			r.ResBody = []byte(res.Content.Text)
		}
	}
	return r, nil
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := t.(json.Delim); !ok || d != want {
		return fmt.Errorf("want %q, got %v", want, t)
	}
	return nil
}

// skipValue skips the next value of the stream.
func skipValue(dec *json.Decoder) error {
	var v json.RawMessage
	return dec.Decode(&v)
}
