//go:build !amd64 || !gc || purego

package tensor

import "github.com/smolgo/smolgo/gguf"

var (
	havePackedKernels = false
	packedAVX512      = false
	packedBF16        = false
)

func roundF16sASM(dst, src []float32) int       { return 0 }
func toF16sASM(dst []uint16, src []float32) int { return 0 }

func roundF16x16(dst, src *float32, n int) { panic("tensor: no packed kernels") }

func toF16x16(dst *uint16, src *float32, n int) { panic("tensor: no packed kernels") }

func geluF16x16(dst, src *float32, table *uint16, n int) { panic("tensor: no packed kernels") }

func packedKernel(t gguf.Type, w []byte, x []float32, xs, k int, out []float32, os, ntok int) {
	gemm32x12Go(t, w, x, xs, k, out, os, ntok)
}

func packSlabASM(slab, w []byte, t gguf.Type, rb, k int) bool { return false }

func packPairsASM(slab, w []byte, rb, k int) bool { return false }

func bf16Kernel(w, x []byte, xs, kp int, out []float32, os, ntok int) {
	gemm32x12BF16Go(w, x, xs, kp, out, os, ntok)
}
