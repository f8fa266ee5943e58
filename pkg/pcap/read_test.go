package pcap

import (
	"bytes"
	"compress/gzip"
	"strings"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// exchange2 is a capture of one connection, two exchanges, from client to
// server (IPv4 or IPv6 addresses).
func exchange2(t testing.TB, client, server string) *tcap {
	c := newCapture(t)
	k := c.conn(client, server)
	k.handshake()
	k.send(true, get("/one"))
	k.send(false, ok("one"))
	k.send(true, post("/two", "2"))
	k.send(false, ok("two"))
	k.close()
	return c
}

func gz(t testing.TB, b []byte) []byte {
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	zw.Write(b)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// microseconds writes a capture as a pcap file with microsecond times.
func microseconds(t testing.TB, c *tcap) []byte {
	var buf bytes.Buffer
	w := pcapgo.NewWriter(&buf)
	if err := w.WriteFileHeader(65535, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	for _, s := range c.segs {
		f := c.frames(layers.LinkTypeEthernet, s)[0]
		if err := w.WritePacket(gopacket.CaptureInfo{Timestamp: s.ts, CaptureLength: len(f), Length: len(f)}, f); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// TestFormats: the same exchanges read from every file format, link type
// and IP version the importer reads give the same pairs.
func TestFormats(t *testing.T) {
	v4 := exchange2(t, "10.0.0.1:40000", "10.0.0.2:8080")
	v6 := exchange2(t, "[2001:db8::1]:40000", "[2001:db8::2]:8080")
	twoIfaces := exchange2(t, "10.0.0.1:40000", "10.0.0.2:8080")
	for i, s := range twoIfaces.segs {
		s.iface = i % 2 // a capture on two interfaces: Ethernet and raw IP
	}
	frag4, frag6 := exchange2(t, "10.0.0.1:40000", "10.0.0.2:8080"), exchange2(t, "[2001:db8::1]:40000", "[2001:db8::2]:8080")
	for _, c := range []*tcap{frag4, frag6} {
		for _, s := range c.segs {
			if len(s.payload) > 0 {
				s.frag = 16 // IP fragments, last first
			}
		}
	}
	for _, c := range []struct {
		name string
		file []byte
	}{
		{"Ethernet, pcap, nanoseconds", v4.pcap(layers.LinkTypeEthernet)},
		{"pcap, microseconds", microseconds(t, v4)},
		{"pcap, big-endian", bigEndian(v4.pcap(layers.LinkTypeEthernet))},
		{"802.1Q VLAN", v4.pcap(vlanLink)},
		{"Linux cooked (SLL)", v4.pcap(layers.LinkTypeLinuxSLL)},
		{"Linux cooked (SLL2)", v4.pcap(layers.LinkTypeLinuxSLL2)},
		{"BSD loopback", v4.pcap(layers.LinkTypeNull)},
		{"raw IP", v4.pcap(layers.LinkTypeRaw)},
		{"raw IP, link type 12", v4.pcap(linkRaw12)},
		{"raw IPv6, link type 12", v6.pcap(linkRaw12)},
		{"raw IP, link type 14", v4.pcap(linkRaw14)},
		{"QinQ (802.1ad, 802.1Q) and PPPoE", v4.pcap(qinqPPPoELink)},
		{"IPv6 over QinQ and PPPoE", v6.pcap(qinqPPPoELink)},
		{"MPLS, two labels", v4.pcap(mplsLink)},
		{"IPv6 over MPLS", v6.pcap(mplsLink)},
		{"IPv6 over Ethernet", v6.pcap(layers.LinkTypeEthernet)},
		{"IPv6 over BSD loopback", v6.pcap(layers.LinkTypeNull)},
		{"raw IPv6", v6.pcap(layers.LinkTypeIPv6)},
		{"pcapng", v4.pcapng(layers.LinkTypeEthernet)},
		{"pcapng, two interfaces of two link types", twoIfaces.pcapng(layers.LinkTypeEthernet, layers.LinkTypeRaw)},
		{"pcap, gzip", gz(t, v4.pcap(layers.LinkTypeEthernet))},
		{"pcapng, gzip", gz(t, v6.pcapng(layers.LinkTypeLinuxSLL2))},
		{"IPv4 fragments", frag4.pcap(layers.LinkTypeEthernet)},
		{"IPv6 fragments", frag6.pcap(layers.LinkTypeEthernet)},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := importOne(t, c.file)
			wantPairs(t, r, "GET /one -> 200", "POST /two -> 200")
			if len(r.skips) > 0 || r.st.Bad+r.st.NotIP+r.st.NotTCP > 0 || len(r.pairs) == 2 && (r.pairs[1].Body != "2" || r.pairs[1].ResBody != "two") {
				t.Errorf("%s; skips %q", r.st.Summary(), r.skips)
			}
			if strings.HasSuffix(c.name, "fragments") && r.st.Fragments < 10 {
				t.Errorf("%d fragments held: the test wrote no fragments", r.st.Fragments)
			}
		})
	}
}

// TestNoHost: a request without Host gets the server's address as its
// host, an IPv6 one in brackets.
func TestNoHost(t *testing.T) {
	for _, c := range []struct{ client, server string }{
		{"10.0.0.1:40000", "10.0.0.2:8080"},
		{"[2001:db8::1]:40000", "[2001:db8::2]:8080"},
	} {
		capture := newCapture(t)
		k := capture.conn(c.client, c.server)
		k.handshake()
		k.send(true, "GET /no-host HTTP/1.1\r\n\r\n")
		k.send(false, ok("x"))
		r := importOne(t, capture.pcap(layers.LinkTypeEthernet))
		wantPairs(t, r, "GET /no-host -> 200")
		if len(r.pairs) == 1 && r.pairs[0].Host != c.server {
			t.Errorf("host %q, want %q", r.pairs[0].Host, c.server)
		}
	}
}

// TestBadInput: an input that is not a capture is refused naming what it
// starts with; a link type not read is named; a capture cut inside its
// last packet keeps what came before it and says so.
func TestBadInput(t *testing.T) {
	good := exchange2(t, "10.0.0.1:40000", "10.0.0.2:8080").pcap(layers.LinkTypeEthernet)
	wifi := newCapture(t).pcap(layers.LinkTypeEthernet)
	wifi[20] = byte(layers.LinkTypeIEEE802_11) // the link type of the file header
	for _, c := range []struct {
		name string
		file []byte
		err  string
	}{
		{"a traffic file", []byte(`{"http":{"req":{"method":"GET"}}}` + "\n"), `not a packet capture: it starts with 7b 22 68 74 ("{\"ht"), where a pcap file starts with d4 c3 b2 a1, a1 b2 c3 d4, 4d 3c b2 a1 or a1 b2 3c 4d, and a pcapng file with 0a 0d 0d 0a`},
		{"empty", nil, "not a packet capture: the input is empty"},
		{"gzip of text", gz(t, []byte("hello, world\n")), `not a packet capture: it is gzip-compressed, and starts with 68 65 6c 6c ("hell"), where`},
		{"a header cut short", good[:10], "pcap header: the file ends inside it"},
		{"802.11", wifi, "link type 105 (802.11): not one replay reads (it reads Ethernet, with VLAN tags, PPPoE and MPLS, Linux cooked SLL and SLL2, raw IP (link types 101, 12, 14, 228, 229) and BSD loopback captures)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := importOne(t, c.file)
			if r.err == nil || !strings.HasPrefix(r.err.Error(), c.err) {
				t.Errorf("got %v, want an error starting %q", r.err, c.err)
			}
		})
	}
	t.Run("cut inside its last packet", func(t *testing.T) {
		r := importOne(t, good[:len(good)-30])
		wantPairs(t, r, "GET /one -> 200", "POST /two -> 200")
		wantSkips(t, r, "packet 14: cut: the file ends inside this packet (it was cut short, or is still being written)")
		if !strings.HasSuffix(r.st.Summary(), "; capture.pcap ends inside packet 14: the packets before it were read") {
			t.Errorf("summary %q", r.st.Summary())
		}
	})
	t.Run("a pcapng interface of a link type not read", func(t *testing.T) {
		c := exchange2(t, "10.0.0.1:40000", "10.0.0.2:8080")
		c.segs[4].iface = 1
		r := importOne(t, c.pcapng(layers.LinkTypeEthernet, layers.LinkTypeIEEE802_11))
		if !strings.Contains(r.st.Summary(), "not read: 1 packet of link type 105 (802.11)") {
			t.Errorf("summary %q", r.st.Summary())
		}
	})
}

// TestMerge: a capture rotated into two files (tcpdump -C), a connection
// spanning both, reads as one; a skip names its file.
func TestMerge(t *testing.T) {
	c := exchange2(t, "10.0.0.1:40000", "10.0.0.2:8080")
	k := c.conn("10.0.0.1:40001", "10.0.0.2:443")
	k.handshake()
	k.send(true, "\x16\x03\x01\x00\x05\x01\x00\x00\x01\x03")
	all := c.segs
	c.segs = all[:7]
	first := c.pcap(layers.LinkTypeEthernet)
	c.segs = all[7:]
	second := c.pcapng(layers.LinkTypeEthernet)
	r := importCaptures(t, Options{}, "dump.pcap1", second, "dump.pcap0", first)
	wantPairs(t, r, "GET /one -> 200", "POST /two -> 200")
	wantSkips(t, r, "dump.pcap1 packet 11: tls: a TLS connection to 10.0.0.2:443")
	if !strings.HasPrefix(r.st.Summary(), "2 files merged: 19 packets, 2 connections, 2 pairs written") {
		t.Errorf("summary %q", r.st.Summary())
	}
}
