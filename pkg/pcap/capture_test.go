package pcap

import (
	"bytes"
	"encoding/binary"
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// tcap is a capture a test writes: TCP conversations, segment by segment,
// serialized by gopacket's layers into a pcap or pcapng file. Segments
// can be reordered, repeated, dropped or cut before it is written, as
// real captures hold them.
type tcap struct {
	t     testing.TB
	clock time.Time
	segs  []*tseg
	built []*tseg // every segment sent, even those the capture then lost
}

// tseg is one TCP segment of a tcap.
type tseg struct {
	k          *tconn
	fromClient bool
	seq, ack   uint32
	flags      uint8
	payload    []byte
	ts         time.Time
	snap       int // the frame is captured up to this many bytes; 0: whole
	iface      int // the pcapng interface
	frag       int // the IP packet goes in fragments of this many bytes; 0: whole
}

// tconn is one TCP connection of a tcap.
type tconn struct {
	c              *tcap
	client, server netip.AddrPort
	next           [2]uint32 // the next sequence number of the client, of the server
	mss            int
}

func newCapture(t testing.TB) *tcap {
	return &tcap{t: t, clock: time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)}
}

// tick advances the capture's clock by a millisecond and returns it.
func (c *tcap) tick() time.Time {
	c.clock = c.clock.Add(time.Millisecond)
	return c.clock
}

// conn starts a connection from client to server ("10.0.0.1:40000").
func (c *tcap) conn(client, server string) *tconn {
	return &tconn{c: c, client: netip.MustParseAddrPort(client), server: netip.MustParseAddrPort(server), next: [2]uint32{1000, 50000}, mss: 1400}
}

func side(fromClient bool) int {
	if fromClient {
		return 0
	}
	return 1
}

// seg adds a segment as given, moving no sequence number.
func (k *tconn) seg(fromClient bool, seq uint32, flags uint8, payload []byte) *tseg {
	s := &tseg{k: k, fromClient: fromClient, seq: seq, ack: k.next[1-side(fromClient)], flags: flags, payload: payload, ts: k.c.tick()}
	k.c.segs = append(k.c.segs, s)
	k.c.built = append(k.c.built, s)
	return s
}

// handshake adds SYN, SYN-ACK, ACK.
func (k *tconn) handshake() {
	k.seg(true, k.next[0]-1, synFlag, nil)
	k.seg(false, k.next[1]-1, synFlag|ackFlag, nil)
	k.seg(true, k.next[0], ackFlag, nil)
}

// send adds data from one side, in segments of at most mss bytes, and
// the other side's ACK; it returns the data segments.
func (k *tconn) send(fromClient bool, data string) []*tseg {
	var out []*tseg
	d := side(fromClient)
	for b := []byte(data); len(b) > 0; {
		n := min(len(b), k.mss)
		out = append(out, k.seg(fromClient, k.next[d], ackFlag, b[:n]))
		k.next[d] += uint32(n)
		b = b[n:]
	}
	k.ack(!fromClient)
	return out
}

// ack adds a bare ACK from one side.
func (k *tconn) ack(fromClient bool) *tseg {
	return k.seg(fromClient, k.next[side(fromClient)], ackFlag, nil)
}

// close adds FIN from the client, FIN from the server, and the last ACK.
func (k *tconn) close() {
	k.seg(true, k.next[0], finFlag|ackFlag, nil)
	k.next[0]++
	k.seg(false, k.next[1], finFlag|ackFlag, nil)
	k.next[1]++
	k.ack(true)
}

// reset adds an RST from one side.
func (k *tconn) reset(fromClient bool) {
	k.seg(fromClient, k.next[side(fromClient)], rstFlag|ackFlag, nil)
}

// drop takes segments out of the capture: the capture lost them.
func (c *tcap) drop(ss ...*tseg) {
	c.segs = slices.DeleteFunc(c.segs, func(s *tseg) bool { return slices.Contains(ss, s) })
}

// index is where s stands in the capture.
func (c *tcap) index(s *tseg) int {
	i := slices.Index(c.segs, s)
	if i < 0 {
		c.t.Fatal("no such segment")
	}
	return i
}

// swap exchanges two segments' places (and times): reordering.
func (c *tcap) swap(a, b *tseg) {
	i, j := c.index(a), c.index(b)
	c.segs[i], c.segs[j] = c.segs[j], c.segs[i]
	c.segs[i].ts, c.segs[j].ts = c.segs[j].ts, c.segs[i].ts
}

// again adds a copy of s at the end of the capture: a retransmission.
func (c *tcap) again(s *tseg) *tseg {
	cp := *s
	cp.ts = c.tick()
	c.segs = append(c.segs, &cp)
	return &cp
}

// pcap writes the capture as a pcap file of link type link, nanosecond
// times, little-endian.
func (c *tcap) pcap(link layers.LinkType) []byte {
	var buf bytes.Buffer
	w := pcapgo.NewWriterNanos(&buf)
	head := link
	if link == vlanLink || link == qinqPPPoELink || link == mplsLink {
		head = layers.LinkTypeEthernet
	}
	if err := w.WriteFileHeader(262144, head); err != nil {
		c.t.Fatal(err)
	}
	for _, s := range c.segs {
		for _, frame := range c.frames(link, s) {
			caplen := len(frame)
			if s.snap > 0 {
				caplen = min(caplen, s.snap)
			}
			if err := w.WritePacket(gopacket.CaptureInfo{Timestamp: s.ts, CaptureLength: caplen, Length: len(frame)}, frame[:caplen]); err != nil {
				c.t.Fatal(err)
			}
		}
	}
	return buf.Bytes()
}

// pcapng writes the capture as a pcapng file with one interface per link
// type given; a segment goes on the interface its iface names.
func (c *tcap) pcapng(links ...layers.LinkType) []byte {
	var buf bytes.Buffer
	w, err := pcapgo.NewNgWriterInterface(&buf, pcapgo.NgInterface{Name: "if0", LinkType: links[0], SnapLength: 262144, TimestampResolution: 9},
		pcapgo.NgWriterOptions{SectionInfo: pcapgo.NgSectionInfo{Application: "replay tests"}})
	if err != nil {
		c.t.Fatal(err)
	}
	for i, l := range links[1:] {
		if _, err := w.AddInterface(pcapgo.NgInterface{Name: "if" + string(rune('1'+i)), LinkType: l, SnapLength: 262144, TimestampResolution: 9}); err != nil {
			c.t.Fatal(err)
		}
	}
	for _, s := range c.segs {
		for _, frame := range c.frames(links[s.iface], s) {
			ci := gopacket.CaptureInfo{Timestamp: s.ts, CaptureLength: len(frame), Length: len(frame), InterfaceIndex: s.iface}
			if err := w.WritePacket(ci, frame); err != nil {
				c.t.Fatal(err)
			}
		}
	}
	if err := w.Flush(); err != nil {
		c.t.Fatal(err)
	}
	return buf.Bytes()
}

// frames serializes a segment with the link layer of link: one frame,
// or one a fragment.
func (c *tcap) frames(link layers.LinkType, s *tseg) [][]byte {
	src, dst := s.k.client, s.k.server
	if !s.fromClient {
		src, dst = dst, src
	}
	tcp := &layers.TCP{SrcPort: layers.TCPPort(src.Port()), DstPort: layers.TCPPort(dst.Port()), Seq: s.seq, Ack: s.ack, Window: 65535,
		SYN: s.flags&synFlag != 0, ACK: s.flags&ackFlag != 0, FIN: s.flags&finFlag != 0, RST: s.flags&rstFlag != 0, PSH: len(s.payload) > 0}
	var ip gopacket.SerializableLayer
	ether := layers.EthernetTypeIPv4
	if src.Addr().Is4() {
		ip4 := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: layers.IPProtocolTCP, SrcIP: net.IP(src.Addr().AsSlice()), DstIP: net.IP(dst.Addr().AsSlice())}
		tcp.SetNetworkLayerForChecksum(ip4)
		ip = ip4
	} else {
		ip6 := &layers.IPv6{Version: 6, NextHeader: layers.IPProtocolTCP, HopLimit: 64, SrcIP: net.IP(src.Addr().AsSlice()), DstIP: net.IP(dst.Addr().AsSlice())}
		tcp.SetNetworkLayerForChecksum(ip6)
		ip, ether = ip6, layers.EthernetTypeIPv6
	}
	pkt := serialize(c.t, ip, tcp, gopacket.Payload(s.payload))
	if s.frag == 0 {
		return [][]byte{linkFrame(c.t, link, ether, pkt)}
	}
	var out [][]byte
	for _, f := range fragments(c.t, pkt, s.frag) {
		out = append(out, linkFrame(c.t, link, ether, f))
	}
	return out
}

// fragments cuts an IP packet (IPv4, or IPv6 with no extension header)
// into fragments carrying size bytes of its payload each (a multiple of
// 8), last first: fragments need not come in order.
func fragments(t testing.TB, pkt []byte, size int) [][]byte {
	var out [][]byte
	if pkt[0]>>4 == 4 {
		var ip layers.IPv4
		if err := ip.DecodeFromBytes(pkt, gopacket.NilDecodeFeedback); err != nil {
			t.Fatal(err)
		}
		for off := 0; off < len(ip.Payload); off += size {
			end := min(off+size, len(ip.Payload))
			f := ip
			f.Id, f.FragOffset, f.Flags, f.Options = 7, uint16(off/8), 0, nil
			if end < len(ip.Payload) {
				f.Flags = layers.IPv4MoreFragments
			}
			out = append([][]byte{serialize(t, &f, gopacket.Payload(ip.Payload[off:end]))}, out...)
		}
		return out
	}
	var ip layers.IPv6
	if err := ip.DecodeFromBytes(pkt, gopacket.NilDecodeFeedback); err != nil {
		t.Fatal(err)
	}
	for off := 0; off < len(ip.Payload); off += size {
		end := min(off+size, len(ip.Payload))
		h := &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: layers.IPProtocolIPv6Fragment, SrcIP: ip.SrcIP, DstIP: ip.DstIP}
		fg := &layers.IPv6Fragment{NextHeader: layers.IPProtocolTCP, FragmentOffset: uint16(off / 8), MoreFragments: end < len(ip.Payload), Identification: 7}
		out = append([][]byte{serialize(t, h, fg, gopacket.Payload(ip.Payload[off:end]))}, out...)
	}
	return out
}

// serialize writes layers with lengths and checksums filled in.
func serialize(t testing.TB, ls ...gopacket.SerializableLayer) []byte {
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		t.Fatal(err)
	}
	return slices.Clone(buf.Bytes())
}

var (
	clientMAC = net.HardwareAddr{0x02, 0, 0, 0, 0, 1}
	serverMAC = net.HardwareAddr{0x02, 0, 0, 0, 0, 2}
)

// linkFrame puts an IP packet in a frame of link type link.
func linkFrame(t testing.TB, link layers.LinkType, ether layers.EthernetType, pkt []byte) []byte {
	switch link {
	case layers.LinkTypeEthernet:
		return serialize(t, &layers.Ethernet{SrcMAC: clientMAC, DstMAC: serverMAC, EthernetType: ether}, gopacket.Payload(pkt))
	case vlanLink: // Ethernet with an 802.1Q tag
		return serialize(t, &layers.Ethernet{SrcMAC: clientMAC, DstMAC: serverMAC, EthernetType: layers.EthernetTypeDot1Q},
			&layers.Dot1Q{VLANIdentifier: 42, Type: ether}, gopacket.Payload(pkt))
	case qinqPPPoELink: // an 802.1ad tag, an 802.1Q tag, a PPPoE session
		ppp := layers.PPPTypeIPv4
		if ether == layers.EthernetTypeIPv6 {
			ppp = layers.PPPTypeIPv6
		}
		return serialize(t, &layers.Ethernet{SrcMAC: clientMAC, DstMAC: serverMAC, EthernetType: layers.EthernetTypeQinQ},
			&layers.Dot1Q{VLANIdentifier: 100, Type: layers.EthernetTypeDot1Q},
			&layers.Dot1Q{VLANIdentifier: 42, Type: layers.EthernetTypePPPoESession},
			&layers.PPPoE{Version: 1, Type: 1, Code: layers.PPPoECodeSession, SessionId: 7},
			&layers.PPP{PPPType: ppp}, gopacket.Payload(pkt))
	case mplsLink: // a stack of two labels
		return serialize(t, &layers.Ethernet{SrcMAC: clientMAC, DstMAC: serverMAC, EthernetType: layers.EthernetTypeMPLSUnicast},
			&layers.MPLS{Label: 16, TTL: 64}, &layers.MPLS{Label: 17, StackBottom: true, TTL: 64}, gopacket.Payload(pkt))
	case layers.LinkTypeLinuxSLL:
		h := make([]byte, 16)
		binary.BigEndian.PutUint16(h[0:], 0) // to us
		binary.BigEndian.PutUint16(h[2:], 1) // ARPHRD_ETHER
		binary.BigEndian.PutUint16(h[4:], 6)
		copy(h[6:], clientMAC)
		binary.BigEndian.PutUint16(h[14:], uint16(ether))
		return append(h, pkt...)
	case layers.LinkTypeLinuxSLL2:
		h := make([]byte, 20)
		binary.BigEndian.PutUint16(h[0:], uint16(ether))
		binary.BigEndian.PutUint32(h[4:], 1) // interface index
		binary.BigEndian.PutUint16(h[8:], 1) // ARPHRD_ETHER
		h[10], h[11] = 0, 6
		copy(h[12:], clientMAC)
		return append(h, pkt...)
	case layers.LinkTypeNull:
		fam := layers.ProtocolFamilyIPv4
		if ether == layers.EthernetTypeIPv6 {
			fam = layers.ProtocolFamilyIPv6Darwin
		}
		return serialize(t, &layers.Loopback{Family: fam}, gopacket.Payload(pkt))
	}
	return pkt // raw IP, and the bytes of a link type the importer does not read
}

// vlanLink stands, in tests, for Ethernet frames with a VLAN tag (written
// as link type Ethernet).
const vlanLink = layers.LinkType(0xfff0)

// qinqPPPoELink and mplsLink stand, in tests, for Ethernet frames with
// two VLAN tags (QinQ) and a PPPoE session, and with an MPLS label stack.
const (
	qinqPPPoELink = layers.LinkType(0xfff1)
	mplsLink      = layers.LinkType(0xfff2)
)

// bigEndian rewrites a little-endian pcap file (as pcapgo writes them) in
// big-endian byte order, as a capture written on a big-endian machine is.
func bigEndian(le []byte) []byte {
	be := slices.Clone(le)
	swap32 := func(off int) { binary.BigEndian.PutUint32(be[off:], binary.LittleEndian.Uint32(le[off:])) }
	swap16 := func(off int) { binary.BigEndian.PutUint16(be[off:], binary.LittleEndian.Uint16(le[off:])) }
	swap32(0)
	swap16(4)
	swap16(6)
	for _, off := range []int{8, 12, 16, 20} {
		swap32(off)
	}
	for off := 24; off+16 <= len(le); {
		for i := range 4 {
			swap32(off + 4*i)
		}
		off += 16 + int(binary.LittleEndian.Uint32(le[off+8:]))
	}
	return be
}
