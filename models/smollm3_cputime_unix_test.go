//go:build unix

package models_test

import "golang.org/x/sys/unix"

// processCPU returns the CPU time (user + system) the whole process has
// used so far, or 0 where it cannot be read. The speed benchmarks report
// CPU milliseconds per token beside tokens per second: on a machine shared
// with other jobs the wall clock measures the neighbours too, the CPU time
// mostly measures us.
func processCPU() float64 {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
