package result

import "testing"

func TestStepOf(t *testing.T) {
	ends := []int64{100, 200, 300}
	for off, want := range map[int64]int{-5: 0, 0: 0, 99: 0, 100: 1, 199: 1, 200: 2, 299: 2, 300: 2, 1000: 2} {
		if got := StepOf(ends, off); got != want {
			t.Errorf("StepOf(%d) = %d, want %d", off, got, want)
		}
	}
}
