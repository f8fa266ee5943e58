package mock

import (
	"bytes"
	"encoding/json"
	"hash/maphash"
	"testing"
)

func TestRotating(t *testing.T) {
	for _, tt := range []struct {
		v    string
		want bool
	}{
		{"0b5c1e7a-1f3e-4c2e-9a55-2f1c3b7d9e10", true},
		{"01ARZ3NDEKTSV4RRFFQ69G5FAV", true},
		{"2026-11-24T08:31:07.123Z", true},
		{"2026-11-24T08:31:07+01:00", true},
		{"1764000000", true},
		{"1764000000123", true},
		{"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJlLWJ5dGVz", true},
		{"n0nc3Xk9Qz7vB2pLm4Rt", true},
		{"customer", false},
		{"cus_1", false},
		{"ada@example.com", false},
		{"12345", false},
		{"running", false},
		{"2026-11-24", false},
		{"application/json", false},
		{"abcdefghijklmnopqrstuvwxyz123", false}, // a word-like run
		{"5764000000", false},
	} {
		if got := rotating([]byte(tt.v)); got != tt.want {
			t.Errorf("rotating(%q) = %v, want %v", tt.v, got, tt.want)
		}
	}
}

// TestSignatureCanonical: query order, JSON key order and white space do
// not change a signature; a value, a method, a host's default port do
// what they should.
func TestSignatureCanonical(t *testing.T) {
	sg := newSigner(maphash.MakeSeed(), nil)
	none := newMasks()
	sum := func(method, host, uri, body string) uint64 {
		v := view{method: []byte(method), host: normHost(nil, []byte(host)), uri: []byte(uri), body: []byte(body)}
		return sg.sum(&v, none)
	}
	base := sum("POST", "api", "/a?x=1&y=2", `{"a":1,"b":{"c":[1,2],"d":"é"}}`)
	for _, tt := range []struct {
		name                    string
		method, host, uri, body string
		same                    bool
	}{
		{"query order", "POST", "api", "/a?y=2&x=1", `{"a":1,"b":{"c":[1,2],"d":"é"}}`, true},
		{"key order and space", "POST", "API:80", "/a?x=1&y=2", " {\"b\": {\"d\":\"\\u00e9\", \"c\": [1, 2]}, \"a\": 1}\n", true},
		{"array order", "POST", "api", "/a?x=1&y=2", `{"a":1,"b":{"c":[2,1],"d":"é"}}`, false},
		{"a value", "POST", "api", "/a?x=1&y=2", `{"a":2,"b":{"c":[1,2],"d":"é"}}`, false},
		{"a query value", "POST", "api", "/a?x=1&y=3", `{"a":1,"b":{"c":[1,2],"d":"é"}}`, false},
		{"method", "PUT", "api", "/a?x=1&y=2", `{"a":1,"b":{"c":[1,2],"d":"é"}}`, false},
		{"host", "POST", "api:8080", "/a?x=1&y=2", `{"a":1,"b":{"c":[1,2],"d":"é"}}`, false},
		{"a string and a number", "POST", "api", "/a?x=1&y=2", `{"a":"1","b":{"c":[1,2],"d":"é"}}`, false},
	} {
		if got := sum(tt.method, tt.host, tt.uri, tt.body) == base; got != tt.same {
			t.Errorf("%s: same signature %v, want %v", tt.name, got, tt.same)
		}
	}
}

// FuzzBodyHash: any body hashes without a fault, the same every time, and
// a JSON document hashes as its re-encoding (keys sorted, space gone,
// strings escaped otherwise) does.
func FuzzBodyHash(f *testing.F) {
	for _, seed := range []string{`{"a":1,"b":[true,null,"x"]}`, `[{"k":"\u00e9\n"},1e3,-0.5]`, `{"a":{"b":{"c":{}}}}`, "not json", "\x00\x00\x00\x00\x02\x08\x01", `{"a":1,"a":2}`, `["\ud800"]`} {
		f.Add([]byte(seed))
	}
	sg := newSigner(maphash.MakeSeed(), nil)
	f.Fuzz(func(t *testing.T, b []byte) {
		h := sg.bodyHash(b, nil)
		if again := sg.bodyHash(b, nil); again != h {
			t.Fatalf("two hashes of %q", b)
		}
		if !looksJSON(b) || !json.Valid(b) || hasDuplicateKeys(b) {
			return
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) != nil {
			return
		}
		re, err := json.Marshal(v)
		if err != nil {
			return
		}
		if sg.bodyHash(re, nil) != h {
			t.Errorf("%q and its re-encoding %q hash apart", b, re)
		}
	})
}

// hasDuplicateKeys reports whether a JSON document has an object with a
// key twice (a map keeps one of them).
func hasDuplicateKeys(b []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(b))
	var stack []map[string]bool
	expectKey := []bool{}
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		switch tok := tok.(type) {
		case json.Delim:
			switch tok {
			case '{':
				stack = append(stack, map[string]bool{})
				expectKey = append(expectKey, true)
				continue
			case '[':
				stack = append(stack, nil)
				expectKey = append(expectKey, false)
				continue
			default:
				stack, expectKey = stack[:len(stack)-1], expectKey[:len(expectKey)-1]
			}
		case string:
			if n := len(stack); n > 0 && stack[n-1] != nil && expectKey[n-1] {
				if stack[n-1][tok] {
					return true
				}
				stack[n-1][tok] = true
				expectKey[n-1] = false
				continue
			}
		}
		if n := len(stack); n > 0 && stack[n-1] != nil {
			expectKey[n-1] = true
		}
	}
}
