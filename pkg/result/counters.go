package result

import "time"

// Counters are the run's own numbers, beside the per-request Results: when
// it ran, how many VUs and iterations, and what the schedule could not keep
// (dropped, late, lag). The engine fills them; the report shows them as
// they are.
type Counters struct {
	Started    time.Time // when the run started: due times count from here
	Stopped    time.Time // when issuing stopped (limit, file done, or stop)
	Ended      time.Time // when the last VU finished
	VUs        int       // the most VUs that ran
	Iterations int64     // iterations begun
	// Interrupted reports that the run was cancelled (a signal, an abort)
	// before it ended by itself.
	Interrupted bool

	// Open models (rate, recorded).
	Scheduled  int64         // iterations that came due
	Dropped    int64         // due while no VU was free (and the pool was full)
	LagMax     time.Duration // how late the scheduler handed out an iteration, at worst
	LagMean    time.Duration // and on average
	LagP50     time.Duration // its median (µs resolution; 1 µs at least)
	LagP99     time.Duration // and 99th percentile
	OutOfOrder int           // recorded: iterations the file lists before earlier ones
	// Late counts requests begun more than LateAfter after due.
	Late int64
	// Backoffs counts the waits of VUs after a failed connect (bounded,
	// exponential, per VU) rather than retrying a refused port at once.
	Backoffs int64
}

// TransformCount is what one rewrite of the chain did over a run: the
// summary's "transforms" entries.
type TransformCount struct {
	Name string `json:"name"` // "timestamps", "jwt", "correlate json id", "cookies"...
	// Changed counts requests it changed; Failed, requests where it found
	// something it could not rewrite (a JWT it could not parse, a
	// correlated value the SUT never returned, a pair without ts).
	Changed int64 `json:"changed"`
	Failed  int64 `json:"failed"`
	// SkippedGRPC counts gRPC requests (rrpair.Pair.IsGRPC) whose body the
	// transform would have read but left alone: a gRPC body is
	// length-prefixed protobuf, not text. Its header work still applied.
	SkippedGRPC int64 `json:"skipped_grpc,omitempty"`
}
