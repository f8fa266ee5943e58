package e2e

import (
	"encoding/json"

	"github.com/replay-dev/replay/pkg/hist"
)

// MarshalJSON writes st with "latency_ms": null when it saw no event: a
// stage that saw nothing has no latency, and zeros would read as a fast
// one. Read back, null leaves the zero Latency.
func (st Stage) MarshalJSON() ([]byte, error) {
	type plain Stage
	if st.Unique > 0 {
		return json.Marshal(plain(st))
	}
	return json.Marshal(struct {
		plain
		Latency *hist.Latency `json:"latency_ms"`
	}{plain: plain(st)})
}
