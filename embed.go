// Package replay carries the files that travel inside the replay binary.
package replay

import _ "embed"

// DemoTraffic is testdata/demo.jsonl: recorded traffic for the built-in demo
// SUT (pkg/demo), replayed by `replay demo` from any directory.
//
//go:embed testdata/demo.jsonl
var DemoTraffic []byte
