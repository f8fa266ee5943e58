package capacity

import (
	"fmt"
	"runtime"
	"time"
)

// GeneratorCPU is the generator's own CPU use over a hold: the process's
// CPU time (user and system, getrusage) against the cores it may use over
// the hold's wall time, as
//
//	{"cpu_s": 0.31, "wall_s": 1.04, "cores": 2, "used_pct": 14.9}
//
// or, where the system does not say, {"used_pct": 0, "unknown": "no
// process CPU time on windows"}.
type GeneratorCPU struct {
	CPUS  float64 `json:"cpu_s,omitempty"`  // CPU seconds the process used over the hold
	WallS float64 `json:"wall_s,omitempty"` // the hold's wall time, seconds
	Cores int     `json:"cores,omitempty"`  // the cores the process may use: GOMAXPROCS, at most the CPUs it may run on
	// UsedPct is CPUS ÷ (WallS × Cores), in percent: 100 is every core
	// it may use busy the whole hold.
	UsedPct float64 `json:"used_pct"`
	// WaitS is how long its threads waited on a run queue for a CPU over
	// the hold, seconds (Linux: /proc/self/task/*/schedstat): ready to
	// run, given none by a machine busy with other work. nil where the
	// kernel does not say.
	WaitS *float64 `json:"runqueue_wait_s,omitempty"`
	// Unknown says why the CPU use is not known ("" when it is).
	Unknown string `json:"unknown,omitempty"`
}

// Starved says the machine kept the generator from the CPU it wanted:
// its threads waited for a CPU at least as long as they ran, and for at
// least a tenth of the hold.
func (c GeneratorCPU) Starved() bool {
	return c.Known() && c.WaitS != nil && *c.WaitS >= c.CPUS && *c.WaitS >= c.WallS/10
}

// Short says the generator lacked CPU over the hold: its own use at
// CPUBusyPct of its cores or more, or Starved.
func (c GeneratorCPU) Short() bool { return c.Known() && (c.UsedPct >= CPUBusyPct || c.Starved()) }

// Detail writes the use with the run queue's wait: "5% of 2 cores, its
// threads waiting 2.1 s for a CPU against 0.3 s run".
func (c GeneratorCPU) Detail() string {
	if !c.Known() || c.WaitS == nil {
		return c.String()
	}
	return fmt.Sprintf("%s, its threads waiting %.2f s for a CPU against %.2f s run", c, *c.WaitS, c.CPUS)
}

// Known says the CPU use was measured.
func (c GeneratorCPU) Known() bool { return c.Unknown == "" && c.Cores > 0 }

// String writes the use as the reports show it: "15% of 2 cores", or
// "CPU unknown".
func (c GeneratorCPU) String() string {
	if !c.Known() {
		return "CPU unknown"
	}
	unit := "cores"
	if c.Cores == 1 {
		unit = "core"
	}
	return fmt.Sprintf("%.0f%% of %d %s", c.UsedPct, c.Cores, unit)
}

// cores is the number of cores the process may use: GOMAXPROCS, which
// the runtime sets from the CPUs the process may run on (its affinity,
// a container's quota), and never more than those.
func cores() int { return max(1, min(runtime.GOMAXPROCS(0), runtime.NumCPU())) }

// cpuMeter measures the process's CPU use from its start to done.
type cpuMeter struct {
	began   time.Time
	cpu     time.Duration
	unknown string
	wait    time.Duration
	waitOK  bool
}

// meterCPU starts measuring.
func meterCPU() cpuMeter {
	cpu, unknown := processCPU()
	wait, ok := runQueueWait()
	return cpuMeter{began: time.Now(), cpu: cpu, unknown: unknown, wait: wait, waitOK: ok}
}

// done is the CPU use since the meter started.
func (m cpuMeter) done() GeneratorCPU {
	wall := time.Since(m.began)
	cpu, unknown := processCPU()
	if m.unknown != "" || unknown != "" {
		return GeneratorCPU{Unknown: m.unknown + unknown}
	}
	c := useOf(cpu-m.cpu, wall, cores())
	if wait, ok := runQueueWait(); ok && m.waitOK {
		w := round3(max(0, wait-m.wait).Seconds()) // a thread gone takes its wait with it
		c.WaitS = &w
	}
	return c
}

// useOf is cpu used over wall by a process that may use n cores.
func useOf(cpu, wall time.Duration, n int) GeneratorCPU {
	c := GeneratorCPU{CPUS: round3(cpu.Seconds()), WallS: round3(wall.Seconds()), Cores: n}
	if wall > 0 && n > 0 {
		c.UsedPct = round3(100 * cpu.Seconds() / (wall.Seconds() * float64(n)))
	}
	return c
}

// round3 rounds to 3 decimals, for the JSON.
func round3(v float64) float64 { return float64(int64(v*1000+0.5)) / 1000 }
