package pcap

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"

	"golang.org/x/crypto/chacha20poly1305"
)

// tlsSuite is a cipher suite the importer decrypts.
type tlsSuite struct {
	id     uint16
	name   string
	tls13  bool
	hash   func() hash.Hash // the PRF's (TLS 1.2) or HKDF's (TLS 1.3)
	keyLen int
	ivLen  int // the fixed IV: 4 for TLS 1.2's AES-GCM, 12 for ChaCha20 and TLS 1.3, none for CBC
	cipher int
	mac    func() hash.Hash // CBC's HMAC
	macLen int
}

// The record protections.
const (
	cipherGCM = iota
	cipherChaCha
	cipherCBC
)

var tlsSuites = map[uint16]*tlsSuite{}

func init() {
	for _, s := range []tlsSuite{
		{id: 0x1301, name: "TLS_AES_128_GCM_SHA256", tls13: true, hash: sha256.New, keyLen: 16, ivLen: 12},
		{id: 0x1302, name: "TLS_AES_256_GCM_SHA384", tls13: true, hash: sha512.New384, keyLen: 32, ivLen: 12},
		{id: 0x1303, name: "TLS_CHACHA20_POLY1305_SHA256", tls13: true, hash: sha256.New, keyLen: 32, ivLen: 12, cipher: cipherChaCha},
		{id: 0xc02f, name: "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", hash: sha256.New, keyLen: 16, ivLen: 4},
		{id: 0xc02b, name: "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", hash: sha256.New, keyLen: 16, ivLen: 4},
		{id: 0x009e, name: "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256", hash: sha256.New, keyLen: 16, ivLen: 4},
		{id: 0x009c, name: "TLS_RSA_WITH_AES_128_GCM_SHA256", hash: sha256.New, keyLen: 16, ivLen: 4},
		{id: 0xc030, name: "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", hash: sha512.New384, keyLen: 32, ivLen: 4},
		{id: 0xc02c, name: "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", hash: sha512.New384, keyLen: 32, ivLen: 4},
		{id: 0x009f, name: "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384", hash: sha512.New384, keyLen: 32, ivLen: 4},
		{id: 0x009d, name: "TLS_RSA_WITH_AES_256_GCM_SHA384", hash: sha512.New384, keyLen: 32, ivLen: 4},
		{id: 0xcca8, name: "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", hash: sha256.New, keyLen: 32, ivLen: 12, cipher: cipherChaCha},
		{id: 0xcca9, name: "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", hash: sha256.New, keyLen: 32, ivLen: 12, cipher: cipherChaCha},
		{id: 0xccaa, name: "TLS_DHE_RSA_WITH_CHACHA20_POLY1305_SHA256", hash: sha256.New, keyLen: 32, ivLen: 12, cipher: cipherChaCha},
		{id: 0xc013, name: "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", hash: sha256.New, keyLen: 16, cipher: cipherCBC, mac: sha1.New, macLen: 20},
		{id: 0xc009, name: "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA", hash: sha256.New, keyLen: 16, cipher: cipherCBC, mac: sha1.New, macLen: 20},
		{id: 0x002f, name: "TLS_RSA_WITH_AES_128_CBC_SHA", hash: sha256.New, keyLen: 16, cipher: cipherCBC, mac: sha1.New, macLen: 20},
		{id: 0xc014, name: "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA", hash: sha256.New, keyLen: 32, cipher: cipherCBC, mac: sha1.New, macLen: 20},
		{id: 0xc00a, name: "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA", hash: sha256.New, keyLen: 32, cipher: cipherCBC, mac: sha1.New, macLen: 20},
		{id: 0x0035, name: "TLS_RSA_WITH_AES_256_CBC_SHA", hash: sha256.New, keyLen: 32, cipher: cipherCBC, mac: sha1.New, macLen: 20},
		{id: 0xc027, name: "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256", hash: sha256.New, keyLen: 16, cipher: cipherCBC, mac: sha256.New, macLen: 32},
		{id: 0xc023, name: "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256", hash: sha256.New, keyLen: 16, cipher: cipherCBC, mac: sha256.New, macLen: 32},
		{id: 0x003c, name: "TLS_RSA_WITH_AES_128_CBC_SHA256", hash: sha256.New, keyLen: 16, cipher: cipherCBC, mac: sha256.New, macLen: 32},
		{id: 0x003d, name: "TLS_RSA_WITH_AES_256_CBC_SHA256", hash: sha256.New, keyLen: 32, cipher: cipherCBC, mac: sha256.New, macLen: 32},
		{id: 0xc028, name: "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384", hash: sha512.New384, keyLen: 32, cipher: cipherCBC, mac: sha512.New384, macLen: 48},
		{id: 0xc024, name: "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384", hash: sha512.New384, keyLen: 32, cipher: cipherCBC, mac: sha512.New384, macLen: 48},
	} {
		tlsSuites[s.id] = &s
	}
}

// tlsKeys protect the records of one direction of a connection, from the
// record after its change of keys; seq is the next record's number.
type tlsKeys struct {
	tls13 bool
	aead  cipher.AEAD
	block cipher.Block // CBC
	mac   hash.Hash    // CBC
	iv    []byte
	seq   uint64
	nonce [12]byte
	aad   [13]byte
	sum   []byte
}

// newKeys makes the keys of suite s from a key and an IV (TLS 1.2: and a
// MAC key).
func newKeys(s *tlsSuite, key, iv, macKey []byte) (*tlsKeys, error) {
	k := &tlsKeys{tls13: s.tls13, iv: iv}
	var err error
	switch s.cipher {
	case cipherGCM:
		var b cipher.Block
		if b, err = aes.NewCipher(key); err == nil {
			k.aead, err = cipher.NewGCM(b)
		}
	case cipherChaCha:
		k.aead, err = chacha20poly1305.New(key)
	case cipherCBC:
		k.block, err = aes.NewCipher(key)
		k.mac = hmac.New(s.mac, macKey)
	}
	return k, err
}

// newKeys13 makes the TLS 1.3 keys of a traffic secret (RFC 8446 §7.3).
func newKeys13(s *tlsSuite, secret []byte) (*tlsKeys, error) {
	key, err := expandLabel(s.hash, secret, "key", s.keyLen)
	if err != nil {
		return nil, err
	}
	iv, err := expandLabel(s.hash, secret, "iv", 12)
	if err != nil {
		return nil, err
	}
	return newKeys(s, key, iv, nil)
}

// expandLabel is TLS 1.3's HKDF-Expand-Label with an empty context.
func expandLabel(h func() hash.Hash, secret []byte, label string, n int) ([]byte, error) {
	full := "tls13 " + label
	info := make([]byte, 0, 4+len(full))
	info = binary.BigEndian.AppendUint16(info, uint16(n))
	info = append(info, byte(len(full)))
	info = append(info, full...)
	info = append(info, 0)
	return hkdf.Expand(h, secret, string(info), n)
}

// keyBlock12 is TLS 1.2's key block (RFC 5246 §6.3): the client's and
// the server's MAC keys, keys and IVs, from the master secret.
func keyBlock12(s *tlsSuite, master, clientRandom, serverRandom []byte) (client, server *tlsKeys, err error) {
	seed := append(append([]byte(nil), serverRandom...), clientRandom...)
	b := prf12(s.hash, master, "key expansion", seed, 2*(s.macLen+s.keyLen+s.ivLen))
	take := func(n int) []byte {
		out := b[:n:n]
		b = b[n:]
		return out
	}
	cmac, smac := take(s.macLen), take(s.macLen)
	ckey, skey := take(s.keyLen), take(s.keyLen)
	civ, siv := take(s.ivLen), take(s.ivLen)
	if client, err = newKeys(s, ckey, civ, cmac); err != nil {
		return nil, nil, err
	}
	server, err = newKeys(s, skey, siv, smac)
	return client, server, err
}

// prf12 is TLS 1.2's PRF: P_hash(secret, label + seed), n bytes.
func prf12(h func() hash.Hash, secret []byte, label string, seed []byte, n int) []byte {
	ls := append([]byte(label), seed...)
	mac := hmac.New(h, secret)
	mac.Write(ls)
	a := mac.Sum(nil)
	var out []byte
	for len(out) < n {
		mac.Reset()
		mac.Write(a)
		mac.Write(ls)
		out = mac.Sum(out)
		mac.Reset()
		mac.Write(a)
		a = mac.Sum(a[:0])
	}
	return out[:n]
}

var errRecordAuth = errors.New("the record does not authenticate")

// open decrypts a record (hdr its 5-byte header, body what follows),
// appending the plaintext to dst; typ is its content type (TLS 1.3: the
// inner one).
func (k *tlsKeys) open(dst, hdr, body []byte) (typ byte, plain []byte, err error) {
	seq := k.seq
	k.seq++
	typ = hdr[0]
	switch {
	case k.tls13:
		k.xorNonce(seq)
		plain, err = k.aead.Open(dst, k.nonce[:], body, hdr)
		if err != nil {
			return 0, nil, errRecordAuth
		}
		i := len(plain) - 1
		for i >= len(dst) && plain[i] == 0 {
			i--
		}
		if i < len(dst) {
			return 0, nil, errors.New("a record with no content type")
		}
		return plain[i], plain[:i], nil
	case k.aead != nil && len(k.iv) == 4: // TLS 1.2 AES-GCM: an explicit nonce
		if len(body) < 8+k.aead.Overhead() {
			return 0, nil, fmt.Errorf("a record of %d bytes, too short for AES-GCM", len(body))
		}
		copy(k.nonce[:4], k.iv)
		copy(k.nonce[4:], body[:8])
		plain, err = k.aead.Open(dst, k.nonce[:], body[8:], k.ad12(seq, hdr, len(body)-8-k.aead.Overhead()))
	case k.aead != nil: // TLS 1.2 ChaCha20-Poly1305
		if len(body) < k.aead.Overhead() {
			return 0, nil, fmt.Errorf("a record of %d bytes, too short for ChaCha20-Poly1305", len(body))
		}
		k.xorNonce(seq)
		plain, err = k.aead.Open(dst, k.nonce[:], body, k.ad12(seq, hdr, len(body)-k.aead.Overhead()))
	default:
		return k.openCBC(dst, seq, hdr, body)
	}
	if err != nil {
		return 0, nil, errRecordAuth
	}
	return typ, plain, nil
}

// openCBC decrypts a TLS 1.2 AES-CBC record (MAC then encrypt) and checks
// its padding and MAC.
func (k *tlsKeys) openCBC(dst []byte, seq uint64, hdr, body []byte) (byte, []byte, error) {
	bs, ml := k.block.BlockSize(), k.mac.Size()
	if len(body) < 2*bs || len(body)%bs != 0 || len(body)-bs < ml+1 {
		return 0, nil, fmt.Errorf("a record of %d bytes, not whole AES-CBC blocks", len(body))
	}
	n := len(body) - bs
	dst = append(dst, make([]byte, n)...)
	plain := dst[len(dst)-n:]
	cipher.NewCBCDecrypter(k.block, body[:bs]).CryptBlocks(plain, body[bs:])
	pad := int(plain[n-1])
	if pad+1+ml > n {
		return 0, nil, errRecordAuth
	}
	content := plain[:n-pad-1-ml]
	k.mac.Reset()
	k.mac.Write(k.ad12(seq, hdr, len(content)))
	k.mac.Write(content)
	k.sum = k.mac.Sum(k.sum[:0])
	if subtle.ConstantTimeCompare(k.sum, plain[len(content):len(content)+ml]) != 1 {
		return 0, nil, errRecordAuth
	}
	return hdr[0], dst[:len(dst)-n+len(content)], nil
}

// xorNonce sets the nonce to the IV XOR the record's number (TLS 1.3,
// and ChaCha20-Poly1305 in TLS 1.2).
func (k *tlsKeys) xorNonce(seq uint64) {
	copy(k.nonce[:], k.iv)
	for i := range 8 {
		k.nonce[4+i] ^= byte(seq >> (56 - 8*i))
	}
}

// ad12 is TLS 1.2's additional data: the record's number, type, version
// and plaintext length.
func (k *tlsKeys) ad12(seq uint64, hdr []byte, n int) []byte {
	binary.BigEndian.PutUint64(k.aad[:8], seq)
	k.aad[8], k.aad[9], k.aad[10] = hdr[0], hdr[1], hdr[2]
	binary.BigEndian.PutUint16(k.aad[11:], uint16(n))
	return k.aad[:]
}
