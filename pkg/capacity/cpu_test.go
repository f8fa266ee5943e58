package capacity

import (
	"runtime"
	"testing"
	"time"
)

// TestCPUMeter: the meter reads the process's own CPU time over what it
// measures, against the cores it may use: a goroutine that spins for
// 150 ms of CPU shows at least that, whatever the wall time a busy
// machine took to give it.
func TestCPUMeter(t *testing.T) {
	if _, unknown := processCPU(); unknown != "" {
		if runtime.GOOS == "linux" || runtime.GOOS == "darwin" {
			t.Fatalf("process CPU time unknown on %s: %s", runtime.GOOS, unknown)
		}
		if c := meterCPU().done(); c.Known() || c.String() != "CPU unknown" {
			t.Errorf("got %+v (%s), want unknown", c, c)
		}
		return
	}
	m := meterCPU()
	start, _ := processCPU()
	deadline := time.Now().Add(10 * time.Second)
	x := 0
	for time.Now().Before(deadline) {
		for i := range 100000 {
			x += i
		}
		if now, _ := processCPU(); now-start >= 150*time.Millisecond {
			break
		}
	}
	c := m.done()
	if !c.Known() || c.CPUS < 0.15 || c.WallS <= 0 || c.Cores != cores() {
		t.Fatalf("got %+v after spinning 150 ms of CPU (%d), want at least 0.15 CPU s on %d cores", c, x, cores())
	}
	if want := 100 * c.CPUS / (c.WallS * float64(c.Cores)); c.UsedPct < want*0.99 || c.UsedPct > want*1.01 {
		t.Errorf("used %v%%, want %v%% (CPU ÷ wall × cores)", c.UsedPct, want)
	}
	if runtime.GOOS == "linux" && (c.WaitS == nil || *c.WaitS < 0) {
		t.Errorf("run queue wait %v on linux, want it measured", c.WaitS)
	}
	if cores() < 1 || cores() > runtime.NumCPU() {
		t.Errorf("cores %d, want 1 to %d", cores(), runtime.NumCPU())
	}
}

// TestUseOf: CPU time against wall time and cores, in percent.
func TestUseOf(t *testing.T) {
	for _, tt := range []struct {
		cpu, wall time.Duration
		n         int
		want      float64
		text      string
	}{
		{time.Second, time.Second, 2, 50, "50% of 2 cores"},
		{300 * time.Millisecond, 2 * time.Second, 1, 15, "15% of 1 core"},
		{0, time.Second, 4, 0, "0% of 4 cores"},
	} {
		t.Run(tt.text, func(t *testing.T) {
			c := useOf(tt.cpu, tt.wall, tt.n)
			if c.UsedPct != tt.want || c.String() != tt.text {
				t.Errorf("got %v%% %q, want %v%% %q", c.UsedPct, c, tt.want, tt.text)
			}
		})
	}
}
