//go:build gc && !purego

package quant

import "github.com/smolgo/smolgo/internal/cpu"

// detectLevel returns the best level the CPU runs, from the features
// internal/cpu read once at start-up: i8mm with SMMLA and SDOT (FEAT_I8MM,
// FEAT_DotProd), dotprod with SDOT, else neon (Advanced SIMD, part of every
// ARMv8-A core). GODEBUG switches them off: cpu.i8mm=off selects the
// dotprod kernels, cpu.asimddp=off the NEON ones, cpu.asimd=off the pure Go
// ones.
func detectLevel() isaLevel {
	switch {
	case cpu.ARM64.DotProd && cpu.ARM64.I8MM:
		return levelI8MM
	case cpu.ARM64.DotProd:
		return levelDotProd
	case cpu.ARM64.ASIMD:
		return levelNEON
	}
	return levelGeneric
}
