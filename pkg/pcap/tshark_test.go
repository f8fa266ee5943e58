package pcap

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gopacket/gopacket/layers"
)

// tsharkBin finds tshark (Wireshark's reader, Debian's tshark package).
// Without it the test is skipped, loudly, unless REPLAY_CI=1 (.ci/run
// installs it), where it fails.
func tsharkBin(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("tshark")
	if err == nil {
		return bin
	}
	if os.Getenv("REPLAY_CI") == "1" {
		t.Fatal("tshark is not installed, and REPLAY_CI=1: .ci/run installs it (apt-get install tshark)")
	}
	t.Skip("SKIPPED: tshark is not installed (apt-get install tshark); CI installs it; this test did not run")
	return ""
}

// tsharkRequests are the requests tshark finds in the capture at path, as
// "METHOD TARGET", sorted: HTTP/1.x requests, and HTTP/2 requests on the
// ports given (h2c by prior knowledge, which a reader cannot discover:
// tshark's -d tcp.port==N,http2) or after an Upgrade: h2c.
func tsharkRequests(t *testing.T, path string, h2ports ...uint16) []string {
	t.Helper()
	args := []string{"-r", path, "-n", "-o", "tcp.reassemble_out_of_order:TRUE"}
	for _, p := range h2ports {
		args = append(args, "-d", fmt.Sprintf("tcp.port==%d,http2", p))
	}
	return tsharkHTTP(t, args)
}

// tsharkHTTP runs tshark with args (the capture and how to read it) and
// returns the HTTP/1.x and HTTP/2 requests it finds, as "METHOD TARGET",
// sorted.
func tsharkHTTP(t *testing.T, args []string) []string {
	t.Helper()
	args = append(args, "-Y", "http.request || http2.headers.method", "-T", "fields", "-E", "separator=/t", "-E", "aggregator=|",
		"-e", "http.request.method", "-e", "http.request.uri", "-e", "http2.headers.method", "-e", "http2.headers.path")
	cmd := exec.Command(tsharkBin(t), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tshark %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	var reqs []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "\t")
		for len(f) < 4 {
			f = append(f, "")
		}
		for _, mp := range [][2]string{{f[0], f[1]}, {f[2], f[3]}} {
			if mp[0] == "" {
				continue
			}
			methods, paths := strings.Split(mp[0], "|"), strings.Split(mp[1], "|")
			for i := range methods {
				reqs = append(reqs, methods[i]+" "+paths[min(i, len(paths)-1)])
			}
		}
	}
	slices.Sort(reqs)
	return reqs
}

// h2cPorts are the server ports of the connections whose client starts
// with the HTTP/2 preface.
func h2cPorts(c *tcap) []uint16 {
	var ports []uint16
	started := map[*tconn]bool{}
	for _, s := range c.built {
		if !s.fromClient || len(s.payload) == 0 || started[s.k] {
			continue
		}
		started[s.k] = true
		if bytes.HasPrefix(s.payload, []byte(preface)) && !slices.Contains(ports, s.k.server.Port()) {
			ports = append(ports, s.k.server.Port())
		}
	}
	return ports
}

// TestAgreesWithTshark: on each capture that lost nothing, the requests
// tshark finds are the ones imported (method and target).
func TestAgreesWithTshark(t *testing.T) {
	tsharkBin(t)
	for _, sc := range append(clean(h1Scenarios), clean(h2Scenarios)...) {
		t.Run(sc.name, func(t *testing.T) {
			c := newCapture(t)
			sc.build(c)
			capture := c.pcap(layers.LinkTypeEthernet)
			path := filepath.Join(t.TempDir(), "capture.pcap")
			if err := os.WriteFile(path, capture, 0o644); err != nil {
				t.Fatal(err)
			}
			want := tsharkRequests(t, path, h2cPorts(c)...)
			r := importOne(t, capture)
			var got []string
			for _, p := range r.pairs {
				got = append(got, p.Method+" "+p.URI)
			}
			slices.Sort(got)
			if len(want) == 0 || !slices.Equal(got, want) {
				t.Errorf("imported %q\ntshark finds %q", got, want)
			}
		})
	}
}
