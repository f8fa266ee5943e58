package capture

import "testing"

// TestRedactCredential: the credentials preset hides the secret of each
// usual credential header and keeps what is not secret (the scheme, the
// cookies' names and attributes); other headers pass as they were.
func TestRedactCredential(t *testing.T) {
	for _, c := range []struct{ name, value, want string }{
		{"Authorization", "Bearer eyJhbGciOi.x.y", "Bearer REDACTED"},
		{"authorization", "Basic dXNlcjpwYXNz", "Basic REDACTED"},
		{"Proxy-Authorization", "opaque", "REDACTED"},
		{"Cookie", "sid=s3cret; theme=dark", "sid=REDACTED; theme=REDACTED"},
		{"Cookie", "flag", "REDACTED"},
		{"Set-Cookie", "sid=s3cret; Path=/; HttpOnly", "sid=REDACTED; Path=/; HttpOnly"},
		{"X-Api-Key", "k3y", "REDACTED"},
		{"api_key", "k3y", "REDACTED"},
		{"X-Auth-Token", "t", "REDACTED"},
		{"X-Amz-Security-Token", "t", "REDACTED"},
		{"X-Client-Secret", "s", "REDACTED"},
		{"X-Password", "p", "REDACTED"},
		{"Content-Type", "application/json", "application/json"},
		{"X-Request-Id", "abc", "abc"},
	} {
		t.Run(c.name+"="+c.value, func(t *testing.T) {
			if got := RedactCredential(c.name, c.value); got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}
