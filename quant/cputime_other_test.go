//go:build !linux

package quant

// threadCPU is not measured on this platform (see cputime_linux_test.go).
func threadCPU() float64 { return 0 }
