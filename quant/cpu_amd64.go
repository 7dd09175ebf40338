//go:build gc && !purego

package quant

import "github.com/smolgo/smolgo/internal/cpu"

// detectLevel returns the best level the CPU runs, from the features
// internal/cpu read once at start-up (GODEBUG=cpu.avx512f=off selects the
// AVX2 kernels, cpu.avx2=off the pure Go ones).
func detectLevel() isaLevel {
	switch {
	case cpu.X86.AVX512:
		return levelAVX512
	case cpu.X86.AVX2:
		return levelAVX2
	}
	return levelGeneric
}
