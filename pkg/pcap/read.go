package pcap

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"github.com/klauspost/compress/gzip"
)

// The magic numbers a capture starts with, read as a little-endian
// uint32: pcap in either byte order, with microsecond or nanosecond
// times, and pcapng's section header block (the same in both orders).
const (
	magicPcap      = 0xa1b2c3d4
	magicPcapSwap  = 0xd4c3b2a1
	magicPcapNano  = 0xa1b23c4d
	magicNanoSwap  = 0x4d3cb2a1
	magicPcapng    = 0x0a0d0d0a
	gzipMagic0     = 0x1f
	gzipMagic1     = 0x8b
	readBufferSize = 256 << 10
)

// Looks says whether prefix, the first bytes of a file, starts a packet
// capture, and which format: "pcap" or "pcapng", plain or gzip-compressed.
// For the sniffer, which tells formats apart.
func Looks(prefix []byte) (format string, ok bool) {
	if len(prefix) >= 2 && prefix[0] == gzipMagic0 && prefix[1] == gzipMagic1 {
		zr, err := gzip.NewReader(bytes.NewReader(prefix))
		if err != nil {
			return "", false
		}
		inner := make([]byte, 4)
		n, _ := io.ReadFull(zr, inner)
		return Looks(inner[:n])
	}
	if len(prefix) < 4 {
		return "", false
	}
	switch binary.LittleEndian.Uint32(prefix) {
	case magicPcap, magicPcapSwap, magicPcapNano, magicNanoSwap:
		return "pcap", true
	case magicPcapng:
		return "pcapng", true
	}
	return "", false
}

// packetReader is what pcapgo's pcap and pcapng readers share.
type packetReader interface {
	ZeroCopyReadPacketData() ([]byte, gopacket.CaptureInfo, error)
}

// reader reads one capture's packets, one at a time.
type reader struct {
	name   string
	index  int
	format string // "pcap" or "pcapng"
	r      packetReader
	link   layers.LinkType // a pcap file's; pcapng says it packet by packet
	n      int             // packets read
	// The packet under way, valid until the next call to next.
	data []byte
	ci   gopacket.CaptureInfo
	ts   int64
	done bool
	// cut, when not nil, says why the file ended before its end: a packet
	// cut short (a capture still being written, a truncated copy) or a
	// record that does not parse. The packets before it were read.
	cut error
}

// openReader reads the header of a capture, gzip-compressed or not. An
// input that is not a capture is refused, naming its first bytes.
func openReader(src Source, index int) (*reader, error) {
	br := bufio.NewReaderSize(src.R, readBufferSize)
	in := io.Reader(br)
	gz := false
	if head, _ := br.Peek(2); len(head) == 2 && head[0] == gzipMagic0 && head[1] == gzipMagic1 {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		zbr := bufio.NewReaderSize(zr, readBufferSize)
		in, br, gz = zbr, zbr, true
	}
	magic, _ := br.Peek(4)
	format, ok := Looks(magic)
	if !ok {
		return nil, notCapture(gz, magic)
	}
	r := &reader{name: src.Name, index: index, format: format}
	switch format {
	case "pcap":
		pr, err := pcapgo.NewReader(in)
		if err != nil {
			return nil, fmt.Errorf("pcap header: %w", headerErr(err))
		}
		r.r, r.link = pr, pr.LinkType()
		if _, ok := linkTypes[r.link]; !ok {
			return nil, fmt.Errorf("link type %s: %w", linkName(r.link), errLinkType)
		}
	case "pcapng":
		nr, err := pcapgo.NewNgReader(in, pcapgo.NgReaderOptions{WantMixedLinkType: true, SkipUnknownVersion: true})
		if err != nil {
			return nil, fmt.Errorf("pcapng section header: %w", headerErr(err))
		}
		r.r = nr
	}
	return r, nil
}

// errLinkType ends a message about a link type the importer does not
// read.
var errLinkType = errors.New("not one replay reads (it reads Ethernet, with VLAN tags, PPPoE and MPLS, Linux cooked SLL and SLL2, raw IP (link types 101, 12, 14, 228, 229) and BSD loopback captures)")

// linkName names a link type: "105 (IEEE802_11)", "12 (raw IP)".
func linkName(l layers.LinkType) string {
	if l == linkRaw12 || l == linkRaw14 {
		return fmt.Sprintf("%d (%s)", uint16(l), linkTypes[l])
	}
	name := l.String()
	if strings.HasPrefix(name, "UnknownLinkType") {
		return fmt.Sprint(uint16(l))
	}
	return fmt.Sprintf("%d (%s)", uint16(l), name)
}

// notCapture is the error for an input whose first bytes (once
// gunzipped, gz) are no capture.
func notCapture(gz bool, magic []byte) error {
	starts := "it starts with"
	if gz {
		starts = "it is gzip-compressed, and starts with"
	}
	if len(magic) == 0 {
		return errors.New("not a packet capture: the input is empty")
	}
	return fmt.Errorf("not a packet capture: %s % x (%q), where a pcap file starts with d4 c3 b2 a1, a1 b2 c3 d4, 4d 3c b2 a1 or a1 b2 3c 4d, and a pcapng file with 0a 0d 0d 0a",
		starts, magic, printable(magic))
}

// printable is b with bytes outside printable ASCII as dots.
func printable(b []byte) string {
	out := []byte(string(b))
	for i, c := range out {
		if c < ' ' || c > '~' {
			out[i] = '.'
		}
	}
	return string(out)
}

// headerErr says that a header cut short is a file cut short.
func headerErr(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("the file ends inside it")
	}
	return err
}

// next reads the next packet; false at the end of the file, or where it
// cannot be read further (cut then says why).
func (r *reader) next() bool {
	if r.done {
		return false
	}
	data, ci, err := r.r.ZeroCopyReadPacketData()
	switch {
	case errors.Is(err, io.EOF):
		r.done = true
		return false
	case err != nil:
		r.done = true
		if errors.Is(err, io.ErrUnexpectedEOF) {
			err = errors.New("the file ends inside this packet (it was cut short, or is still being written)")
		}
		r.cut = err
		return false
	}
	r.n++
	r.data, r.ci, r.ts = data, ci, ci.Timestamp.UnixNano()
	return true
}

// linkType is the link type of the packet under way.
func (r *reader) linkType() layers.LinkType {
	if r.format == "pcapng" && len(r.ci.AncillaryData) > 0 {
		if l, ok := r.ci.AncillaryData[0].(layers.LinkType); ok {
			return l
		}
	}
	return r.link
}

// merger reads several captures as one, packet by packet in time order
// (ties: the file given first), as GoReplay's importer merges its chunks:
// a capture rotated into several files, or taken on several hosts.
type merger struct {
	rs []*reader
}

// next returns the reader whose packet under way is the earliest, or nil
// when every file is done. Readers start with no packet under way.
func (m *merger) next(started bool, last *reader) *reader {
	if !started {
		for _, r := range m.rs {
			r.next()
		}
	} else if last != nil {
		last.next()
	}
	var best *reader
	for _, r := range m.rs {
		if !r.done && (best == nil || r.ts < best.ts) {
			best = r
		}
	}
	return best
}
