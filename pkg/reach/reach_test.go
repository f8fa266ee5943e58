package reach

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestAbsoluteForm(t *testing.T) {
	for _, tt := range []struct {
		name, target              string
		scheme, authority, origin string
		ok                        bool
	}{
		{"path and query", "http://api.internal:8080/orders?a=1", "http", "api.internal:8080", "/orders?a=1", true},
		{"default port dropped", "https://api.internal:443/x", "https", "api.internal", "/x", true},
		{"IPv6 default port", "http://[::1]:80/", "http", "[::1]", "/", true},
		{"no path", "HTTP://host", "http", "host", "/", true},
		{"query only", "http://host?q", "http", "host", "/?q", true},
		{"origin-form", "/orders", "", "", "", false},
		{"other scheme", "ftp://host/x", "", "", "", false},
		{"user info", "http://u@host/x", "", "", "", false},
		{"empty authority", "http:///x", "", "", "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			scheme, authority, origin, ok := AbsoluteForm(tt.target)
			if scheme != tt.scheme || authority != tt.authority || origin != tt.origin || ok != tt.ok {
				t.Errorf("got %q %q %q %v, want %q %q %q %v", scheme, authority, origin, ok, tt.scheme, tt.authority, tt.origin, tt.ok)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		name string
		o    Options
		want string
	}{
		{"none", Options{}, ""},
		{"cert without key", Options{Cert: "c.pem"}, "--client-cert and --client-key: give both"},
		{"missing CA", Options{CA: filepath.Join(dir, "none.pem")}, "--upstream-ca: open"},
		{"negative timeout", Options{Timeout: -time.Second}, "--upstream-timeout: want a positive duration, got -1s"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.o.Check()
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("got %v, want %q", err, tt.want)
			}
		})
	}
	if got := (&Options{}).ConnOptions().Timeout; got <= 0 {
		t.Errorf("ConnOptions().Timeout %v, want the connection layer's default", got)
	}
}
