//go:build gc && !purego

package tensor

import (
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/internal/cpu"
)

// havePackedKernels is read once at start-up: the packed GEMM's kernels
// (packed_avx512_amd64.s, written by gen_packed.go) need AVX-512
// (GODEBUG=cpu.avx512f=off turns them off).
var havePackedKernels = cpu.X86.AVX512

// gemm32x12F32 and gemm32x12F16 are gemm32x12Go for F32 and F16 slabs,
// bit for bit, with xstride and ostride in bytes and k at least 1.
//
//go:noescape
func gemm32x12F32(w *byte, x *float32, xstride, k int, out *float32, ostride, ntok int)

//go:noescape
func gemm32x12F16(w *byte, x *float32, xstride, k int, out *float32, ostride, ntok int)

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
	if t == gguf.TypeF16 {
		gemm32x12F16(&w[0], &x[0], 4*xs, k, &out[0], 4*os, ntok)
	} else {
		gemm32x12F32(&w[0], &x[0], 4*xs, k, &out[0], 4*os, ntok)
	}
}
