//go:build !purego

package quant

import "golang.org/x/sys/cpu"

// detectLevel reads the CPU features once (golang.org/x/sys/cpu, which
// honours GODEBUG: GODEBUG=cpu.avx512f=off selects the AVX2 kernels,
// cpu.avx2=off the pure Go ones).
func detectLevel() isaLevel {
	x := cpu.X86
	switch {
	case x.HasAVX512F && x.HasAVX512BW && x.HasAVX512VL && x.HasAVX512VNNI && x.HasAVX2 && x.HasFMA && x.HasF16C:
		return levelAVX512
	case x.HasAVX2 && x.HasFMA && x.HasF16C:
		return levelAVX2
	}
	return levelGeneric
}
