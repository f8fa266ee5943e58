package transform

import (
	"encoding/json"
	"strings"
	"testing"
)

type collect struct{ vals []string }

func (c *collect) visit(w *jsonWalker, start, end int) bool {
	c.vals = append(c.vals, string(w.data[start:end]))
	return true
}

func TestJSONWalk(t *testing.T) {
	var w jsonWalker
	var c collect
	doc := ` {"a": [1, -2.5e3, "x\"y", {"b": null}], "c": {"d": true}, "e": []} `
	if !w.walk([]byte(doc), &c) {
		t.Fatal("valid JSON refused")
	}
	want := []string{"1", "-2.5e3", `"x\"y"`, "null", "true"}
	if len(c.vals) != len(want) {
		t.Fatalf("visited %q, want %q", c.vals, want)
	}
	for i := range want {
		if c.vals[i] != want[i] {
			t.Errorf("value %d: got %s, want %s", i, c.vals[i], want[i])
		}
	}
	f := pathFinder{}
	for _, p := range []string{"a.*", "a.3.b", "c.d"} {
		jp, _ := parseJSONPath(p)
		f.paths = append(f.paths, jp)
	}
	if got := f.find(&w, []byte(doc)); len(got) != 5 {
		t.Errorf("found %d values, want 5 (a.0 to a.2, a.3.b, c.d)", len(got))
	}
}

func TestJSONPathAt(t *testing.T) {
	doc := []byte(`{"a":[10,11,{"b":12,"3":13}],"4":{"x":14},"c":[[15,16]]}`)
	for _, tt := range []struct{ path, want string }{
		{"a.1", "11"},
		{"a.01", "11"}, // a number, read as one
		{"a.*", "10 11"},
		{"a.2.b", "12"},
		{"a.2.3", "13"}, // a key that is a number
		{"a.2.*", "12 13"},
		{"4.x", "14"},
		{"*.x", "14"},
		{"c.0.1", "16"},
		{"c.*.*", "15 16"},
		{"a.b", ""}, // not a number: no array element
		{"a.3", ""},
		{"a.1234567890", ""}, // too long for an index
	} {
		jp, ok := parseJSONPath(tt.path)
		if !ok {
			t.Fatalf("%s: not a path", tt.path)
		}
		var w jsonWalker
		f := pathFinder{paths: []jsonPath{jp}}
		var got []string
		for _, at := range f.find(&w, doc) {
			got = append(got, string(doc[at[0]:at[1]]))
		}
		if strings.Join(got, " ") != tt.want {
			t.Errorf("%s: found %q, want %q", tt.path, got, tt.want)
		}
	}
	for _, bad := range []string{"", "a..b", ".a", "a."} {
		if _, ok := parseJSONPath(bad); ok {
			t.Errorf("%q taken for a path", bad)
		}
	}
}

// FuzzJSONWalk checks the walker against encoding/json: it accepts what
// is valid (unless nested deeper than it follows), refuses what is not,
// and every span it gives is a valid JSON value.
func FuzzJSONWalk(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `[1,"2",{"b":[null,true]}]`, `{"a":"\u00e9"}`, `{"a":01}`, `{"a":}`, `[1,]`, `"x"`, `{"ts":1793527200123}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var w jsonWalker
		var c collect
		ok := w.walk(data, &c)
		valid := json.Valid(data)
		if ok && !valid {
			t.Fatalf("walker accepted invalid JSON %q", data)
		}
		if ok {
			for _, v := range c.vals {
				if !json.Valid([]byte(v)) {
					t.Fatalf("span %q of %q is not a JSON value", v, data)
				}
			}
		}
	})
}
