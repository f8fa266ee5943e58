// Package report owns a run's outcome as plain data and how it is shown:
// the Summary (the "run --out" JSON contract of docs/design.md) and
// ReadSummary, the exact merge of summaries made side by side (Merge),
// thresholds on a summary from one table of metrics (ParseThreshold,
// Evaluate), and the renderers of a Summary, one a file and each a
// Renderer: WriteJSON, WriteText, WriteHTML, WriteHgrm, WriteHlog,
// WriteJUnit and WriteE2EText. WriteInspect renders a traffic file's
// statistics (rrpair.Stats).
//
// A Summary is made elsewhere: from a run's results by package
// recording's Recorder, or read back from its JSON. report imports neither
// the recorder nor the VUs nor a transport.
//
// Data and rendering are kept apart: a Summary does not print itself; the
// renderers write it and return their write errors. The HTML report's
// charts are drawn by package chart.
//
// The end-to-end section (Summary.E2E) is package e2e's Summary, built by
// its Tracker; report renders it and checks thresholds on it, and its merge
// hands the sections to e2e.Merge.
//
// Every histogram in a Summary has the same geometry (microseconds,
// lowest 1, highest 3 600 000 000 = one hour, 3 significant digits: package
// hist), so any two of them merge exactly.
package report
