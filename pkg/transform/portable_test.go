package transform

import (
	"os"
	"path/filepath"
	"testing"
)

// TestPortable: what an exporter reads of a spec is what the chain uses:
// where each entry was written, a JWT entry's algorithm and key (a
// secret file's trailing newline trimmed, a key file's PEM as it is, an
// alg that does not fit refused), a correlation's recorded value (a JSON
// path of the body, a header; nothing for another endpoint).
func TestPortable(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "secret.txt"), []byte("s3cret\n"), 0o600)
	yml := "transforms:\n  - jwt: {secret_file: secret.txt, alg: HS512}\n  - jwt: {secret: x, alg: RS256}\n"
	spec, err := Parse([]byte(yml), "t.yaml", dir)
	if err != nil {
		t.Fatal(err)
	}
	if o := spec.Origin(1); o != "t.yaml:3" {
		t.Errorf("origin %q, want t.yaml:3", o)
	}
	if alg, key, err := spec.JWTKey(0); err != nil || alg != "HS512" || string(key) != "s3cret" {
		t.Errorf("got %s %q %v, want HS512 s3cret", alg, key, err)
	}
	if _, _, err := spec.JWTKey(1); err == nil {
		t.Error("an HMAC secret with alg RS256 was taken")
	}

	f, ps := pairs(t, orderFlow()...)
	for _, tt := range []struct {
		spec CorrelateSpec
		want []string // per pair
	}{
		{CorrelateSpec{Endpoint: "POST /orders", JSON: "id"}, []string{"o-123", "", ""}},
		{CorrelateSpec{JSON: "id"}, []string{"o-123", "o-123", ""}},
		{CorrelateSpec{Header: "Location"}, []string{"/orders/o-123", "", ""}},
	} {
		find, err := RecordedValues(&tt.spec, f.Endpoints())
		if err != nil {
			t.Fatal(err)
		}
		for i := range ps {
			if got := string(find(&ps[i])); got != tt.want[i] {
				t.Errorf("%+v, pair %d: got %q, want %q", tt.spec, i+1, got, tt.want[i])
			}
		}
	}
}
