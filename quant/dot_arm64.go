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

// addArchKernels installs the assembly kernels of level into k: the mv
// kernels serve Dot and MatVec, and MatMul runs them token by token.
func addArchKernels(k *kernelSet, level isaLevel) {
	for t, kern := range armKernels[level] {
		k.dots[t] = asmDot(t, kern)
		k.matVecs[t] = asmMatVec(t, kern)
	}
}
