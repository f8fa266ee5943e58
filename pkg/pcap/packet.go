package pcap

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/ip4defrag"
	"github.com/gopacket/gopacket/ip6defrag"
	"github.com/gopacket/gopacket/layers"
)

// segment is what the importer keeps of a packet: a TCP segment. Its
// payload points into the reader's buffer, valid until the next packet.
type segment struct {
	src, dst netip.AddrPort
	seq, ack uint32
	flags    uint8 // synFlag, ackFlag, finFlag, rstFlag
	payload  []byte
	// cut counts the payload bytes the capture did not keep: the packet
	// was longer than the snap length.
	cut int
	ts  int64 // capture time, Unix nanoseconds
	at  place // where the packet is
}

const (
	synFlag = 1 << iota
	ackFlag
	finFlag
	rstFlag
)

// place is where a packet is: its file (an index in the sources) and its
// number in it, from 1, as Wireshark numbers frames.
type place struct {
	src    int
	packet int
}

// kind is what a packet is, to the importer.
type kind int

const (
	kindTCP      kind = iota
	kindNotIP         // ARP, LLDP, ...
	kindNotTCP        // UDP, ICMP, ...
	kindFragment      // an IP fragment, held until its datagram is whole
	kindBad           // headers cut short or invalid
	kindLink          // a link type the importer does not read
)

// decoder decodes packets into TCP segments with gopacket's layers,
// reused packet after packet, and reassembles IP fragments with
// gopacket's defragmenters. Used from one goroutine.
type decoder struct {
	eth  layers.Ethernet
	vlan layers.Dot1Q
	sll  layers.LinuxSLL
	sll2 layers.LinuxSLL2
	loop layers.Loopback
	ip4  layers.IPv4
	ip6  layers.IPv6
	tcp  layers.TCP

	defrag4 *ip4defrag.IPv4Defragmenter
	defrag6 *ip6defrag.IPv6Defragmenter
}

func newDecoder() *decoder {
	return &decoder{defrag4: ip4defrag.NewIPv4Defragmenter(), defrag6: ip6defrag.NewIPv6Defragmenter()}
}

// Link types the importer reads.
var linkTypes = map[layers.LinkType]string{
	layers.LinkTypeEthernet:  "Ethernet",
	layers.LinkTypeLinuxSLL:  "Linux cooked (SLL)",
	layers.LinkTypeLinuxSLL2: "Linux cooked (SLL2)",
	layers.LinkTypeNull:      "BSD loopback",
	layers.LinkTypeLoop:      "OpenBSD loopback",
	layers.LinkTypeRaw:       "raw IP",
	layers.LinkTypeIPv4:      "raw IPv4",
	layers.LinkTypeIPv6:      "raw IPv6",
	linkRaw12:                "raw IP",
	linkRaw14:                "raw IP",
}

// Link types 12 and 14 are raw IP as BSD and older Linux captures write
// it (their DLT_RAW, before LINKTYPE_RAW was 101), read as libpcap and
// tshark read them: IPv4 or IPv6 as the first header says.
const (
	linkRaw12 = layers.LinkType(12)
	linkRaw14 = layers.LinkType(14)
)

// EtherTypes of VLAN tags: 802.1Q, 802.1ad (QinQ), and the older QinQ
// value some switches still write.
// PPPoE session frames (RFC 2516) and MPLS label stacks (RFC 3032),
// unicast and multicast, may stand between them and IP.
const (
	etherIPv4   = 0x0800
	etherIPv6   = 0x86dd
	etherVLAN   = 0x8100
	etherQinQ   = 0x88a8
	etherQinQv1 = 0x9100
	etherPPPoE  = 0x8864
	etherMPLS   = 0x8847
	etherMPLSm  = 0x8848
)

// shims is the most VLAN tags, PPPoE and MPLS headers one frame may stack
// before IP: past it, the frame counts as bad.
const shims = 16

// decode reads one packet of link type link captured at ts into seg.
func (d *decoder) decode(link layers.LinkType, data []byte, ts time.Time, seg *segment) kind {
	ether, payload, k := d.link(link, data)
	if k != kindTCP {
		return k
	}
	switch ether {
	case etherIPv4:
		return d.ipv4(payload, ts, seg)
	case etherIPv6:
		return d.ipv6(payload, seg)
	}
	return kindNotIP
}

// link strips the link layer: the EtherType of what it carries and its
// bytes.
func (d *decoder) link(link layers.LinkType, data []byte) (ether uint16, payload []byte, k kind) {
	nf := gopacket.NilDecodeFeedback
	switch link {
	case layers.LinkTypeEthernet:
		if d.eth.DecodeFromBytes(data, nf) != nil {
			return 0, nil, kindBad
		}
		ether, payload, k = d.shims(uint16(d.eth.EthernetType), d.eth.Payload)
		if k != kindTCP {
			return 0, nil, k
		}
	case layers.LinkTypeLinuxSLL:
		if d.sll.DecodeFromBytes(data, nf) != nil {
			return 0, nil, kindBad
		}
		ether, payload = uint16(d.sll.EthernetType), d.sll.Payload
	case layers.LinkTypeLinuxSLL2:
		if d.sll2.DecodeFromBytes(data, nf) != nil {
			return 0, nil, kindBad
		}
		ether, payload = uint16(d.sll2.ProtocolType), d.sll2.Payload
	case layers.LinkTypeNull, layers.LinkTypeLoop:
		if d.loop.DecodeFromBytes(data, nf) != nil {
			return 0, nil, kindBad
		}
		ether, payload = loopEther(d.loop.Family), d.loop.Payload
	case layers.LinkTypeRaw, layers.LinkTypeIPv4, layers.LinkTypeIPv6, linkRaw12, linkRaw14:
		if len(data) == 0 {
			return 0, nil, kindBad
		}
		ether, payload = ipEther(data), data
	default:
		return 0, nil, kindLink
	}
	return ether, payload, kindTCP
}

// loopEther is the EtherType of what a loopback header of family carries
// (0 when it is not IP).
func loopEther(family layers.ProtocolFamily) uint16 {
	switch family {
	case layers.ProtocolFamilyIPv4:
		return etherIPv4
	case layers.ProtocolFamilyIPv6BSD, layers.ProtocolFamilyIPv6FreeBSD, layers.ProtocolFamilyIPv6Darwin, layers.ProtocolFamilyIPv6Linux:
		return etherIPv6
	}
	return 0
}

// ipEther is the EtherType of a raw IP packet, by its version nibble (0
// when it is not IP).
func ipEther(data []byte) uint16 {
	switch data[0] >> 4 {
	case 4:
		return etherIPv4
	case 6:
		return etherIPv6
	}
	return 0
}

// shims walks what may stand between an Ethernet header and IP: any
// number of VLAN tags (802.1Q, 802.1ad), a PPPoE session header with its
// PPP protocol, an MPLS label stack. It returns the EtherType of what
// follows them (IPv4, IPv6, or another that is not IP) and its bytes.
func (d *decoder) shims(ether uint16, payload []byte) (uint16, []byte, kind) {
	for range shims {
		switch ether {
		case etherVLAN, etherQinQ, etherQinQv1:
			if d.vlan.DecodeFromBytes(payload, gopacket.NilDecodeFeedback) != nil {
				return 0, nil, kindBad
			}
			ether, payload = uint16(d.vlan.Type), d.vlan.Payload
		case etherPPPoE:
			return pppoe(payload)
		case etherMPLS, etherMPLSm:
			return mpls(payload)
		default:
			return ether, payload, kindTCP
		}
	}
	return 0, nil, kindBad
}

// pppoe reads a PPPoE session header and its PPP protocol: version and
// type 0x11, code 0 (session data), session id, length, then PPP's
// protocol: two bytes, or one when the peers agreed to compress it (its
// low bit set).
func pppoe(payload []byte) (uint16, []byte, kind) {
	if len(payload) < 7 || payload[0] != 0x11 || payload[1] != 0 {
		return 0, nil, kindBad
	}
	n := min(int(binary.BigEndian.Uint16(payload[4:6])), len(payload)-6)
	ppp := payload[6 : 6+n]
	if len(ppp) == 0 {
		return 0, nil, kindBad
	}
	proto, hl := uint16(ppp[0]), 1
	if proto&1 == 0 {
		if len(ppp) < 2 {
			return 0, nil, kindBad
		}
		proto, hl = binary.BigEndian.Uint16(ppp), 2
	}
	switch payload = ppp[hl:]; proto {
	case 0x0021:
		return etherIPv4, payload, kindTCP
	case 0x0057:
		return etherIPv6, payload, kindTCP
	}
	return 0, nil, kindNotIP
}

// mpls reads an MPLS label stack: labels of four bytes each, to the one
// with the bottom of stack bit; then IP says its version in its first
// nibble (a pseudowire's Ethernet or control word is not IP).
func mpls(payload []byte) (uint16, []byte, kind) {
	for {
		if len(payload) < 4 {
			return 0, nil, kindBad
		}
		bottom := payload[2]&1 == 1
		payload = payload[4:]
		if bottom {
			break
		}
	}
	if len(payload) > 0 && payload[0]>>4 == 4 {
		return etherIPv4, payload, kindTCP
	}
	if len(payload) > 0 && payload[0]>>4 == 6 {
		return etherIPv6, payload, kindTCP
	}
	return 0, nil, kindNotIP
}

// ipv4 decodes an IPv4 packet; a fragment is held until its datagram is
// whole, which is then decoded.
func (d *decoder) ipv4(b []byte, ts time.Time, seg *segment) kind {
	ip := &d.ip4
	if ip.DecodeFromBytes(b, gopacket.NilDecodeFeedback) != nil {
		return kindBad
	}
	if ip.Protocol != layers.IPProtocolTCP {
		return kindNotTCP
	}
	cut := 0
	if ip.Flags&layers.IPv4MoreFragments != 0 || ip.FragOffset != 0 {
		// The defragmenter keeps the fragment: give it bytes of its own.
		own := new(layers.IPv4)
		if own.DecodeFromBytes(bytes.Clone(b), gopacket.NilDecodeFeedback) != nil {
			return kindBad
		}
		whole, err := d.defrag4.DefragIPv4WithTimestamp(own, ts)
		if err != nil || whole == nil {
			return kindFragment
		}
		ip = whole
	} else if ip.Length != 0 {
		cut = int(ip.Length) - int(ip.IHL)*4 - len(ip.Payload)
	}
	src, _ := netip.AddrFromSlice(ip.SrcIP)
	dst, _ := netip.AddrFromSlice(ip.DstIP)
	return d.tcpSegment(ip.Payload, src, dst, cut, seg)
}

// IPv6 extension headers the decoder walks past to reach TCP.
const (
	ip6HopByHop    = 0
	ip6Routing     = 43
	ip6Fragment    = 44
	ip6AuthHeader  = 51
	ip6Destination = 60
)

// ipv6 decodes an IPv6 packet, past its extension headers; a fragment is
// held until its packet is whole.
func (d *decoder) ipv6(b []byte, seg *segment) kind {
	ip := &d.ip6
	if ip.DecodeFromBytes(b, gopacket.NilDecodeFeedback) != nil {
		return kindBad
	}
	cut := 0
	if ip.Length != 0 {
		cut = max(0, 40+int(ip.Length)-len(b))
	}
	next, p := ip.NextHeader, ip.Payload
	for next != layers.IPProtocolTCP {
		switch next {
		case ip6HopByHop, ip6Routing, ip6Destination, ip6AuthHeader:
			if len(p) < 2 {
				return kindBad
			}
			n := (int(p[1]) + 1) * 8
			if next == ip6AuthHeader {
				n = (int(p[1]) + 2) * 4
			}
			if len(p) < n {
				return kindBad
			}
			next, p = layers.IPProtocol(p[0]), p[n:]
		case ip6Fragment:
			whole := d.fragment6(ip, p)
			if whole == nil {
				return kindFragment
			}
			next, p, cut = whole.NextHeader, whole.Payload, 0
		default:
			return kindNotTCP
		}
	}
	src, _ := netip.AddrFromSlice(ip.SrcIP)
	dst, _ := netip.AddrFromSlice(ip.DstIP)
	return d.tcpSegment(p, src, dst, cut, seg)
}

// fragment6 hands an IPv6 fragment (p: the fragment header and what
// follows) to the defragmenter, with bytes of its own; the packet when it
// is whole, else nil.
func (d *decoder) fragment6(ip *layers.IPv6, p []byte) *layers.IPv6 {
	if len(p) < 8 {
		return nil
	}
	fg := &layers.IPv6Fragment{
		NextHeader:     layers.IPProtocol(p[0]),
		FragmentOffset: binary.BigEndian.Uint16(p[2:4]) >> 3,
		MoreFragments:  p[3]&1 != 0,
		Identification: binary.BigEndian.Uint32(p[4:8]),
	}
	fg.BaseLayer = layers.BaseLayer{Contents: p[:8], Payload: bytes.Clone(p[8:])}
	head := &layers.IPv6{Version: 6, TrafficClass: ip.TrafficClass, FlowLabel: ip.FlowLabel, HopLimit: ip.HopLimit,
		SrcIP: bytes.Clone(ip.SrcIP), DstIP: bytes.Clone(ip.DstIP)}
	return d.defrag6.DefragIPv6(head, fg)
}

// tcpSegment decodes the TCP header in b into seg; cut is how many bytes
// of the IP payload the capture did not keep.
func (d *decoder) tcpSegment(b []byte, src, dst netip.Addr, cut int, seg *segment) kind {
	t := &d.tcp
	if t.DecodeFromBytes(b, gopacket.NilDecodeFeedback) != nil {
		return kindBad
	}
	var flags uint8
	if t.SYN {
		flags |= synFlag
	}
	if t.ACK {
		flags |= ackFlag
	}
	if t.FIN {
		flags |= finFlag
	}
	if t.RST {
		flags |= rstFlag
	}
	*seg = segment{src: netip.AddrPortFrom(src.Unmap(), uint16(t.SrcPort)), dst: netip.AddrPortFrom(dst.Unmap(), uint16(t.DstPort)),
		seq: t.Seq, ack: t.Ack, flags: flags, payload: t.Payload, cut: max(cut, 0), ts: seg.ts, at: seg.at}
	return kindTCP
}

// discardFragments forgets the IPv4 fragments whose datagram has had no
// new fragment since t (capture time); it returns how many datagrams.
func (d *decoder) discardFragments(t time.Time) int {
	return d.defrag4.DiscardOlderThan(t)
}
