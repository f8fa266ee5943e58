package rawhttp

import (
	"strings"

	"github.com/replay-dev/replay/pkg/rrpair"
)

// Values are the values of the fields called name (any case) in hs, in
// order: a field a message may repeat (Sec-WebSocket-Extensions).
func Values(hs []rrpair.Field, name string) []string {
	var out []string
	for _, h := range hs {
		if strings.EqualFold(h.Name, name) {
			out = append(out, h.Value)
		}
	}
	return out
}
