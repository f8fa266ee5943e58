package plural

import "testing"

func TestCount(t *testing.T) {
	for _, c := range []struct {
		n    int
		noun string
		want string
	}{
		{1, "entry", "1 entry"},
		{2, "entry", "2 entries"},
		{0, "line", "0 lines"},
		{1, "line", "1 line"},
		{5, "body", "5 bodies"},
		{3, "answer header field", "3 answer header fields"},
		{1, "recorded answer", "1 recorded answer"},
		{2, "key", "2 keys"},
	} {
		if got := Count(c.n, c.noun); got != c.want {
			t.Errorf("Count(%d, %q) = %q, want %q", c.n, c.noun, got, c.want)
		}
	}
}
