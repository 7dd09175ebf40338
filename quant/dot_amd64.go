//go:build !purego

package quant

import "github.com/smolgo/smolgo/gguf"

// Assembly kernels (dot_avx512_amd64.s, dot_avx2_amd64.s). Each takes whole
// blocks: nb weight blocks in w and nb activation blocks in a. The Go
// wrappers below check the slice lengths once, so the assembly never reads
// outside them.

//go:noescape
func dotQ4KAVX512(w, a []byte, nb int) float32

//go:noescape
func dotQ6KAVX512(w, a []byte, nb int) float32

//go:noescape
func dotQ8_0AVX512(w, a []byte, nb int) float32

//go:noescape
func dotQ4KAVX2(w, a []byte, nb int) float32

//go:noescape
func dotQ6KAVX2(w, a []byte, nb int) float32

//go:noescape
func dotQ8_0AVX2(w, a []byte, nb int) float32

// addArchKernels installs the assembly kernels of level into k.
func addArchKernels(k *kernelSet, level isaLevel) {
	if level >= levelAVX2 {
		k.dots[gguf.TypeQ4_K] = blockDot(gguf.TypeQ4_K, dotQ4KAVX2)
		k.dots[gguf.TypeQ6_K] = blockDot(gguf.TypeQ6_K, dotQ6KAVX2)
		k.dots[gguf.TypeQ8_0] = blockDot(gguf.TypeQ8_0, dotQ8_0AVX2)
	}
	if level >= levelAVX512 {
		k.dots[gguf.TypeQ4_K] = blockDot(gguf.TypeQ4_K, dotQ4KAVX512)
		k.dots[gguf.TypeQ6_K] = blockDot(gguf.TypeQ6_K, dotQ6KAVX512)
		k.dots[gguf.TypeQ8_0] = blockDot(gguf.TypeQ8_0, dotQ8_0AVX512)
	}
}

// blockDot wraps an assembly kernel over whole blocks as a DotFunc.
func blockDot(t gguf.Type, kernel func(w, a []byte, nb int) float32) DotFunc {
	vt, _ := VecDotType(t)
	bs, wb, ab := t.BlockSize(), t.BlockBytes(), vt.BlockBytes()
	return func(n int, w, a []byte) float32 {
		nb := n / bs
		if nb <= 0 {
			return 0
		}
		return kernel(w[:nb*wb], a[:nb*ab], nb)
	}
}
