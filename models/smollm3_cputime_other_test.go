//go:build !unix

package models_test

// processCPU is not measured on this platform (see smollm3_cputime_unix_test.go).
func processCPU() float64 { return 0 }
