package rrpair

import (
	"time"
)

// Stats summarizes a file for `replay inspect`.
type Stats struct {
	File       string         `json:"file"`
	Pairs      int            `json:"pairs"`
	Filtered   int            `json:"filtered_out"` // pairs the filter dropped
	Skipped    Skipped        `json:"skipped"`      // valid lines not replayed, by kind
	Sessions   int            `json:"sessions"`
	Iterations int            `json:"iterations"`
	First      *time.Time     `json:"first_ts,omitempty"` // earliest ts
	Last       *time.Time     `json:"last_ts,omitempty"`  // latest ts
	SpanS      float64        `json:"span_s"`             // Last − First
	WithoutTS  int            `json:"without_ts"`         // pairs with no ts
	OutOfOrder int            `json:"ts_out_of_order"`    // pairs whose ts is before the previous line's
	Methods    map[string]int `json:"methods"`
	Hosts      map[string]int `json:"hosts"`
	Endpoints  []Count        `json:"endpoints"` // the endpoint table, with pairs per row
	Status     map[int]int    `json:"status"`    // recorded status codes (0: none recorded)
	Versions   map[string]int `json:"http_versions"`
	Downgraded int            `json:"downgraded"` // recorded as HTTP/2 or 3, replayed as HTTP/1.1
	GRPC       int            `json:"grpc_pairs"` // gRPC calls (Pair.IsGRPC)
	ReqBytes   int64          `json:"request_body_bytes"`
	ResBytes   int64          `json:"response_body_bytes"`

	// SignatureLines are the pairs whose request is a Speedscale
	// signature (Options.Signatures): replay mock answers them, a run
	// skips them. UnreadSignatureKeys counts, by key, the signature keys
	// not read into the request (the mock does not answer those lines).
	SignatureLines      int            `json:"signature_lines"`
	UnreadSignatureKeys map[string]int `json:"unread_signature_keys,omitempty"`

	// WebSocket counts the recorded WebSocket sessions (upgrade pairs with
	// a "websocket" key) and their messages; nil when the file has none.
	WebSocket *WSStats `json:"websocket,omitempty"`
}

// Count is a name and how many pairs have it.
type Count struct {
	Name  string `json:"name"`
	Pairs int    `json:"pairs"`
}

// Inspect reads every pair and summarizes the file.
func (f *File) Inspect() (*Stats, error) {
	st := &Stats{
		File: f.name, Pairs: f.Len(), Filtered: f.filtered, Skipped: f.Skipped(), Sessions: f.Sessions(), Iterations: f.Iterations(),
		Methods: map[string]int{}, Hosts: map[string]int{}, Status: map[int]int{}, Versions: map[string]int{},
	}
	st.Endpoints = make([]Count, len(f.endpoints))
	for i, name := range f.endpoints {
		st.Endpoints[i].Name = name
	}
	c := f.NewCursor().WithResponses()
	var p Pair
	var prev time.Time
	for i := range f.pairs {
		if err := c.Decode(i, &p); err != nil {
			return nil, err
		}
		st.count(&p)
		if err := st.countWebSocket(&p); err != nil {
			return nil, &LineError{File: f.name, Line: p.Line, Err: asFieldError(err)}
		}
		ts, err := p.Time()
		if err != nil {
			return nil, &LineError{File: f.name, Line: p.Line, Err: fieldErr("ts", "%v", err)}
		}
		st.countTime(ts, &prev)
	}
	if st.First != nil {
		st.SpanS = st.Last.Sub(*st.First).Seconds()
	}
	return st, nil
}

// count adds a pair to the counts by method, host, endpoint, status and
// version, and to the body sizes.
func (st *Stats) count(p *Pair) {
	st.Methods[string(p.Req.Method)]++
	if p.FromSignature {
		st.countSignature(p)
	}
	if len(p.Req.Host) > 0 {
		st.Hosts[string(p.Req.Host)]++
	}
	st.Endpoints[p.Endpoint].Pairs++
	st.Status[p.Res.Status]++
	v := string(p.Version)
	if v == "" {
		v = "unrecorded"
	}
	st.Versions[v]++
	if p.IsHTTP2() {
		st.Downgraded++
	}
	if p.IsGRPC() {
		st.GRPC++
	}
	st.ReqBytes += int64(len(p.Req.Body))
	st.ResBytes += int64(len(p.Res.Body))
}

// countTime adds a pair's time (zero: none recorded) to the span and counts
// it out of order when it is before the previous pair's time, *prev.
func (st *Stats) countTime(ts time.Time, prev *time.Time) {
	if ts.IsZero() {
		st.WithoutTS++
		return
	}
	if st.First == nil || ts.Before(*st.First) {
		t := ts
		st.First = &t
	}
	if st.Last == nil || ts.After(*st.Last) {
		t := ts
		st.Last = &t
	}
	if !prev.IsZero() && ts.Before(*prev) {
		st.OutOfOrder++
	}
	*prev = ts
}

// countSignature counts a signature line, and the key it did not read.
func (st *Stats) countSignature(p *Pair) {
	st.SignatureLines++
	if p.UnreadKey == nil {
		return
	}
	if st.UnreadSignatureKeys == nil {
		st.UnreadSignatureKeys = map[string]int{}
	}
	st.UnreadSignatureKeys[string(p.UnreadKey)]++
}
