package pcap

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/replay-dev/replay/internal/plural"
)

// Stats say what a conversion read, wrote and could not keep.
type Stats struct {
	Files       int // captures read
	Packets     int // packets read, in all files
	Connections int // TCP connections that carried data
	TLS         int // TLS connections decrypted (--keylog)
	Written     int // pairs written
	// Kinds counts the pairs written by protocol and direction: "HTTP/1.1
	// IN", "HTTP/2 IN", "gRPC OUT".
	Kinds map[string]int
	// NoAnswer counts the pairs written without an answer (a capture of
	// one direction, a connection that ended or idled first); AnswerLost,
	// among them, those whose answer the capture lost (a gap, the snap
	// length).
	NoAnswer, AnswerLost int
	// Skipped counts what was not kept, by kind (the kinds of Skip
	// reasons): "tls", "gap", "snaplen", ...
	Skipped map[string]int
	// TLSPorts counts the TLS connections by server port.
	TLSPorts map[uint16]int
	// Elsewhere counts the connections neither to nor from a --service.
	Elsewhere int
	// Before counts the answers, on connections the capture joined
	// mid-stream, to requests made before the capture began: not kept, and
	// nothing lost.
	Before int
	// Links counts the packets of link types not read, by link type.
	Links map[string]int
	// NotIP, NotTCP, Bad and Fragments count packets that carried no TCP
	// segment (ARP; UDP, ICMP; headers cut short or invalid) or that were
	// IP fragments (whose datagrams, once whole, are read).
	NotIP, NotTCP, Bad, Fragments int
	// Retransmitted counts segments whose bytes had been read already.
	Retransmitted int
	// Dropped counts the bytes given up to keep within --max-buffer.
	Dropped int64
	// Cut names the files that end inside a packet.
	Cut []string
	// WebSockets counts the WebSocket sessions written on their upgrade
	// pairs (Options.WebSockets).
	WebSockets int
}

// NothingWritten says why no pair was written when the capture held no
// connection to read ("" when it did: its skips say why).
func (s Stats) NothingWritten() string {
	switch {
	case s.Written > 0 || s.Connections > 0:
		return ""
	case s.Packets == 0:
		return "the capture holds no packet"
	}
	return fmt.Sprintf("none of the capture's %s is part of a TCP connection that carried data", plural.Count(s.Packets, "packet"))
}

// count counts a packet that carried no TCP segment.
func (s *Stats) count(k kind) {
	switch k {
	case kindNotIP:
		s.NotIP++
	case kindNotTCP:
		s.NotTCP++
	case kindFragment:
		s.Fragments++
	default:
		s.Bad++
	}
}

// Skip kinds, in the order the summary lists them, with what a count of
// them says.
var skipKinds = []struct{ kind, note string }{
	{"tls", ""},
	{"gap", "cut by bytes the capture lost"},
	{"snaplen", "cut by the snap length: capture with tcpdump -s 0"},
	{"h2-joined", "HTTP/2 joined mid-connection: its HPACK state is unknown"},
	{"h2-lost", "HTTP/2 after a loss: frames and HPACK state lost"},
	{"buffer", "over --max-buffer"},
	{"incomplete", "the connection or the capture ended inside it"},
	{"no-request", "an answer to no captured request"},
	{"bad-message", "not an HTTP message where one was due"},
	{"invalid", "a request replay cannot send"},
	{"not-http", "connections that are not HTTP"},
	{"upgrade", "connections upgraded to another protocol"},
	{"reset", "streams reset before their request was whole"},
	{"cut", "a file cut short"},
}

// Summary is the sentence that says what a conversion read, wrote and did
// not keep: "12 packets, 3 connections, 5 pairs written (HTTP/1.1 IN 4,
// gRPC IN 1), 1 without an answer; skipped 3: tls 2 (port 443), gap 1
// (cut by bytes the capture lost); not read: 4 UDP or ICMP packets", the
// files named only when several were merged.
func (s Stats) Summary() string {
	var b strings.Builder
	if s.Files > 1 {
		fmt.Fprintf(&b, "%d files merged: ", s.Files)
	}
	fmt.Fprintf(&b, "%s, %s, %s written", plural.Count(s.Packets, "packet"), plural.Count(s.Connections, "connection"), plural.Count(s.Written, "pair"))
	if len(s.Kinds) > 0 {
		b.WriteString(" (" + counts(s.Kinds) + ")")
	}
	if s.TLS > 0 {
		fmt.Fprintf(&b, ", %s decrypted", plural.Count(s.TLS, "TLS connection"))
	}
	if s.NoAnswer > 0 {
		fmt.Fprintf(&b, ", %d without an answer", s.NoAnswer)
		if s.AnswerLost > 0 {
			fmt.Fprintf(&b, " (%d lost in the capture)", s.AnswerLost)
		}
	}
	if n := sum(s.Skipped); n > 0 {
		fmt.Fprintf(&b, "; skipped %d:", n)
		sep := " "
		for _, k := range skipKinds {
			c := s.Skipped[k.kind]
			if c == 0 {
				continue
			}
			note := k.note
			if k.kind == "tls" {
				note = "TLS connections not decrypted, " + ports(s.TLSPorts)
			}
			fmt.Fprintf(&b, "%s%s %d (%s)", sep, k.kind, c, note)
			sep = ", "
		}
	}
	if other := said(
		phrase{s.WebSockets, "WebSocket session", " kept with its messages"},
		phrase{s.Elsewhere, "connection", " neither to nor from --service"},
		phrase{s.Before, "answer", " to requests made before the capture began"},
		phrase{s.Retransmitted, "segment", " retransmitted"},
		phrase{int(s.Dropped), "byte", " dropped over --max-buffer"},
	); len(other) > 0 {
		b.WriteString("; " + strings.Join(other, ", "))
	}
	notRead := said(
		phrase{s.NotTCP, "packet", " not TCP"},
		phrase{s.NotIP, "packet", " not IP"},
		phrase{s.Bad, "packet", " with headers cut short or invalid"},
	)
	for _, l := range slices.Sorted(maps.Keys(s.Links)) {
		notRead = append(notRead, fmt.Sprintf("%s of link type %s", plural.Count(s.Links[l], "packet"), l))
	}
	if len(notRead) > 0 {
		b.WriteString("; not read: " + strings.Join(notRead, ", "))
	}
	for _, c := range s.Cut {
		b.WriteString("; " + c + ": the packets before it were read")
	}
	return b.String()
}

// phrase is a count and what it counts, said when it is not zero.
type phrase struct {
	n          int
	noun, rest string
}

// said are the phrases whose count is not zero: "2 packets not TCP".
func said(ps ...phrase) []string {
	var out []string
	for _, p := range ps {
		if p.n > 0 {
			out = append(out, plural.Count(p.n, p.noun)+p.rest)
		}
	}
	return out
}

// counts lists m as "HTTP/1.1 IN 4, gRPC IN 1", the largest first.
func counts(m map[string]int) string {
	keys := slices.SortedFunc(maps.Keys(m), func(a, b string) int {
		if m[a] != m[b] {
			return m[b] - m[a]
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

// ports lists the TLS ports: "port 443", "ports 443 (3), 8443 (1)".
func ports(m map[uint16]int) string {
	keys := slices.Sorted(maps.Keys(m))
	if len(keys) == 1 {
		return fmt.Sprintf("port %d", keys[0])
	}
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%d (%d)", k, m[k])
	}
	return "ports " + strings.Join(parts, ", ")
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
