package run

import (
	"strings"
	"testing"
	"time"

	"github.com/replay-dev/replay/pkg/rrpair"
)

// TestFreshSeed: --seed when given; shards share one from --start-at, or
// are refused without either; otherwise each run draws its own.
func TestFreshSeed(t *testing.T) {
	at := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	two := rrpair.Shard{Index: 1, Count: 2}
	if s, err := freshSeed(&Filter{Seed: 9, SeedGiven: true}, two, at); err != nil || s != 9 {
		t.Errorf("--seed 9: %d, %v", s, err)
	}
	a, err1 := freshSeed(&Filter{Seed: 1}, rrpair.Shard{Index: 0, Count: 2}, at)
	b, err2 := freshSeed(&Filter{Seed: 1}, two, at)
	if err1 != nil || err2 != nil || a != b || a == 1 {
		t.Errorf("shards with --start-at: %d and %d (%v, %v), want one seed from the start time", a, b, err1, err2)
	}
	if _, err := freshSeed(&Filter{Seed: 1}, two, time.Time{}); err == nil || !strings.Contains(err.Error(), "give --seed") {
		t.Errorf("shards without --seed or --start-at: %v", err)
	}
	seen := map[uint64]bool{}
	for range 5 {
		s, err := freshSeed(&Filter{Seed: 1}, rrpair.Shard{}, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		seen[s] = true
	}
	if len(seen) < 4 { // 5 draws of 32 bits
		t.Errorf("5 runs drew %d distinct seeds", len(seen))
	}
}
