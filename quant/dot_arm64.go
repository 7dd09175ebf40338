//go:build gc && !purego

package quant

import "github.com/smolgo/smolgo/gguf"

// Assembly kernels (dot_neon_arm64.s), with the calling convention of the mv
// kernels in dot_asm.go. Each weight type has a NEON variant (ARMv8.0) and a
// DotProd one (SDOT).

//go:noescape
func mvQ8_0NEON(w, a []byte, nb, nrows int, out []float32) float32

//go:noescape
func mvQ8_0DotProd(w, a []byte, nb, nrows int, out []float32) float32

//go:noescape
func mvQ4KNEON(w, a []byte, nb, nrows int, out []float32) float32

//go:noescape
func mvQ4KDotProd(w, a []byte, nb, nrows int, out []float32) float32

//go:noescape
func mvQ6KNEON(w, a []byte, nb, nrows int, out []float32) float32

//go:noescape
func mvQ6KDotProd(w, a []byte, nb, nrows int, out []float32) float32

//go:noescape
func mvQ5KNEON(w, a []byte, nb, nrows int, out []float32) float32

//go:noescape
func mvQ5KDotProd(w, a []byte, nb, nrows int, out []float32) float32

// One weight row times four activation rows (dot_x4_arm64.s, written by
// gen_arm64.go), with the calling convention of the x4 kernels in dot_asm.go.

//go:noescape
func matQ8_0NEONx4(w, a []byte, astride, nb int, out *float32, ostride int)

//go:noescape
func matQ8_0DotProdx4(w, a []byte, astride, nb int, out *float32, ostride int)

//go:noescape
func matQ4KNEONx4(w, a []byte, astride, nb int, out *float32, ostride int)

//go:noescape
func matQ4KDotProdx4(w, a []byte, astride, nb int, out *float32, ostride int)

//go:noescape
func matQ5KNEONx4(w, a []byte, astride, nb int, out *float32, ostride int)

//go:noescape
func matQ5KDotProdx4(w, a []byte, astride, nb int, out *float32, ostride int)

//go:noescape
func matQ6KNEONx4(w, a []byte, astride, nb int, out *float32, ostride int)

//go:noescape
func matQ6KDotProdx4(w, a []byte, astride, nb int, out *float32, ostride int)

// armKernels lists the mv kernels of each arm64 level.
var armKernels = map[isaLevel]map[gguf.Type]mvKernel{
	levelNEON: {
		gguf.TypeQ8_0: mvQ8_0NEON,
		gguf.TypeQ4_K: mvQ4KNEON,
		gguf.TypeQ5_K: mvQ5KNEON,
		gguf.TypeQ6_K: mvQ6KNEON,
	},
	levelDotProd: {
		gguf.TypeQ8_0: mvQ8_0DotProd,
		gguf.TypeQ4_K: mvQ4KDotProd,
		gguf.TypeQ5_K: mvQ5KDotProd,
		gguf.TypeQ6_K: mvQ6KDotProd,
	},
}

// armX4Kernels lists the four-token kernels of each arm64 level.
var armX4Kernels = map[isaLevel]map[gguf.Type]x4Kernel{
	levelNEON: {
		gguf.TypeQ8_0: matQ8_0NEONx4,
		gguf.TypeQ4_K: matQ4KNEONx4,
		gguf.TypeQ5_K: matQ5KNEONx4,
		gguf.TypeQ6_K: matQ6KNEONx4,
	},
	levelDotProd: {
		gguf.TypeQ8_0: matQ8_0DotProdx4,
		gguf.TypeQ4_K: matQ4KDotProdx4,
		gguf.TypeQ5_K: matQ5KDotProdx4,
		gguf.TypeQ6_K: matQ6KDotProdx4,
	},
}

// addArchKernels installs the assembly kernels of level into k: the mv
// kernels serve Dot and MatVec, the x4 kernels MatMul four tokens at a time
// (the last ntok%4 tokens go through MatVec token by token).
func addArchKernels(k *kernelSet, level isaLevel) {
	for t, kern := range armKernels[level] {
		k.dots[t] = asmDot(t, kern)
		k.matVecs[t] = asmMatVec(t, kern)
	}
	for t, kern := range armX4Kernels[level] {
		k.matMuls[t] = matMulBy4(t, kern, k.matVecs[t])
	}
}
