// Package e2e owns what replay needs to follow events out of an
// event-driven SUT, apart from how they are received: the correlation ID
// that each stamped request carries (ID, with its send time; AppendID,
// ParseID, NewNonce), the Receiver interface that sinks report what they
// see to, and the Tracker that keeps the score of a run (requests stamped
// and accepted, events seen at each stage, end-to-end latency, loss,
// duplicates), waits for the last events (Drain) and hands back the
// summary's "e2e" section (Summary); and the exact merge of the sections
// of summaries made side by side (Merge), which report's merge calls.
//
// The sinks themselves (HTTP, Redis, NATS) are in package e2e/sink, the
// only place that links their clients: what stamps requests (transform)
// and what reports on them (report) import this package without them.
package e2e
