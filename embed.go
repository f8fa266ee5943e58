// Package replay carries the files that travel inside the replay binary.
package replay

import _ "embed"

// DemoTraffic is testdata/demo.jsonl: recorded traffic for the built-in demo
// SUT (pkg/demo), replayed by `replay demo` from any directory.
//
//go:embed testdata/demo.jsonl
var DemoTraffic []byte

// DemoTransforms is testdata/demo-transforms.yaml: the transforms that make
// DemoTraffic valid again at replay time (fresh timestamps, a re-signed
// token, order ids learned from the live POST /orders).
//
//go:embed testdata/demo-transforms.yaml
var DemoTransforms []byte
