package rrpair

import "testing"

func TestValidators(t *testing.T) {
	for _, tt := range []struct {
		in           string
		token, value bool
	}{
		{"Content-Type", true, true},
		{"x-trace_id.v2~", true, true},
		{"", false, true},
		{"Bad Name", false, true},
		{"Name:", false, true},
		{"X-Trace@", false, true},
		{"Ünicode", false, true},
		{"a\r\nEvil: 1", false, false},
		{"a\nb", false, false},
		{"nul\x00", false, false},
		{"tab\tis fine in a value", false, true},
	} {
		if got := ValidToken([]byte(tt.in)); got != tt.token {
			t.Errorf("ValidToken(%q) = %v, want %v", tt.in, got, tt.token)
		}
		if got := ValidHeaderName(tt.in); got != tt.token {
			t.Errorf("ValidHeaderName(%q) = %v, want %v", tt.in, got, tt.token)
		}
		if got := ValidFieldValue([]byte(tt.in)); got != tt.value {
			t.Errorf("ValidFieldValue(%q) = %v, want %v", tt.in, got, tt.value)
		}
	}
}
