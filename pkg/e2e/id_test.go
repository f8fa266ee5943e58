package e2e

import (
	"testing"
	"time"
)

func TestIDRoundTrip(t *testing.T) {
	for _, id := range []ID{
		{Nonce: 1, Shard: 0, VU: 0, Seq: 0, Sent: 0},
		{Nonce: 0xffffffff, Shard: 63, VU: 4999, Seq: 1 << 40, Sent: time.Date(2026, 11, 23, 8, 0, 0, 123456000, time.UTC).UnixMicro()},
	} {
		b := AppendID(nil, id)
		got, ok := ParseID(b)
		if !ok || got != id {
			t.Errorf("%s: got %+v %v, want %+v", b, got, ok, id)
		}
	}
	for _, bad := range []string{"", "rp1-", "rp1-1-0-0-0", "rp1-1-0-0-0-0-0", "rp2-1-0-0-0-0", "rp1-0-0-0-0-0", "rp1-1-0-0-00-0", "rp1-1-0-0-X-0", "evt-1001"} {
		if id, ok := ParseID([]byte(bad)); ok {
			t.Errorf("%q parsed as %+v", bad, id)
		}
	}
	if n := testing.AllocsPerRun(100, func() {
		b := AppendID(make([]byte, 0, 64)[:0], ID{Nonce: 9, VU: 3, Seq: 99, Sent: 1})
		ParseID(b)
	}); n > 1 { // the make
		t.Errorf("%v allocs", n)
	}
}

func FuzzParseID(f *testing.F) {
	f.Add([]byte("rp1-k3j9x0-0-7-1kz-lw9r0z4k1s"))
	f.Add([]byte("rp1-1-0-0-0-0"))
	f.Fuzz(func(t *testing.T, b []byte) {
		id, ok := ParseID(b)
		if !ok {
			return
		}
		if again, ok := ParseID(AppendID(nil, id)); !ok || again != id {
			t.Fatalf("%q: %+v does not round-trip", b, id)
		}
	})
}
