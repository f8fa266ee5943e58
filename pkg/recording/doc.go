// Package recording owns the consumers of a run's results on its hot path:
// the async Recorder, which folds every result.Result into HDR histograms
// and counters (overall, per endpoint, per status, per second, per step of
// --stages) and builds the run's report.Summary from them (Summary, with
// Meta and the StepPlan of each step), and its live view for metrics and
// progress (Live, LiveBuckets); the Comparer, which checks live answers
// against the recorded ones (a result.Observer) and hands its
// report.Compare; and the FailureDump, which writes failed requests (a
// result.FailureSink).
//
// It sees the engine only through package result and hands what it
// measured to package report: it imports report, never the reverse, and
// imports neither the VUs nor a transport.
//
// The hot path is Recorder.Record: a send into a buffered channel, no
// lock, no allocation; one goroutine owns every histogram and folds.
// Every histogram has package hist's one geometry, so the summaries of
// shards merge exactly.
package recording
