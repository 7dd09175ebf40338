//go:build gc && !purego

package tensor

import "github.com/smolgo/smolgo/internal/cpu"

// haveExpKernels is read once at start-up: the vectorized Expf kernels of
// exp_amd64.s need AVX2 and FMA (GODEBUG=cpu.avx2=off or the purego build
// tag leaves the Go code).
var haveExpKernels = cpu.X86.AVX2 // F16C is not needed here, but every AVX2 CPU has it

// swigluAVX2 is SwiGLU's Go loop for n a multiple of 8, eight lanes at a
// time; it returns how many elements it did (it stops at the first group
// whose exponent needs Go's slow path).
//
//go:noescape
func swigluAVX2(dst, gate, up *float32, n int) int

// expShiftAVX2 sets x[i] = Expf(x[i] - m) for n a multiple of 8, like
// swigluAVX2 returning how many it did.
//
//go:noescape
func expShiftAVX2(x *float32, m float32, n int) int
