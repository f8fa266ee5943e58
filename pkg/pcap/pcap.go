// Package pcap converts packet captures (pcap and pcapng, as tcpdump,
// Wireshark, dumpcap and kubectl sniff write them, plain or
// gzip-compressed) to RRPairs: the HTTP/1.x, HTTP/2 and gRPC exchanges
// the captured TCP connections carried, in the clear or in TLS decrypted
// with the client's key log (SSLKEYLOGFILE), each request with its answer.
//
// The path a packet takes:
//
//	pcapgo reader (pcap, pcapng; several files merged by time)
//	  -> link layer (Ethernet and VLAN tags, Linux cooked SLL and SLL2,
//	     raw IP, BSD loopback) -> IPv4 / IPv6 (fragments reassembled)
//	  -> TCP: a connection per 4-tuple, each direction reassembled in
//	     sequence order (retransmissions and overlaps dropped, segments
//	     out of order held), losses found (a gap the peer acknowledged,
//	     a connection that closed or idled over it, the buffer bound)
//	  -> the connection's protocol from its first bytes: HTTP/1.x,
//	     HTTP/2 (the client preface, or Upgrade: h2c), TLS (decrypted
//	     with a key log's secrets, its plaintext HTTP/1.x or HTTP/2 as
//	     ALPN says; without a key, counted), anything else (counted)
//	  -> messages framed as they arrive; requests paired with answers
//	  -> RRPair lines, spooled and written in request order
//
// It reads with gopacket's pcapgo and layers (the decoding) and its
// defragmenters; the TCP reassembly is its own, for the rules a replay
// needs that a general reassembler does not keep: a connection joined
// mid-stream at the first segment that begins a request line, a lost
// segment found as soon as the peer acknowledges it, the message it cuts
// skipped and counted while the stream is found again at the next request
// line, and every byte held counted against one bound.
//
// Memory holds the connections open (their messages under way and their
// segments out of order, all within Options.MaxBuffer) and 32 bytes a
// pair; the pairs wait for the sort in memory up to 8 MiB, then in a
// temporary file.
package pcap

import (
	"fmt"
	"io"
	"net/netip"
	"strings"
	"time"

	"github.com/replay-dev/replay/pkg/rrpair"
)

// Source is one capture: its name, for messages, and its bytes.
type Source struct {
	Name string
	R    io.Reader
}

// Options say how a capture becomes pairs.
type Options struct {
	// Services are the service's addresses (--service): a connection to
	// one is IN, one from a service's IP to another address is OUT (the
	// service's own call to a dependency), any other is skipped and
	// counted. None: every connection is IN.
	Services []netip.AddrPort
	// Session groups the pairs into sessions (--session): by connection
	// (the default), by a header or a cookie, or not at all.
	Session Session
	// StreamTimeout (--stream-timeout, capture time) ends a connection
	// idle this long: its requests still waiting are written without an
	// answer. Default 2m.
	StreamTimeout time.Duration
	// MaxBuffer (--max-buffer) bounds the bytes held for all the
	// connections together: segments out of order and messages under
	// way. Over it, the connection holding the most gives its up, counted.
	// Default 64 MiB.
	MaxBuffer int64
	// KeyLog (--keylog) holds the TLS secrets the TLS connections are
	// decrypted with; nil: TLS connections are counted and skipped.
	KeyLog *KeyLog
	// WebSockets (--websocket) keeps a WebSocket upgrade as its pair with
	// the session's messages, read from the frames that follow its 101;
	// else the connection is passed over from the upgrade on, counted.
	WebSockets bool
}

// Defaults of Options.
const (
	DefaultStreamTimeout = 2 * time.Minute
	DefaultMaxBuffer     = 64 << 20
)

func (o *Options) defaults() {
	if o.StreamTimeout <= 0 {
		o.StreamTimeout = DefaultStreamTimeout
	}
	if o.MaxBuffer <= 0 {
		o.MaxBuffer = DefaultMaxBuffer
	}
}

// Session says how pairs are grouped into sessions (tags.session).
type Session struct {
	// Kind is "connection" (the zero value's meaning too), "header",
	// "cookie" or "none".
	Kind string
	Name string // the header or cookie
}

// ParseSession reads a --session value: connection, header:NAME,
// cookie:NAME or none.
func ParseSession(s string) (Session, error) {
	switch s {
	case "", "connection":
		return Session{Kind: "connection"}, nil
	case "none":
		return Session{Kind: "none"}, nil
	}
	kind, name, ok := strings.Cut(s, ":")
	if !ok || name == "" || (kind != "header" && kind != "cookie") || !rrpair.ValidToken([]byte(name)) {
		return Session{}, fmt.Errorf("want connection, header:NAME, cookie:NAME or none, got %q", s)
	}
	return Session{Kind: kind, Name: name}, nil
}

// ParseService reads a --service value: an address and a port,
// 10.0.0.5:8080 or [2001:db8::5]:443.
func ParseService(s string) (netip.AddrPort, error) {
	ap, err := netip.ParseAddrPort(s)
	if err != nil || ap.Port() == 0 {
		return netip.AddrPort{}, fmt.Errorf("want IP:PORT (10.0.0.5:8080, [2001:db8::5]:443), got %q", s)
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), nil
}

// Skip receives what the import could not keep: the file it is in (""
// when one file was read), the number of the packet it began in (from 1,
// as Wireshark numbers frames), why, and whether replayable traffic was
// lost (a TLS connection, a request cut by a gap) or not (a connection
// that is not HTTP, a WebSocket's messages).
type Skip func(file string, packet int, why string, lost bool)

// Convert reads the captures in srcs as one, merged by packet time, and
// writes the pairs found to w in request order. A source that is not a
// capture is an error naming what it starts with; a file cut short in its
// last packet keeps the packets before it, and Stats.Cut says so.
func Convert(srcs []Source, w io.Writer, opt Options, skip Skip) (Stats, error) {
	opt.defaults()
	st := Stats{Files: len(srcs), Kinds: map[string]int{}, Skipped: map[string]int{}, TLSPorts: map[uint16]int{}, Links: map[string]int{}}
	m := &merger{}
	for i, src := range srcs {
		r, err := openReader(src, i)
		if err != nil {
			return st, errName(src.Name, len(srcs), err)
		}
		m.rs = append(m.rs, r)
	}
	out := newPairs(w, &opt, &st, skip, m.rs)
	defer out.close()
	a := newAssembler(&opt, out)
	dec := newDecoder()
	var seg segment
	var r *reader
	for started := false; ; started = true {
		if r = m.next(started, r); r == nil {
			break
		}
		st.Packets++
		seg.ts, seg.at = r.ts, place{r.index, r.n}
		switch k := dec.decode(r.linkType(), r.data, r.ci.Timestamp, &seg); k {
		case kindTCP:
			if err := a.segment(&seg); err != nil {
				return st, err
			}
		case kindLink:
			st.Links[linkName(r.linkType())]++
		default:
			st.count(k)
		}
		if a.due(r.ts) {
			if err := a.scan(r.ts); err != nil {
				return st, err
			}
			dec.discardFragments(time.Unix(0, r.ts-int64(opt.StreamTimeout)))
		}
	}
	for _, r := range m.rs {
		if r.cut != nil {
			st.Cut = append(st.Cut, fmt.Sprintf("%s ends inside packet %d", nameOr(r.name, "the capture"), r.n+1))
			out.skip(place{r.index, r.n + 1}, "cut", r.cut.Error(), true)
		}
	}
	if err := a.finish(); err != nil {
		return st, err
	}
	return st, out.flush()
}

func nameOr(name, alt string) string {
	if name == "" {
		return alt
	}
	return name
}

// errName puts a file's name before its error when several were read.
func errName(name string, files int, err error) error {
	if files < 2 || name == "" {
		return err
	}
	return fmt.Errorf("%s: %w", name, err)
}
