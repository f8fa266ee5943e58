package report

import "testing"

func TestFormatMillis(t *testing.T) {
	tests := []struct {
		ms   float64
		want string
	}{
		{0, "0s"},
		{-1, "0s"},
		{0.0004, "0s"},
		{0.001, "1µs"},
		{0.21, "210µs"},
		{0.9996, "1ms"},
		{1, "1ms"},
		{1.234, "1.23ms"},
		{1.2, "1.2ms"},
		{12.34, "12.3ms"},
		{99.96, "100ms"},
		{123.4, "123ms"},
		{999.4, "999ms"},
		{999.6, "1s"},
		{3000, "3s"},
		{3010, "3.01s"},
		{12_345, "12.3s"},
		{59_949, "59.9s"},
		{59_951, "1m0s"},
		{125_400, "2m5s"},
		{3_600_000, "1h0m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := formatMillis(tt.ms); got != tt.want {
				t.Errorf("formatMillis(%v): got %q, want %q", tt.ms, got, tt.want)
			}
		})
	}
}
