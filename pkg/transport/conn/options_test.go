package conn

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name string
		o    Options
		want string
	}{
		{"bad target scheme", Options{Target: "ftp://x"}, "--target: want an http or https URL"},
		{"target with path", Options{Target: "http://x/api"}, "--target: want only scheme://host[:port]"},
		{"target not a URL", Options{Target: "127.0.0.1:8080"}, "--target"},
		{"keep-host without target", Options{KeepHost: true}, "--keep-host"},
		{"bad host-map URL", Options{HostMap: map[string]string{"a": "b"}}, "--host-map a=b: want scheme://host[:port]"},
		{"negative timeout", Options{Timeout: -1}, "--timeout"},
		{"negative max-conn-duration", Options{MaxConnDuration: -1}, "--max-conn-duration"},
		{"cert without key", Options{Cert: "c.pem"}, "--cert and --key: give both"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.o.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error mentioning %q", err, tt.want)
			}
			if _, nerr := New(tt.o); nerr == nil || nerr.Error() != err.Error() {
				t.Errorf("New: got %v, want Validate's error", nerr)
			}
		})
	}
	// Validate is pure: it reads no file (a CA that does not exist is
	// New's to find) and fills no default.
	o := Options{Target: "http://127.0.0.1:1", CA: filepath.Join(t.TempDir(), "nope.pem")}
	if err := o.Validate(); err != nil || o.Timeout != 0 {
		t.Errorf("Validate: %v, timeout %v; want nil and nothing filled", err, o.Timeout)
	}
	if _, err := New(o); err == nil || !strings.Contains(err.Error(), "--ca") {
		t.Errorf("New with a missing --ca: got %v", err)
	}
	d, err := New(Options{})
	if err != nil || d.Options().Timeout != DefaultTimeout {
		t.Errorf("New(Options{}): %+v, %v; want the defaults filled", d.Options(), err)
	}
}
