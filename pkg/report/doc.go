// Package report owns what a run measured and how it is shown: the async
// Recorder that folds every result.Result into HDR histograms and counters, the
// plain-data Summary built from them (the "run --out" JSON contract of
// DESIGN.md), the renderers that write a Summary (JSON, text, HTML, .hgrm,
// .hlog, JUnit), thresholds, the exact merge of shard summaries, failure
// dumps, and the Comparer that checks live answers against the recorded
// ones. It sees the engine only through package result: it never imports
// the VUs or a transport.
//
// Data and rendering are kept apart: a Summary does not print itself;
// WriteJSON and WriteText render it and return their write errors.
//
// The end-to-end section (Summary.E2E) is package e2e's Summary, built by
// its Tracker; report renders it and checks thresholds on it, and its merge
// hands the sections to e2e.Merge.
//
// Every histogram in the package has the same geometry (microseconds,
// lowest 1, highest 3 600 000 000 = one hour, 3 significant digits: package
// hist), so any two of them merge exactly.
package report
