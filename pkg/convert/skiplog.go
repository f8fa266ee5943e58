package convert

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/replay-dev/replay/internal/plural"
	"github.com/replay-dev/replay/pkg/rrpair"
)

// firstShown is how many skips Report lists, with their place; the rest
// are counted.
const firstShown = 5

// SkipLog counts what a converter could not convert, keeps the first few
// with their place, and says so on stderr (Report); with --strict any of
// it fails the command. An import's --skipped file gets every one as a
// JSON line, {"index": N, "reason": "..."} ("file" first when several
// files were read). Called from one goroutine only.
type SkipLog struct {
	what string // what the converter numbers: "line", "entry", "record"
	item string // what a skip is called in counts: what, or "item"
	n    int
	// offNetwork counts, among n, the skips that lose nothing (a HAR's
	// cache hits and WebSockets never reached the network): listed and
	// counted, but no reason for --strict to fail.
	offNetwork int
	first      []string
	jsonl      io.Writer // --skipped, or nil
	line       []byte    // the JSON line, reused
}

// NewSkipLog is an empty log of skipped items, each called what ("line",
// "entry", "record") in its messages.
func NewSkipLog(what string) *SkipLog { return &SkipLog{what: what, item: what} }

// Add logs item number where (from 1), skipped because of why. Its
// signature is the format packages' Skip.
func (s *SkipLog) Add(where int, why string) { s.AddIn("", where, why) }

// AddOffNetwork is Add for an item that was never traffic to replay (a
// HAR's cache hit): listed, but --strict does not count it.
func (s *SkipLog) AddOffNetwork(where int, why string) {
	s.offNetwork++
	s.Add(where, why)
}

// AddOffNetworkIn is AddOffNetwork for a converter that reads several
// files: file names the one where is in ("" for none).
func (s *SkipLog) AddOffNetworkIn(file string, where int, why string) {
	s.offNetwork++
	s.AddIn(file, where, why)
}

// AddIn is Add for a converter that reads several files: file names the
// one where is in ("" for none).
func (s *SkipLog) AddIn(file string, where int, why string) {
	s.n++
	if len(s.first) < firstShown {
		place := fmt.Sprintf("%s %d", s.what, where)
		if file != "" {
			place = file + " " + place
		}
		s.first = append(s.first, place+": "+why)
	}
	if s.jsonl == nil {
		return
	}
	b := append(s.line[:0], '{')
	if file != "" {
		b = append(rrpair.AppendJSONString(append(b, `"file":`...), file), ',')
	}
	b = strconv.AppendInt(append(b, `"index":`...), int64(where), 10)
	b = rrpair.AppendJSONString(append(b, `,"reason":`...), why)
	s.line = append(b, "}\n"...)
	s.jsonl.Write(s.line) // a buffered file's error comes back at its flush
}

// Len is the number of items skipped.
func (s *SkipLog) Len() int { return s.n }

// Report writes the skipped items to w: their count, the first five with
// their place, how many more. With strict, any skip that lost traffic is
// an error: "--strict: 2 records could not be converted".
func (s *SkipLog) Report(w io.Writer, strict bool) error {
	if s.n == 0 {
		return nil
	}
	fmt.Fprintf(w, "replay: skipped %s:\n  %s\n", plural.Count(s.n, s.item), strings.Join(s.first, "\n  "))
	if s.n > len(s.first) {
		fmt.Fprintf(w, "  ... and %d more\n", s.n-len(s.first))
	}
	if lost := s.n - s.offNetwork; strict && lost > 0 {
		return fmt.Errorf("--strict: %s could not be converted", plural.Count(lost, s.item))
	}
	return nil
}
