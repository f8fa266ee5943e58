package report

import "sort"

// Compare is the comparison section of the summary ("compare"):
//
//	{"compared": 1200, "matched": 1190, "match_pct": 99.17, "not_recorded": 3, "grpc_compared": 200,
//	 "endpoints": [{"name": "POST /events", "compared": 1000, "matched": 1000, "match_pct": 100}],
//	 "mismatches": [{"endpoint": "GET /users/{id}", "kind": "status", "count": 10,
//	                 "recorded": "200", "replayed": "404", "line": 17}]}
type Compare struct {
	Compared    int64   `json:"compared"`
	Matched     int64   `json:"matched"`
	MatchPct    float64 `json:"match_pct"`
	NotRecorded int64   `json:"not_recorded"` // answers whose pair has no recorded status
	// GRPCCompared counts the answers to gRPC calls among Compared: their
	// grpc-status was compared too.
	GRPCCompared int64 `json:"grpc_compared,omitempty"`
	Body         bool  `json:"body"` // bodies were compared too
	// MessagesCompared and MessagesMatched count the server messages of
	// WebSocket sessions compared with the recorded ones (--compare body),
	// apart from the answers: a message is not a request. Absent without
	// sessions.
	MessagesCompared int64           `json:"messages_compared,omitempty"`
	MessagesMatched  int64           `json:"messages_matched,omitempty"`
	Endpoints        []EndpointMatch `json:"endpoints"`
	Mismatches       []Mismatch      `json:"mismatches"` // the most frequent first, at most 20
}

// EndpointMatch is one endpoint's comparison.
type EndpointMatch struct {
	Name     string  `json:"name"`
	Compared int64   `json:"compared"`
	Matched  int64   `json:"matched"`
	MatchPct float64 `json:"match_pct"`
}

// Mismatch is one kind of difference, with an example.
type Mismatch struct {
	Endpoint string `json:"endpoint"`
	Kind     string `json:"kind"` // status, grpc-status, body, "header NAME", or a WebSocket server message's: message, "message type"
	Count    int64  `json:"count"`
	Recorded string `json:"recorded"`
	Replayed string `json:"replayed"`
	Line     int    `json:"line"` // the example's line in the traffic file
}

// Finish completes c from its counts: the match percentages, overall and
// per endpoint, and the mismatches in order, the most frequent first, at
// most 20. The comparer's result and the merge of shards' comparisons
// both end with it.
func (c *Compare) Finish() {
	c.MatchPct = pct(c.Matched, c.Compared)
	for i := range c.Endpoints {
		e := &c.Endpoints[i]
		e.MatchPct = pct(e.Matched, e.Compared)
	}
	c.Mismatches = sortMismatches(c.Mismatches)
}

// sortMismatches puts the most frequent first and keeps 20.
func sortMismatches(ms []Mismatch) []Mismatch {
	sort.Slice(ms, func(i, j int) bool {
		a, b := ms[i], ms[j]
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		return a.Endpoint+a.Kind+a.Recorded+a.Replayed < b.Endpoint+b.Kind+b.Recorded+b.Replayed
	})
	return ms[:min(len(ms), 20)]
}

func pct(n, of int64) float64 {
	if of == 0 {
		return 0
	}
	return 100 * float64(n) / float64(of)
}
