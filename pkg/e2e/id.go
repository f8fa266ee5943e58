package e2e

import (
	"crypto/rand"
	"encoding/binary"
	"time"
)

// ID is a parsed correlation ID. An ID says everything a receiver needs,
// with no state shared with the sender: which run sent it (a random
// nonce), the shard, the VU, the VU's sequence number, and the time the
// request was sent (stamped just before it is written), so end-to-end
// latency is (time seen − time sent) on any machine with a synchronised
// clock. Its text form (AppendID, ParseID) is
//
//	rp1-k3j9x0-0-7-1kz-lw9r0z4k1s
//	    nonce  | |  |   sent (Unix µs, base 36)
//	       shard VU seq (base 36)
type ID struct {
	Nonce uint32 // the run
	Shard int
	VU    int
	Seq   uint64 // the VU's count of stamped requests, from 0
	Sent  int64  // when the request was sent, Unix µs
}

// prefix starts every ID; its version digit lets the format change.
const prefix = "rp1-"

// NewNonce returns a random run nonce.
func NewNonce() uint32 {
	var b [4]byte
	rand.Read(b[:])
	return binary.LittleEndian.Uint32(b[:]) | 1 // never 0
}

// AppendID appends id's text form to dst without allocating.
func AppendID(dst []byte, id ID) []byte {
	dst = append(dst, prefix...)
	dst = appendBase36(dst, uint64(id.Nonce))
	dst = append(dst, '-')
	dst = appendBase36(dst, uint64(id.Shard))
	dst = append(dst, '-')
	dst = appendBase36(dst, uint64(id.VU))
	dst = append(dst, '-')
	dst = appendBase36(dst, id.Seq)
	dst = append(dst, '-')
	return appendBase36(dst, uint64(id.Sent))
}

// ParseID reads an ID written by AppendID, without allocating; ok is false
// for anything else.
func ParseID(b []byte) (id ID, ok bool) {
	if len(b) < len(prefix) || string(b[:len(prefix)]) != prefix {
		return ID{}, false
	}
	b = b[len(prefix):]
	var f [5]uint64
	for i := range f {
		n := 0
		for n < len(b) && b[n] != '-' {
			n++
		}
		v, good := parseBase36(b[:n])
		if !good || (i < 4) != (n < len(b)) {
			return ID{}, false
		}
		f[i] = v
		if n < len(b) {
			b = b[n+1:]
		} else {
			b = b[n:]
		}
	}
	if f[0] > 1<<32-1 || f[0] == 0 || f[1] > 1<<20 || f[2] > 1<<24 || f[4] > 1<<62 {
		return ID{}, false
	}
	return ID{Nonce: uint32(f[0]), Shard: int(f[1]), VU: int(f[2]), Seq: f[3], Sent: int64(f[4])}, true
}

const digits36 = "0123456789abcdefghijklmnopqrstuvwxyz"

func appendBase36(dst []byte, v uint64) []byte {
	var buf [13]byte // 36^13 > 2^64
	i := len(buf)
	for {
		i--
		buf[i] = digits36[v%36]
		v /= 36
		if v == 0 {
			break
		}
	}
	return append(dst, buf[i:]...)
}

func parseBase36(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 12 || len(b) > 1 && b[0] == '0' {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'z':
			d = c - 'a' + 10
		default:
			return 0, false
		}
		v = v*36 + uint64(d)
	}
	return v, true
}

// Receiver keeps the score of events seen leaving the SUT. Sinks call it
// from their own goroutines, at once.
type Receiver interface {
	// Seen reports the event with this ID (its text) seen at a stage at
	// a time. An ID that does not parse is counted as foreign.
	Seen(id []byte, stage string, at time.Time)
}
