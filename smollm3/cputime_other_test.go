//go:build !unix

package smollm3

// processCPU is not measured on this platform (see cputime_unix_test.go).
func processCPU() float64 { return 0 }
