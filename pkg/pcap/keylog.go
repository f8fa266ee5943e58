package pcap

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"fmt"
	"io"
)

// KeyLog holds the TLS secrets of a key log (the NSS key log format that
// curl, browsers, Go's tls.Config.KeyLogWriter and OpenSSL write when
// SSLKEYLOGFILE is set), by client random:
//
//	# a comment
//	CLIENT_RANDOM <client random, 64 hex digits> <TLS 1.2 master secret, 96 hex digits>
//	CLIENT_HANDSHAKE_TRAFFIC_SECRET <client random> <secret>
//	SERVER_HANDSHAKE_TRAFFIC_SECRET <client random> <secret>
//	CLIENT_TRAFFIC_SECRET_0 <client random> <secret>
//	SERVER_TRAFFIC_SECRET_0 <client random> <secret>
//
// Other labels of the format (CLIENT_EARLY_TRAFFIC_SECRET,
// EXPORTER_SECRET, RSA, ...) are read past. Its secrets are never
// written anywhere.
type KeyLog struct {
	m map[[32]byte]*secrets
}

// secrets are the secrets logged for one client random.
type secrets struct {
	master                   []byte // TLS 1.2
	clientHS, serverHS       []byte // TLS 1.3 handshake traffic secrets
	clientTraffic, serverApp []byte // TLS 1.3 application traffic secrets (generation 0)
}

// Len is the number of client randoms the key log holds secrets for.
func (k *KeyLog) Len() int { return len(k.m) }

func (k *KeyLog) lookup(random []byte) *secrets {
	if k == nil || len(random) != 32 {
		return nil
	}
	return k.m[[32]byte(random)]
}

// ReadKeyLog reads a key log; name is its file's name, for errors. A line
// that is not "LABEL CLIENT_RANDOM SECRET" in hex, of the lengths its
// label wants, is an error naming the file and line.
func ReadKeyLog(name string, r io.Reader) (*KeyLog, error) {
	k := &KeyLog{m: map[[32]byte]*secrets{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		if err := k.line(line); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return k, nil
}

// line reads one line of a key log.
func (k *KeyLog) line(line []byte) error {
	f := bytes.Fields(line)
	if len(f) != 3 {
		return fmt.Errorf("want LABEL CLIENT_RANDOM SECRET (three fields, as SSLKEYLOGFILE writes them), got %d fields", len(f))
	}
	label := string(f[0])
	var dst func(*secrets) *[]byte
	lengths := []int{32, 48} // a TLS 1.3 secret: SHA-256 or SHA-384
	switch label {
	case "CLIENT_RANDOM":
		dst, lengths = func(s *secrets) *[]byte { return &s.master }, []int{48}
	case "CLIENT_HANDSHAKE_TRAFFIC_SECRET":
		dst = func(s *secrets) *[]byte { return &s.clientHS }
	case "SERVER_HANDSHAKE_TRAFFIC_SECRET":
		dst = func(s *secrets) *[]byte { return &s.serverHS }
	case "CLIENT_TRAFFIC_SECRET_0":
		dst = func(s *secrets) *[]byte { return &s.clientTraffic }
	case "SERVER_TRAFFIC_SECRET_0":
		dst = func(s *secrets) *[]byte { return &s.serverApp }
	}
	for i, what := range []string{"its second field", "its third field"} {
		if _, err := hex.DecodeString(string(f[i+1])); err != nil {
			return fmt.Errorf("%s: %s is not hex digits", label, what)
		}
	}
	if dst == nil {
		return nil // a label decryption needs not (early data, exporters, RSA, ECH)
	}
	random, _ := hex.DecodeString(string(f[1]))
	if len(random) != 32 {
		return fmt.Errorf("%s: want a client random of 64 hex digits, got %d", label, len(f[1]))
	}
	secret, _ := hex.DecodeString(string(f[2]))
	if !contains(lengths, len(secret)) {
		return fmt.Errorf("%s: want a secret of %s hex digits, got %d", label, digits(lengths), len(f[2]))
	}
	s := k.m[[32]byte(random)]
	if s == nil {
		s = &secrets{}
		k.m[[32]byte(random)] = s
	}
	*dst(s) = secret
	return nil
}

func contains(ns []int, n int) bool {
	for _, m := range ns {
		if m == n {
			return true
		}
	}
	return false
}

// digits says the lengths in hex digits: "96", "64 or 96".
func digits(lengths []int) string {
	if len(lengths) == 1 {
		return fmt.Sprint(2 * lengths[0])
	}
	return fmt.Sprintf("%d or %d", 2*lengths[0], 2*lengths[1])
}
