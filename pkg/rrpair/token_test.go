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

func TestConnectionHeader(t *testing.T) {
	for name, want := range map[string]bool{
		"Connection": true, "keep-alive": true, "Proxy-Connection": true, "TRANSFER-ENCODING": true,
		"Content-Length": false, "Connections": false, "Keep-Alivf": false, "": false, "TE": false,
	} {
		if got := ConnectionHeader(name); got != want {
			t.Errorf("ConnectionHeader(%q) = %v, want %v", name, got, want)
		}
		if got := IsConnectionHeader([]byte(name)); got != want {
			t.Errorf("IsConnectionHeader(%q) = %v, want %v", name, got, want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { IsConnectionHeader([]byte("Transfer-Encoding")) }); n != 0 {
		t.Errorf("IsConnectionHeader: %.0f allocs, want 0", n)
	}
}

func TestIsGRPC(t *testing.T) {
	for _, tc := range []struct {
		headers []Header
		want    bool
	}{
		{[]Header{{Name: []byte("Content-Type"), Value: []byte("application/grpc")}}, true},
		{[]Header{{Name: []byte("content-type"), Value: []byte("application/grpc+proto")}}, true},
		{[]Header{{Name: []byte("CONTENT-TYPE"), Value: []byte("Application/GRPC-web")}}, true},
		{[]Header{{Name: []byte("Content-Type"), Value: []byte("application/json")}}, false},
		{[]Header{{Name: []byte("Content-Type"), Value: []byte("application/grp")}}, false},
		{[]Header{{Name: []byte("X-Type"), Value: []byte("application/grpc")}}, false},
		{nil, false},
	} {
		p := Pair{Req: Request{Headers: tc.headers}}
		if got := p.IsGRPC(); got != tc.want {
			t.Errorf("IsGRPC(%q) = %v, want %v", tc.headers, got, tc.want)
		}
	}
}
