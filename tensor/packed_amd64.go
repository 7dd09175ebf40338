//go:build gc && !purego

package tensor

import (
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/internal/cpu"
)

// havePackedKernels is read once at start-up: the packed GEMM's kernels
// (packed_amd64.s, written by gen_packed.go) need AVX2, FMA and F16C, and
// take their AVX-512 forms where the CPU has AVX-512 (packedAVX512;
// GODEBUG=cpu.avx512f=off and cpu.avx2=off turn them off). Both forms give
// the same bits.
var (
	havePackedKernels = cpu.X86.AVX2
	packedAVX512      = cpu.X86.AVX512
	packedBF16        = cpu.X86.BF16 // VDPBF16PS: the BF16 float GEMM (floatgemm.go)
)

// gemm32x12F32 and gemm32x12F16 are gemm32x12Go for F32 and F16 slabs,
// bit for bit, with xstride and ostride in bytes and k at least 1.
//
//go:noescape
func gemm32x12F32(w *byte, x *float32, xstride, k int, out *float32, ostride, ntok int)

//go:noescape
func gemm32x12F16(w *byte, x *float32, xstride, k int, out *float32, ostride, ntok int)

// gemm32x12BF16 is gemm32x12BF16Go with AVX-512 BF16, bit for bit, with
// xstride and ostride in bytes and kp (column pairs) at least 1.
//
//go:noescape
func gemm32x12BF16(w, x *byte, xstride, kp int, out *float32, ostride, ntok int)

// bf16Kernel runs gemm32x12BF16 where the CPU has it, else its Go twin.
func bf16Kernel(w, x []byte, xs, kp int, out []float32, os, ntok int) {
	if !packedBF16 {
		gemm32x12BF16Go(w, x, xs, kp, out, os, ntok)
		return
	}
	_, _, _ = w[packRows*kp*4-1], x[(packTile-1)*xs+4*kp-1], out[(ntok-1)*os+packRows-1]
	gemm32x12BF16(&w[0], &x[0], xs, kp, &out[0], 4*os, ntok)
}

// gemm32x12F32AVX2 and gemm32x12F16AVX2 are the same with AVX2 only.
//
//go:noescape
func gemm32x12F32AVX2(w *byte, x *float32, xstride, k int, out *float32, ostride, ntok int)

//go:noescape
func gemm32x12F16AVX2(w *byte, x *float32, xstride, k int, out *float32, ostride, ntok int)

// roundF16x8 and toF16x8 are roundF16x16 and toF16x16 for n a positive
// multiple of 8, with AVX2 and F16C.
//
//go:noescape
func roundF16x8(dst, src *float32, n int)

//go:noescape
func toF16x8(dst *uint16, src *float32, n int)

// roundF16x16 is dst[i] = RoundF16(src[i]) for n a positive multiple of 16.
//
//go:noescape
func roundF16x16(dst, src *float32, n int)

// toF16x16 is dst[i] = ToF16(src[i]) for n a positive multiple of 16.
//
//go:noescape
func toF16x16(dst *uint16, src *float32, n int)

// geluF16x16 is GELUs for n a positive multiple of 16, table being
// geluTablePadded's.
//
//go:noescape
func geluF16x16(dst, src *float32, table *uint16, n int)

// packedKernel runs the micro-kernel on one slab and tile (see
// gemm32x12Go); x holds 12 rows of k values xs floats apart, out ntok rows
// of os.
func packedKernel(t gguf.Type, w []byte, x []float32, xs, k int, out []float32, os, ntok int) {
	if !havePackedKernels {
		gemm32x12Go(t, w, x, xs, k, out, os, ntok)
		return
	}
	_, _, _ = w[packRows*k*elemBytes(t)-1], x[(packTile-1)*xs+k-1], out[(ntok-1)*os+packRows-1]
	switch {
	case t == gguf.TypeF16 && packedAVX512:
		gemm32x12F16(&w[0], &x[0], 4*xs, k, &out[0], 4*os, ntok)
	case t == gguf.TypeF16:
		gemm32x12F16AVX2(&w[0], &x[0], 4*xs, k, &out[0], 4*os, ntok)
	case packedAVX512:
		gemm32x12F32(&w[0], &x[0], 4*xs, k, &out[0], 4*os, ntok)
	default:
		gemm32x12F32AVX2(&w[0], &x[0], 4*xs, k, &out[0], 4*os, ntok)
	}
}

// roundF16sASM and toF16sASM do the leading elements of roundF16s and
// ToF16s that a vector kernel takes and return how many.
func roundF16sASM(dst, src []float32) int {
	if packedAVX512 {
		if n := len(src) &^ 15; n > 0 {
			roundF16x16(&dst[0], &src[0], n)
			return n
		}
		return 0
	}
	if n := len(src) &^ 7; n > 0 {
		roundF16x8(&dst[0], &src[0], n)
		return n
	}
	return 0
}

func toF16sASM(dst []uint16, src []float32) int {
	if packedAVX512 {
		if n := len(src) &^ 15; n > 0 {
			toF16x16(&dst[0], &src[0], n)
			return n
		}
		return 0
	}
	if n := len(src) &^ 7; n > 0 {
		toF16x8(&dst[0], &src[0], n)
		return n
	}
	return 0
}
