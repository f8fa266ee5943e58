package transform

import (
	"bytes"
	"math"
	"math/big"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/replay-dev/replay/pkg/rrpair"
)

func TestTimestamps(t *testing.T) {
	tests := []struct {
		name, yaml, line, want string
		changed, failed        bool
	}{
		{"rfc3339 header", `{transforms: [timestamps: {auto: true}]}`,
			line("GET", "/a", `{"X-Sent":["2026-11-01T10:00:00Z"],"X-Other":["hello"]}`, ""),
			"GET /a\nX-Sent: 2026-11-23T08:30:15Z\nX-Other: hello\n", true, false},
		{"offset and fraction kept", `{transforms: [timestamps: {auto: true}]}`,
			line("GET", "/a", `{"X-Sent":["2026-11-01T11:00:00.250+01:00"],"X-Lower":["2026-11-01t05:00:00.123456789-05:00"]}`, ""),
			"GET /a\nX-Sent: 2026-11-23T09:30:15.250+01:00\nX-Lower: 2026-11-23t03:30:15.123456789-05:00\n", true, false},
		{"epoch seconds and ms", `{transforms: [timestamps: {auto: true}]}`,
			line("POST", "/e", `{"X-Epoch":["1793527200"]}`, `{"ts":1793527200123,"n":5551234567,"s":"1793527199"}`),
			"POST /e\nX-Epoch: 1795422615\n" + `{"ts":1795422615123,"n":5551234567,"s":"1795422614"}`, true, false},
		{"query, escaped", `{transforms: [timestamps: {auto: true}]}`,
			line("GET", "/feed?since=2026-11-01T09%3A55%3A00Z&limit=20&t=1793527200", "", ""),
			"GET /feed?since=2026-11-23T08%3A25%3A15Z&limit=20&t=1795422615\n", true, false},
		{"query, escaped, long", `{transforms: [timestamps: {query: [t]}]}`,
			line("GET", "/feed?t=2026-11-01T11%3A00%3A00.123456789"+strings.Repeat("9", 40)+"%2B01%3A00&limit=20", "", ""),
			"GET /feed?t=2026-11-23T09%3A30%3A15.123456789" + strings.Repeat("0", 40) + "%2B01%3A00&limit=20\n", true, false},
		{"outside the window only when named", `{transforms: [timestamps: {auto: true, json: [born]}]}`,
			line("POST", "/u", "", `{"born":"1990-05-01T00:00:00Z","old":"2020-01-01T00:00:00Z","deep":{"at":[1793527200000]}}`),
			"POST /u\n" + `{"born":"1990-05-22T22:30:15Z","old":"2020-01-01T00:00:00Z","deep":{"at":[1795422615000]}}`, true, false},
		{"named locations only", `{transforms: [timestamps: {query: [since], headers: [x-when], json: [items.*.at]}]}`,
			line("POST", "/q?since=1793527200&other=1793527200", `{"X-When":["2026-11-01T10:00:00Z"],"X-Not":["2026-11-01T10:00:00Z"]}`,
				`{"items":[{"at":"2026-11-01T10:00:00Z"},{"at":1793527200}],"at":"2026-11-01T10:00:00Z"}`),
			"POST /q?since=1795422615&other=1793527200\nX-When: 2026-11-23T08:30:15Z\nX-Not: 2026-11-01T10:00:00Z\n" +
				`{"items":[{"at":"2026-11-23T08:30:15Z"},{"at":1795422615}],"at":"2026-11-01T10:00:00Z"}`, true, false},
		{"escaped strings and non-JSON bodies alone", `{transforms: [timestamps: {auto: true}]}`,
			line("POST", "/f", "", `{"a":"2026-11-01T10:00:00\u005a"}`),
			"POST /f\n" + `{"a":"2026-11-01T10:00:00\u005a"}`, false, false},
		{"no recorded ts", `{transforms: [timestamps: {auto: true}]}`,
			`{"http":{"req":{"method":"GET","uri":"/a","host":"h","headers":{"X-Sent":["2026-11-01T10:00:00Z"]}}}}`,
			"GET /a\nX-Sent: 2026-11-01T10:00:00Z\n", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := chain(t, tt.yaml)
			_, ps := pairs(t, tt.line)
			p := ps[0]
			if err := c.Rewrite(0, &p.Req, &p); err != nil {
				t.Fatal(err)
			}
			if got := wire(&p.Req); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
			n := c.Counts()[0]
			if failed := n.Failed == 1; failed != tt.failed {
				t.Errorf("failed count %d, want failed=%v", n.Failed, tt.failed)
			}
			if changed := n.Changed == 1; changed != tt.changed {
				t.Errorf("changed count %d, want changed=%v", n.Changed, tt.changed)
			}
		})
	}
}

// FuzzShift checks the timestamp shift on any value and any shift: no
// panic; an epoch number becomes n + the shift in its unit (rounded down),
// with its digits, and is refused only when that does not fit them; an
// RFC 3339 time is always shifted, written the same way, and parses back
// as the shifted instant cut to the fraction digits written. Unnamed, a
// value is shifted the same, and only when it lies within the window.
func FuzzShift(f *testing.F) {
	for _, s := range []string{"2026-11-01T10:00:00Z", "1793527200", "1793527200123", "2026-11-01T11:00:00.250+01:00", "9999999999", "0000000000",
		"2026-11-01t10:00:00.123456789123-05:30", "2026-11-01 10:00:60.5z"} {
		f.Add([]byte(s), int64(delta))
		f.Add([]byte(s), -int64(delta)-1)
	}
	f.Fuzz(func(t *testing.T, v []byte, d int64) {
		sh := shift{rec: recordedAt.UnixNano(), delta: d, window: int64(DefaultWindow)}
		var buf []byte
		out, ok := sh.apply(&buf, v, true)
		if ok && len(out) != len(v) {
			t.Fatalf("%s shifted by %d to %s: length changed", v, d, out)
		}
		var at int64 // the recorded instant, for the window
		if st, isStamp := rrpair.ParseRFC3339(v); isStamp {
			at = st.UnixNano
			if !ok {
				t.Fatalf("%s shifted by %d: refused", v, d)
			}
			got, ok := rrpair.ParseRFC3339(out)
			if !ok {
				t.Fatalf("%s shifted by %d: %s does not parse", v, d, out)
			}
			// Added as the code adds: a shift past int64 nanoseconds wraps
			// here as it does there (the recorded time itself is always
			// within them: ParseRFC3339 refuses years before 1678 or after 2262).
			want := st.UnixNano + d
			if st.Frac < 9 {
				unit := int64(math.Pow10(9 - st.Frac))
				want -= new(big.Int).Mod(big.NewInt(want), big.NewInt(unit)).Int64() // down to a whole unit
			}
			if got.UnixNano != want {
				t.Fatalf("%s shifted by %d: %s is %d, want %d", v, d, out, got.UnixNano, want)
			}
			if got.Offset != st.Offset || got.Frac != st.Frac || got.Zulu != st.Zulu || got.Sep != st.Sep {
				t.Fatalf("%s shifted by %d: %s is not written the same way (%+v, want %+v)", v, d, out, got, st)
			}
		} else if n, isNum := digits(v); isNum && (len(v) == 10 || len(v) == 13) {
			unit := int64(time.Second)
			if len(v) == 13 {
				unit = int64(time.Millisecond)
			}
			at = n * unit
			// rounded down: Euclidean division by a positive unit
			want := n + new(big.Int).Div(big.NewInt(d), big.NewInt(unit)).Int64()
			fits := want >= 0 && want < int64(math.Pow10(len(v)))
			if ok != fits {
				t.Fatalf("%s shifted by %d: ok %v, want %v (%d)", v, d, ok, fits, want)
			}
			if !ok {
				return
			}
			if got, _ := strconv.ParseInt(string(out), 10, 64); got != want {
				t.Fatalf("%s shifted by %d: %s, want %d", v, d, out, want)
			}
		} else if ok {
			t.Fatalf("%s is no timestamp, yet shifted to %s", v, out)
		}
		if !ok {
			return
		}
		var buf2 []byte
		out2, ok2 := sh.apply(&buf2, v, false)
		if near := at-sh.rec <= sh.window && at-sh.rec >= -sh.window; ok2 != near {
			t.Fatalf("%s unnamed: ok %v, want %v (within the window)", v, ok2, near)
		}
		if ok2 && !bytes.Equal(out2, out) {
			t.Fatalf("%s unnamed: %s, named: %s", v, out2, out)
		}
	})
}
