package transport

import (
	"strings"
	"testing"
)

func TestAnswerOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    AnswerOptions
		want string
	}{
		{"negative max body", AnswerOptions{MaxBody: -1}, "--max-answer-body: want a number of bytes ≥ 1"},
		{"head buffer too small", AnswerOptions{MaxHeaderBytes: 100}, "--max-header-bytes: want at least 1024 bytes"},
		{"negative head buffer", AnswerOptions{MaxHeaderBytes: -1}, "--max-header-bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.o.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
	// Validate fills no default; WithDefaults fills only what is zero.
	o := AnswerOptions{}
	if err := o.Validate(); err != nil || o.MaxBody != 0 || o.MaxHeaderBytes != 0 {
		t.Errorf("Validate: %v, %+v; want nil and nothing filled", err, o)
	}
	if d := o.WithDefaults(); d.MaxBody != DefaultMaxBody || d.MaxHeaderBytes != DefaultMaxHeaderBytes {
		t.Errorf("WithDefaults: %+v, want the defaults", d)
	}
	if d := (AnswerOptions{MaxBody: 10, MaxHeaderBytes: 2048, DiscardBodies: true}).WithDefaults(); d.MaxBody != 10 || d.MaxHeaderBytes != 2048 || !d.DiscardBodies {
		t.Errorf("WithDefaults: %+v, want the options given kept", d)
	}
}
