// Package cpu reads, once at start-up, the CPU features that the kernels of
// packages quant and tensor dispatch on, so that every kernel package sees
// the same answer.
//
// The features come from golang.org/x/sys/cpu, which honours the Go
// runtime's GODEBUG switches: GODEBUG=cpu.avx512f=off runs the AVX2 kernels
// on an AVX-512 machine, cpu.avx2=off the pure-Go ones. The purego build
// tag removes the assembly altogether. Tests that want a particular kernel
// variant ask their package for it by name instead of changing these
// values.
package cpu

import "golang.org/x/sys/cpu"

// X86 is what the amd64 kernels need, read once.
var X86 = readX86()

// X86Features are the x86-64 feature sets the kernels use.
type X86Features struct {
	// AVX2 is AVX2 with FMA and F16C: the AVX2 kernels need all three.
	AVX2 bool
	// AVX512 is AVX-512 F, BW and VL with VNNI, on top of AVX2: the
	// AVX-512 kernels need all of them.
	AVX512 bool
	// GFNI is AVX-512 GFNI (Galois-field byte ops that unpack 4-bit
	// quants), on top of AVX512.
	GFNI bool
	// BF16 is AVX-512 BF16 (VDPBF16PS: pairs of bfloat16 products summed
	// into float32), on top of AVX512.
	BF16 bool
}

func readX86() X86Features {
	x := cpu.X86
	var f X86Features
	f.AVX2 = x.HasAVX2 && x.HasFMA && x.HasF16C
	f.AVX512 = f.AVX2 && x.HasAVX512F && x.HasAVX512BW && x.HasAVX512VL && x.HasAVX512VNNI
	f.GFNI = f.AVX512 && x.HasAVX512GFNI
	f.BF16 = f.AVX512 && x.HasAVX512BF16
	return f
}

// ARM64 is what the arm64 kernels need, read once.
var ARM64 = readARM64()

// ARM64Features are the arm64 feature sets the kernels use.
type ARM64Features struct {
	// ASIMD is Advanced SIMD (NEON), part of every ARMv8-A core.
	ASIMD bool
	// DotProd is SDOT/UDOT (Apple M1 and later, Graviton 2 and later).
	DotProd bool
	// I8MM is SMMLA and friends (Apple M2 and later, Graviton 3 and later).
	I8MM bool
}

func readARM64() ARM64Features {
	a := cpu.ARM64
	return ARM64Features{ASIMD: a.HasASIMD, DotProd: a.HasASIMD && a.HasASIMDDP, I8MM: a.HasASIMD && a.HasI8MM}
}
