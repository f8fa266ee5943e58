package spool

import (
	"fmt"
	"testing"
	"unsafe"
)

// TestSorter: records come back ordered by key, equal keys by sequence
// number, whether they stayed in memory or went to a file.
func TestSorter(t *testing.T) {
	keys := []int64{5, 3, 5, 1, 3, 9, 5}
	for _, limit := range []int{memLimit, 0, 10} {
		t.Run(fmt.Sprint("limit ", limit), func(t *testing.T) {
			s := New()
			s.limit = limit
			defer s.Close()
			for i, k := range keys {
				seq := int64(i)
				if i == 6 {
					seq = -1 // added last, came first
				}
				if err := s.Add(k, seq, fmt.Appendf(nil, "rec%d-key%d", i, k)); err != nil {
					t.Fatal(err)
				}
			}
			if limit < 20 && s.file == nil {
				t.Fatal("the records did not go to a file")
			}
			if err := s.Sort(); err != nil {
				t.Fatal(err)
			}
			want := []string{"rec3-key1", "rec1-key3", "rec4-key3", "rec6-key5", "rec0-key5", "rec2-key5", "rec5-key9"}
			var buf []byte
			for i := range s.Len() {
				rec, err := s.Record(i, buf)
				if err != nil {
					t.Fatal(err)
				}
				buf = rec
				if string(rec) != want[i] {
					t.Errorf("record %d: got %s, want %s", i, rec, want[i])
				}
			}
		})
	}
}

// TestEntrySize: memory keeps 32 bytes a record, as documented.
func TestEntrySize(t *testing.T) {
	if n := unsafe.Sizeof(entry{}); n != 32 {
		t.Errorf("an entry takes %d bytes, want 32", n)
	}
}
