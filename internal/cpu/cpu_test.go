package cpu

import (
	"testing"

	"golang.org/x/sys/cpu"
)

// The feature sets nest (a kernel level may assume the one below) and
// follow x/sys/cpu's flags.
func TestFeatureSetsNest(t *testing.T) {
	x := X86
	if x.AVX512 && !x.AVX2 || x.GFNI && !x.AVX512 || x.BF16 && !x.AVX512 {
		t.Errorf("x86 sets do not nest: %+v", x)
	}
	if x.AVX2 != (cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasF16C) {
		t.Errorf("AVX2 %v disagrees with x/sys/cpu %+v", x.AVX2, cpu.X86)
	}
	a := ARM64
	if a.DotProd && !a.ASIMD || a.I8MM && !a.ASIMD {
		t.Errorf("arm64 sets do not nest: %+v", a)
	}
	t.Logf("x86 %+v, arm64 %+v", x, a)
}
