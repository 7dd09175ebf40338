//go:build gc && !purego

package quant

import "github.com/smolgo/smolgo/internal/cpu"

// detectLevel returns the best level the CPU runs, from the features
// internal/cpu read once at start-up: dotprod with SDOT (FEAT_DotProd),
// else neon (Advanced SIMD, part of every ARMv8-A core). GODEBUG switches
// them off: cpu.asimddp=off selects the NEON kernels, cpu.asimd=off the pure
// Go ones.
func detectLevel() isaLevel {
	switch {
	case cpu.ARM64.DotProd:
		return levelDotProd
	case cpu.ARM64.ASIMD:
		return levelNEON
	}
	return levelGeneric
}
