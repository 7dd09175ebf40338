//go:build unix

package main

import (
	"runtime"
	"syscall"
)

// peakRSSMB is the process's maximum resident set size in MB (getrusage).
func peakRSSMB() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	kb := float64(ru.Maxrss)
	if runtime.GOOS == "darwin" { // bytes there
		kb /= 1024
	}
	return kb / 1024
}
