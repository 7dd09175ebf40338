//go:build unix

package main

import (
	"runtime"
	"syscall"
	"time"
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

// cpuSeconds is the CPU time (user and system, all threads) the process has
// used. Unlike wall time it does not grow when a neighbour on a shared host
// takes the cores away (time stolen from a VM is not charged to it).
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
