// Package tlsca is the TLS termination that the forward recorder (replay
// record --forward) and the mock server (replay mock) share: a certificate
// authority, read from PEM files (--ca-cert, --ca-key) or generated once
// and written (--ca-out DIR), that issues for each server name a client
// asks for a leaf certificate signed by it; and Accept, which tells a TLS
// ClientHello from plaintext by the first byte a client sends and, for
// TLS, completes the handshake with the leaf of the name asked for.
//
// A service trusts the recorder and the mock only through the CA it is
// given (SSL_CERT_FILE, NODE_EXTRA_CA_CERTS, a Java truststore): the same
// CA, written once, serves both, so a service that trusted the recorder
// trusts the mock.
package tlsca

import (
	"bytes"
	"container/list"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// File names that --ca-out writes in its directory, and reads there when
// they are already present.
const (
	CertFile = "ca.pem"     // the CA certificate, mode 0644: give it to the service to trust
	KeyFile  = "ca-key.pem" // its private key, mode 0600
)

// Options say where the CA comes from: Cert and Key (PEM files), or
// OutDir, where a CA is generated once and written (and read again on the
// next start, so that a service that trusts it keeps trusting it).
type Options struct {
	Cert, Key string // --ca-cert, --ca-key
	OutDir    string // --ca-out
	// MaxLeaves bounds the leaf certificates kept (--leaf-cache): past
	// it, the least recently used is dropped (issued again if asked for
	// again). DefaultMaxLeaves when 0.
	MaxLeaves int
}

// DefaultMaxLeaves is the leaf certificates a CA keeps by default.
const DefaultMaxLeaves = 1000

// Given reports whether any CA option was given.
func (o *Options) Given() bool { return o.Cert != "" || o.Key != "" || o.OutDir != "" }

// Validate checks o without reading any file. Its errors name the flag.
func (o *Options) Validate() error {
	switch {
	case o.Cert != "" && o.Key == "":
		return errors.New("--ca-cert without --ca-key: a CA issues certificates only with its private key; give both")
	case o.Key != "" && o.Cert == "":
		return errors.New("--ca-key without --ca-cert: give both, the CA certificate and its key")
	case o.OutDir != "" && o.Cert != "":
		return errors.New("--ca-out and --ca-cert: give the CA's files, or a directory to generate one in, not both")
	case o.MaxLeaves < 0:
		return fmt.Errorf("--leaf-cache: want a count of certificates of 1 or more, got %d", o.MaxLeaves)
	}
	return nil
}

// Open returns the CA the options name: read from Cert and Key, or from
// OutDir when it holds both files, or generated and written there. Every
// error names the flag and the file. Nil options (nothing given) return
// nil and no error.
func (o *Options) Open() (*CA, error) {
	ca, save, err := o.Load()
	if err != nil || save == nil {
		return ca, err
	}
	return ca, save()
}

// Load is Open without writing anything: a CA to generate into OutDir is
// made in memory, and save (nil when there is nothing to write) writes
// it. A server calls save once it has started, so that a refused start
// leaves nothing on disk.
func (o *Options) Load() (ca *CA, save func() error, err error) {
	if err := o.Validate(); err != nil {
		return nil, nil, err
	}
	defer func() {
		if ca != nil && o.MaxLeaves > 0 {
			ca.maxLeaves = o.MaxLeaves
		}
	}()
	switch {
	case o.Cert != "":
		ca, err := load(o.Cert, o.Key, "--ca-cert", "--ca-key")
		return ca, nil, err
	case o.OutDir != "":
		return loadDir(o.OutDir)
	}
	return nil, nil, nil
}

// loadDir reads the CA in dir, or generates one to write there (save).
func loadDir(dir string) (*CA, func() error, error) {
	cert, key := filepath.Join(dir, CertFile), filepath.Join(dir, KeyFile)
	_, cerr := os.Stat(cert)
	_, kerr := os.Stat(key)
	switch {
	case cerr == nil && kerr == nil:
		ca, err := load(cert, key, "--ca-out", "--ca-out")
		return ca, nil, err
	case cerr == nil || kerr == nil:
		return nil, nil, fmt.Errorf("--ca-out %s: holds one of %s and %s, not both: move it away to generate a new CA, or give both", dir, CertFile, KeyFile)
	}
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return nil, nil, fmt.Errorf("--ca-out %s: not a directory", dir)
	}
	ca, err := Generate(time.Now())
	if err != nil {
		return nil, nil, err
	}
	save := func() error {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("--ca-out: %w", err)
		}
		if err := ca.Write(dir); err != nil {
			return fmt.Errorf("--ca-out: %w", err)
		}
		return nil
	}
	return ca, save, nil
}

// CA is a certificate authority that issues leaf certificates. Safe for
// concurrent use.
type CA struct {
	cert    *x509.Certificate
	key     crypto.Signer
	certPEM []byte
	keyPEM  []byte
	// leafKey is the one key of every leaf: a handshake signs with it,
	// and making one per name would cost a key generation a name.
	leafKey *ecdsa.PrivateKey
	now     func() time.Time

	// maxLeaves bounds leaves (DefaultMaxLeaves by default).
	maxLeaves int

	mu     sync.Mutex               // guards leaves and lru
	leaves map[string]*list.Element // name -> its element in lru
	lru    list.List                // *leaf, the most recently used first
}

// leaf is a leaf certificate kept, and its name.
type leaf struct {
	name string
	cert *tls.Certificate
}

// Generate makes a new CA (ECDSA P-256), valid from an hour before now for
// ten years.
func Generate(now time.Time) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "replay CA", Organization: []string{"replay"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(10, 0, 0),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return newCA(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), "generated", "generated")
}

// load reads a CA from its PEM files; certFlag and keyFlag name them in
// errors.
func load(certPath, keyPath, certFlag, keyFlag string) (*CA, error) {
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", certFlag, err)
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", keyFlag, err)
	}
	return newCA(certPEM, keyPEM, certFlag+" "+certPath, keyFlag+" "+keyPath)
}

// newCA parses a CA's PEM certificate and key; certWhere and keyWhere name
// them in errors.
func newCA(certPEM, keyPEM []byte, certWhere, keyWhere string) (*CA, error) {
	block := firstBlock(certPEM, "CERTIFICATE")
	if block == nil {
		return nil, fmt.Errorf("%s: no PEM CERTIFICATE block in it", certWhere)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", certWhere, err)
	}
	if !cert.IsCA {
		return nil, fmt.Errorf("%s: %q is not a CA certificate (basic constraints CA:FALSE): it cannot sign the certificates the service must trust", certWhere, cert.Subject.CommonName)
	}
	kb := firstBlock(keyPEM, "PRIVATE KEY")
	if kb == nil {
		return nil, fmt.Errorf("%s: no PEM private key block in it (PRIVATE KEY, EC PRIVATE KEY or RSA PRIVATE KEY)", keyWhere)
	}
	key, err := parseKey(kb)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", keyWhere, err)
	}
	if !publicEqual(key.Public(), cert.PublicKey) {
		return nil, fmt.Errorf("%s: the key is not the key of the certificate in %s", keyWhere, certWhere)
	}
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	return &CA{cert: cert, key: key, certPEM: certPEM, keyPEM: keyPEM, leafKey: leafKey, now: time.Now,
		maxLeaves: DefaultMaxLeaves, leaves: map[string]*list.Element{}}, nil
}

// firstBlock is the first PEM block whose type ends with suffix.
func firstBlock(b []byte, suffix string) *pem.Block {
	for {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			return nil
		}
		if strings.HasSuffix(block.Type, suffix) {
			return block
		}
	}
}

func parseKey(b *pem.Block) (crypto.Signer, error) {
	var key any
	var err error
	switch b.Type {
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(b.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(b.Bytes)
	default:
		key, err = x509.ParsePKCS8PrivateKey(b.Bytes)
	}
	if err != nil {
		return nil, err
	}
	s, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("a %T key cannot sign", key)
	}
	return s, nil
}

func publicEqual(a, b crypto.PublicKey) bool {
	e, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && e.Equal(b)
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return n
}

// CertPEM is the CA certificate, PEM-encoded: what a service trusts.
func (ca *CA) CertPEM() []byte { return bytes.Clone(ca.certPEM) }

// Pool is a certificate pool holding the CA: for a client (a test) that
// trusts it.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// Write writes the CA into dir: CertFile (0644) and KeyFile (0600). A key
// file is created with its mode, never widened after.
func (ca *CA) Write(dir string) error {
	if err := writeNew(filepath.Join(dir, KeyFile), ca.keyPEM, 0o600); err != nil {
		return err
	}
	return writeNew(filepath.Join(dir, CertFile), ca.certPEM, 0o644)
}

func writeNew(path string, b []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(mode); err != nil { // the umask may have narrowed it
		f.Close()
		return err
	}
	return f.Close()
}

// Leaf returns the leaf certificate for name (a DNS name or an IP
// address, a port ignored), issued once and kept among the most recently
// used (Options.MaxLeaves). A name longer than DNS allows (253 bytes, a
// label 63) is refused.
func (ca *CA) Leaf(name string) (*tls.Certificate, error) {
	if h, _, err := net.SplitHostPort(name); err == nil {
		name = h
	}
	name = strings.ToLower(strings.TrimSuffix(strings.Trim(name, "[]"), "."))
	if name == "" {
		return nil, errors.New("tls: no server name to issue a certificate for")
	}
	ip := net.ParseIP(name)
	if ip == nil {
		if err := checkDNSName(name); err != nil {
			return nil, err
		}
	}
	ca.mu.Lock()
	defer ca.mu.Unlock()
	if e, ok := ca.leaves[name]; ok {
		ca.lru.MoveToFront(e)
		return e.Value.(*leaf).cert, nil
	}
	now := ca.now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     minTime(now.AddDate(1, 0, 0), ca.cert.NotAfter),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	} else {
		tmpl.DNSNames = []string{name}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &ca.leafKey.PublicKey, ca.key)
	if err != nil {
		return nil, fmt.Errorf("tls: issue a certificate for %s: %w", name, err)
	}
	c := &tls.Certificate{Certificate: [][]byte{der, ca.cert.Raw}, PrivateKey: ca.leafKey}
	ca.leaves[name] = ca.lru.PushFront(&leaf{name: name, cert: c})
	for ca.lru.Len() > ca.maxLeaves {
		old := ca.lru.Back()
		ca.lru.Remove(old)
		delete(ca.leaves, old.Value.(*leaf).name)
	}
	return c, nil
}

// Leaves is the number of leaf certificates kept.
func (ca *CA) Leaves() int {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	return ca.lru.Len()
}

// checkDNSName refuses a server name DNS could not hold (RFC 1035: 253
// bytes written without the final dot, a label 1 to 63).
func checkDNSName(name string) error {
	if len(name) > 253 {
		return fmt.Errorf("tls: server name of %d bytes: DNS allows 253", len(name))
	}
	for _, label := range strings.Split(name, ".") {
		if len(label) == 0 || len(label) > 63 {
			return fmt.Errorf("tls: server name %q: a label of %d bytes, DNS allows 1 to 63", name, len(label))
		}
	}
	return nil
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// ServerConfig is a TLS server configuration that presents, for each
// handshake, the leaf of the server name the client sent (SNI), or of
// fallback when it sent none (a client that dials an address), and offers
// alpn.
func (ca *CA) ServerConfig(fallback string, alpn []string) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: alpn,
		GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			name := hello.ServerName
			if name == "" {
				name = fallback
			}
			return ca.Leaf(name)
		},
	}
}
