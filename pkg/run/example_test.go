package run_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/replay-dev/replay/pkg/run"
)

// A Go program prepares a run once, runs a typed load on it and reads the
// summary and its verdict. Here the SUT is a loopback server answering
// 200 and the traffic two recorded pairs, looped for ten iterations.
func Example() {
	sut := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
	}))
	defer sut.Close()

	dir, err := os.MkdirTemp("", "replay-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	traffic := filepath.Join(dir, "traffic.jsonl")
	pairs := `{"http":{"req":{"method":"GET","uri":"/health","host":"api:8080"},"res":{"statusCode":200}}}
{"http":{"req":{"method":"POST","uri":"/events","host":"api:8080","body":"{\"type\":\"click\"}"},"res":{"statusCode":202}}}
`
	if err := os.WriteFile(traffic, []byte(pairs), 0o644); err != nil {
		log.Fatal(err)
	}

	o := run.DefaultOptions()
	o.File = traffic
	o.Load.Target = sut.URL // every recorded host goes here
	o.Load.VUs = 2
	o.Load.Mode = "loop"
	o.Load.Iterations = 10
	o.Thresholds = []string{"errors<1", "p99<5s"}

	ctx := context.Background()
	p, err := run.Prepare(ctx, o) // options checked, file mapped, transport built: once
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()

	s, err := p.Run(ctx, run.Pass{Load: p.Load(), Judge: true})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("requests:", s.Requests)
	fmt.Println("succeeded:", s.Succeeded)
	fmt.Println("failed:", s.Failed)
	for _, th := range s.Thresholds {
		fmt.Println(th.Threshold, "pass:", th.Pass)
	}
	fmt.Println("failed thresholds:", s.FailedThresholds())
	// Output:
	// requests: 10
	// succeeded: 10
	// failed: 0
	// errors<1 pass: true
	// p99<5s pass: true
	// failed thresholds: []
}
