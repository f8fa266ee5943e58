package schedule

import (
	"testing"
	"time"
)

// TestShareExceeds: the predicate agrees with what Share hands out. The
// shards of a load ask for more than it when their iteration limits add
// up to more, or, under the closed model, their VUs or a stage's VUs do;
// an open model's pool of VUs is not its load (the README's --rate 200/s
// run in two shards, with one VU to start the pool, asks for no more).
func TestShareExceeds(t *testing.T) {
	sec := time.Second
	for _, tt := range []struct {
		name   string
		load   Load
		shards int
		want   bool
	}{
		{"rate, the pool's one VU", Load{Model: Rate, VUs: 1, Rate: 200}, 2, false},
		{"rate stages", Load{Model: Rate, VUs: 1, Rate: 1, Stages: []Stage{{Duration: sec, Target: 1}, {Duration: sec, Target: 0}}}, 4, false},
		{"recorded", Load{Model: Recorded, VUs: 1, Speed: 1}, 3, false},
		{"rate, iterations below shards", Load{Model: Rate, VUs: 1, Rate: 200, Iterations: 1}, 2, true},
		{"closed, enough VUs", Load{Model: Closed, VUs: 4}, 2, false},
		{"closed, one VU", Load{Model: Closed, VUs: 1}, 2, true},
		{"closed, iterations below shards", Load{Model: Closed, VUs: 4, Iterations: 3}, 4, true},
		{"closed stages, enough", Load{Model: Closed, VUs: 1, Stages: []Stage{{Duration: sec, Target: 4}, {Duration: sec, Target: 2}}}, 2, false},
		{"closed stages, one below", Load{Model: Closed, VUs: 4, Stages: []Stage{{Duration: sec, Target: 4}, {Duration: sec, Target: 1}}}, 2, true},
		{"one shard", Load{Model: Closed, VUs: 1, Iterations: 1}, 1, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.load.ShareExceeds(tt.shards); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
			// What Share hands out, added up, against the whole.
			var vus int
			var its int64
			stages := make([]float64, len(tt.load.Stages))
			for i := range tt.shards {
				s := tt.load.Share(i, tt.shards)
				vus, its = vus+s.VUs, its+s.Iterations
				for k, st := range s.Stages {
					stages[k] += st.Target
				}
			}
			more := its > tt.load.Iterations
			if tt.load.Model == Closed {
				more = more || len(stages) == 0 && vus > tt.load.VUs
				for k, st := range tt.load.Stages {
					more = more || stages[k] > st.Target+1e-9
				}
			}
			if more != tt.want {
				t.Errorf("the shares ask for more: %v (%d VUs, %d iterations, stages %v), want %v", more, vus, its, stages, tt.want)
			}
		})
	}
}
