package pcap

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/replay-dev/replay/internal/testutil/golden"
)

// joined is one capture of the scenarios' captures one after the other,
// each on its own connections.
func joined(t testing.TB, scs []scenario) *tcap {
	all := newCapture(t)
	for _, sc := range scs {
		c := newCapture(t)
		c.clock = all.clock.Add(time.Second)
		sc.build(c)
		all.segs = append(all.segs, c.segs...)
		all.clock = c.clock
	}
	return all
}

func clean(scs []scenario) []scenario {
	var out []scenario
	for _, sc := range scs {
		if sc.clean {
			out = append(out, sc)
		}
	}
	return out
}

func lossy(scs []scenario) []scenario {
	var out []scenario
	for _, sc := range scs {
		if !sc.clean {
			out = append(out, sc)
		}
	}
	return out
}

// testdataCaptures are the captures kept in testdata, for the commands'
// tests, the sniffer's and the fuzz test's seeds: written by the
// scenarios, so that they cannot drift from them (go test -update writes
// them again).
func testdataCaptures(t testing.TB) map[string][]byte {
	return map[string][]byte{
		"http1.pcap":    joined(t, clean(h1Scenarios)).pcap(layers.LinkTypeEthernet),
		"h2c.pcapng":    joined(t, clean(h2Scenarios)).pcapng(layers.LinkTypeLinuxSLL2),
		"lossy.pcap.gz": gz(t, joined(t, append(lossy(h1Scenarios), lossy(h2Scenarios)...)).pcap(layers.LinkTypeEthernet)),
	}
}

// TestTestdata: the captures in testdata are the scenarios', and import
// to their golden pairs, summary and skips.
func TestTestdata(t *testing.T) {
	for name, capture := range testdataCaptures(t) {
		t.Run(name, func(t *testing.T) {
			golden.Check(t, name, capture)
			stored, err := os.ReadFile(filepath.Join("testdata", name))
			if err != nil {
				t.Fatal(err)
			}
			r := importCaptures(t, Options{}, name, stored)
			if r.err != nil {
				t.Fatal(r.err)
			}
			base := strings.SplitN(name, ".", 2)[0]
			golden.Check(t, base+".golden.jsonl", []byte(r.out))
			golden.Check(t, base+".golden.txt", []byte(r.st.Summary()+"\n"+strings.Join(r.skips, "\n")+"\n"))
		})
	}
}
