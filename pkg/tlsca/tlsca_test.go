package tlsca

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestOutDirWritesOnceAndReads(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ca")
	o := Options{OutDir: dir}
	ca, err := o.Open()
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]os.FileMode{CertFile: 0o644, KeyFile: 0o600} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", name, fi.Mode().Perm(), want)
		}
	}
	again, err := o.Open()
	if err != nil {
		t.Fatal(err)
	}
	if string(again.CertPEM()) != string(ca.CertPEM()) {
		t.Error("a second start with --ca-out generated another CA: the service trusts the first")
	}
	// The files --ca-out wrote are what --ca-cert and --ca-key read.
	byFiles, err := (&Options{Cert: filepath.Join(dir, CertFile), Key: filepath.Join(dir, KeyFile)}).Open()
	if err != nil || string(byFiles.CertPEM()) != string(ca.CertPEM()) {
		t.Errorf("reading the written files: %v", err)
	}
}

func TestBadCAFiles(t *testing.T) {
	dir := t.TempDir()
	ca, err := Generate(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := ca.Write(dir); err != nil {
		t.Fatal(err)
	}
	other, _ := Generate(time.Now())
	otherDir := t.TempDir()
	other.Write(otherDir)
	cert, key := filepath.Join(dir, CertFile), filepath.Join(dir, KeyFile)
	unreadable := filepath.Join(t.TempDir(), "locked.pem")
	os.WriteFile(unreadable, []byte("x"), 0o000)
	notPEM := filepath.Join(t.TempDir(), "notpem.pem")
	os.WriteFile(notPEM, []byte("hello"), 0o644)
	half := t.TempDir()
	os.WriteFile(filepath.Join(half, CertFile), ca.CertPEM(), 0o644)
	for _, tt := range []struct {
		name string
		o    Options
		want string
	}{
		{"cert without key", Options{Cert: cert}, "--ca-cert without --ca-key"},
		{"key without cert", Options{Key: key}, "--ca-key without --ca-cert"},
		{"missing cert", Options{Cert: filepath.Join(dir, "nope.pem"), Key: key}, "--ca-cert: open"},
		{"missing key", Options{Cert: cert, Key: filepath.Join(dir, "nope.pem")}, "--ca-key: open"},
		{"not PEM", Options{Cert: notPEM, Key: key}, "--ca-cert " + notPEM + ": no PEM CERTIFICATE"},
		{"key of another CA", Options{Cert: cert, Key: filepath.Join(otherDir, KeyFile)}, "is not the key of the certificate"},
		{"half a CA in --ca-out", Options{OutDir: half}, "holds one of ca.pem and ca-key.pem"},
		{"both ways", Options{Cert: cert, Key: key, OutDir: dir}, "--ca-out and --ca-cert"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.o.Open()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error with %q", err, tt.want)
			}
		})
	}
	if os.Getuid() != 0 { // root reads a file of mode 0
		if _, err := (&Options{Cert: unreadable, Key: key}).Open(); err == nil || !strings.Contains(err.Error(), "--ca-cert: open") {
			t.Errorf("unreadable: %v", err)
		}
	}
	// A leaf certificate is not a CA.
	leaf, _ := ca.Leaf("example.com")
	leafPEM := filepath.Join(t.TempDir(), "leaf.pem")
	os.WriteFile(leafPEM, pemOf(leaf.Certificate[0]), 0o644)
	if _, err := (&Options{Cert: leafPEM, Key: key}).Open(); err == nil || !strings.Contains(err.Error(), "not a CA certificate") {
		t.Errorf("leaf as CA: %v", err)
	}
}

func pemOf(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func TestLeafVerifies(t *testing.T) {
	ca, err := Generate(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"api.example.com", "api.example.com:443", "127.0.0.1", "[::1]:8443"} {
		leaf, err := ca.Leaf(name)
		if err != nil {
			t.Fatal(err)
		}
		c, _ := x509.ParseCertificate(leaf.Certificate[0])
		host := name
		if h, _, err := net.SplitHostPort(name); err == nil {
			host = h
		}
		if _, err := c.Verify(x509.VerifyOptions{Roots: ca.Pool(), DNSName: host}); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	a, _ := ca.Leaf("API.example.com")
	b, _ := ca.Leaf("api.example.com")
	if a != b {
		t.Error("a leaf is issued again for the same name in another case")
	}
}

// TestAccept: a TLS client gets the leaf of its SNI and ALPN's choice; a
// plaintext client's bytes all arrive, the first one included; a TLS
// client without a CA is refused with ErrNoCA.
func TestAccept(t *testing.T) {
	ca, _ := Generate(time.Now())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type got struct {
		c   *Conn
		err error
	}
	accepted := make(chan got, 1)
	serve := func(ca *CA) {
		c, err := ln.Accept()
		if err != nil {
			accepted <- got{err: err}
			return
		}
		ac, err := Accept(c, ca, "fallback.test", []string{"h2", "http/1.1"}, time.Now().Add(5*time.Second))
		if err != nil {
			c.Close()
		}
		accepted <- got{ac, err}
	}

	go serve(ca)
	tc, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: ca.Pool(), ServerName: "svc.test", NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	g := <-accepted
	if g.err != nil || !g.c.TLS || g.c.Proto != "h2" || g.c.ServerName != "svc.test" {
		t.Fatalf("TLS: %+v, %v", g.c, g.err)
	}
	tc.Write([]byte("ping"))
	buf := make([]byte, 4)
	if _, err := io.ReadFull(g.c, buf); err != nil || string(buf) != "ping" {
		t.Errorf("read %q, %v", buf, err)
	}
	tc.Close()
	g.c.Close()

	go serve(ca)
	pc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	pc.Write([]byte("GET / HTTP/1.1\r\n\r\n"))
	g = <-accepted
	if g.err != nil || g.c.TLS {
		t.Fatalf("plaintext: %+v, %v", g.c, g.err)
	}
	all := make([]byte, 18)
	if _, err := io.ReadFull(g.c, all); err != nil || string(all) != "GET / HTTP/1.1\r\n\r\n" {
		t.Errorf("plaintext read %q, %v", all, err)
	}
	pc.Close()
	g.c.Close()

	go serve(nil)
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	go tls.Client(nc, &tls.Config{InsecureSkipVerify: true}).Handshake() //nolint:gosec // the server refuses before checking
	g = <-accepted
	if !errors.Is(g.err, ErrNoCA) {
		t.Errorf("without a CA: %v, want ErrNoCA", g.err)
	}
	nc.Close()
}

// TestLeafCacheBounded: the leaves kept never pass MaxLeaves, the least
// recently used is the one dropped (a name used again stays, and is the
// same certificate), and a name asked again after its drop is issued
// anew.
func TestLeafCacheBounded(t *testing.T) {
	ca, _, err := (&Options{OutDir: filepath.Join(t.TempDir(), "ca"), MaxLeaves: 3}).Load()
	if err != nil {
		t.Fatal(err)
	}
	first, _ := ca.Leaf("a.example")
	for i := range 50 {
		if _, err := ca.Leaf(strings.Repeat("x", 60) + "." + strings.Repeat("y", i%60+1) + ".example"); err != nil {
			t.Fatal(err)
		}
		if again, _ := ca.Leaf("a.example"); again != first { // used every time: never the least recent
			t.Fatalf("after %d names: a.example issued again, want the kept one", i+1)
		}
		if n := ca.Leaves(); n > 3 {
			t.Fatalf("after %d names: %d leaves kept, want at most 3", i+1, n)
		}
	}
	b1, _ := ca.Leaf("b.example")
	ca.Leaf("c.example")
	ca.Leaf("d.example")
	ca.Leaf("a.example") // b, the least recently used, has been dropped
	ca.Leaf("e.example")
	if b2, _ := ca.Leaf("b.example"); b2 == b1 {
		t.Error("b.example kept past the bound, want it dropped and issued anew")
	}
	if _, _, err := (&Options{OutDir: t.TempDir(), MaxLeaves: -1}).Load(); err == nil || !strings.Contains(err.Error(), "--leaf-cache") {
		t.Errorf("MaxLeaves -1: got %v, want an error naming --leaf-cache", err)
	}
}

// TestLeafRefusesNamesDNSCannotHold: a name over 253 bytes or with a
// label over 63 gets no certificate; the longest legal ones do.
func TestLeafRefusesNamesDNSCannotHold(t *testing.T) {
	ca, _ := Generate(time.Now())
	label63 := strings.Repeat("a", 63)
	long253 := strings.Join([]string{label63, label63, label63, strings.Repeat("b", 61)}, ".")
	for _, c := range []struct {
		name, want string // want: "" for a certificate
	}{
		{long253, ""},
		{long253 + ".", ""},
		{long253 + "c", "DNS allows 253"},
		{strings.Repeat("a", 64) + ".example", "DNS allows 1 to 63"},
		{"a..example", "DNS allows 1 to 63"},
		{strings.Repeat("x", 5000), "DNS allows 253"},
	} {
		t.Run(c.name[:min(len(c.name), 20)], func(t *testing.T) {
			_, err := ca.Leaf(c.name)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("got %v, want a certificate", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("got %v, want an error with %q", err, c.want)
			}
		})
	}
	if n := ca.Leaves(); n != 1 {
		t.Errorf("got %d leaves kept, want 1 (the refused names none)", n)
	}
}

// TestLoadWritesNothing: Load of a --ca-out directory writes nothing
// (nor creates the directory) until save is called.
func TestLoadWritesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ca")
	ca, save, err := (&Options{OutDir: dir}).Load()
	if err != nil || ca == nil || save == nil {
		t.Fatalf("got %v, %v, want a CA to save", ca, err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("before save: stat %s: %v, want it not there", dir, err)
	}
	if err := save(); err != nil {
		t.Fatal(err)
	}
	again, save, err := (&Options{OutDir: dir}).Load()
	if err != nil || save != nil || string(again.CertPEM()) != string(ca.CertPEM()) {
		t.Fatalf("second load: %v, save %v, want the CA saved and nothing to save", err, save != nil)
	}
}
