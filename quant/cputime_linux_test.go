package quant

import "golang.org/x/sys/unix"

// threadCPU returns the CPU time the calling OS thread has used, or 0 where
// it cannot be read. Benchmarks lock their goroutine to a thread and report
// throughput per CPU second as well, which stays meaningful on a machine
// shared with other jobs (wall-clock MB/s there measures the neighbours).
func threadCPU() float64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return float64(ts.Nano()) / 1e9
}
