package capacity_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/replay-dev/replay/pkg/capacity"
)

// The search decides from the verdict of each hold, so it can be run
// over any step function. Here the step is a model of a SUT that keeps
// up to 430 iterations a second and fails above; Find holds each rate on
// a real prepared run instead (capacity.Options.Run).
func ExampleSearch_Run() {
	sut := func(_ context.Context, phase capacity.Phase, rate float64) (capacity.Step, error) {
		if rate > 430 {
			return capacity.Step{Verdict: capacity.Fail, Achieved: 430, Reason: "p99<200ms (measured 900 ms)"}, nil
		}
		return capacity.Step{Verdict: capacity.Pass, Achieved: rate}, nil
	}
	s := capacity.Search{StartRate: 100, StepFactor: 2, Precision: 0.05}
	res, err := s.Run(context.Background(), sut)
	if err != nil {
		log.Fatal(err)
	}
	for _, st := range res.Steps {
		fmt.Printf("%-7s %4.0f/s %s\n", st.Phase, st.Target, st.Verdict)
	}
	fmt.Println(res.Outcome, res.Sustainable, "iterations/s; failed at", res.FailedAt)
	// Output:
	// ramp     100/s pass
	// ramp     200/s pass
	// ramp     400/s pass
	// ramp     800/s fail
	// narrow   600/s fail
	// narrow   500/s fail
	// narrow   450/s fail
	// narrow   425/s pass
	// narrow   438/s fail
	// confirm  425/s pass
	// found 425 iterations/s; failed at 438
}

// Find is the search on a real SUT: the run each step replays is
// prepared once (run.Prepare) and each rate held on it, a warm-up then a
// judged hold. (Compiled, not run: its rates depend on the machine.)
func ExampleFind() {
	o := capacity.DefaultOptions()
	o.Run.File = "traffic.jsonl"
	o.Run.Load.Target = "http://127.0.0.1:8080"
	o.Thresholds = []string{"p99<200ms", "errors<1%"}
	o.StartRate = "100/s"
	o.Warmup, o.Hold = 5*time.Second, 20*time.Second
	res, err := capacity.Find(context.Background(), o)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Headline())
	if err := capacity.WriteText(os.Stdout, res); err != nil {
		log.Fatal(err)
	}
}
