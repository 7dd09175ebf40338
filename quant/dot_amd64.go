//go:build gc && !purego

package quant

import (
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/internal/cpu"
)

// Assembly kernels (dot_avx512_amd64.s, dot_avx2_amd64.s). The mv kernels
// multiply nrows consecutive weight rows of nb blocks each by one activation
// row of nb blocks (out[r] = row r · a), keeping their constants in
// registers across rows, and return the last row's result (with out nil and
// nrows 1 they compute one dot product and store nothing, so a DotFunc
// allocates nothing); the x4 kernels multiply one weight row by four
// activation rows astride bytes apart, storing the four results ostride
// bytes apart from out. The Go wrappers below check the
// slice lengths, so the assembly never reads or writes outside them, and
// never call it with nb or nrows zero.

//go:noescape
func mvQ4KAVX512(w, a []byte, nb, nrows int, out []float32) float32

//go:noescape
func mvQ4KAVX512GFNI(w, a []byte, nb, nrows int, out []float32) float32

//go:noescape
func mvQ6KAVX512(w, a []byte, nb, nrows int, out []float32) float32

//go:noescape
func mvQ6KAVX512GFNI(w, a []byte, nb, nrows int, out []float32) float32

//go:noescape
func mvQ5KAVX512(w, a []byte, nb, nrows int, out []float32) float32

//go:noescape
func mvF16AVX512(w, a []byte, nb, nrows int, out []float32) float32

//go:noescape
func matF16F32AVX512x4(w []byte, a []float32, astride, nb int, out *float32, ostride int)

//go:noescape
func cvtF16F32AVX512(src []byte, dst []float32, n16 int)

//go:noescape
func matBF16F32AVX512x4(w []byte, a []float32, astride, nb int, out *float32, ostride int)

//go:noescape
func cvtBF16F32AVX512(src []byte, dst []float32, n16 int)

//go:noescape
func mvBF16AVX512(w, a []byte, nb, nrows int, out []float32) float32

//go:noescape
func mvF32AVX512(w, a []byte, nb, nrows int, out []float32) float32

//go:noescape
func mvF32AVX2(w, a []byte, nb, nrows int, out []float32) float32

//go:noescape
func mvQ3KAVX512(w, a []byte, nb, nrows int, out []float32) float32

//go:noescape
func mvQ2KAVX512(w, a []byte, nb, nrows int, out []float32) float32

//go:noescape
func mvQ4KAVX2(w, a []byte, nb, nrows int, out []float32) float32

//go:noescape
func mvQ6KAVX2(w, a []byte, nb, nrows int, out []float32) float32

//go:noescape
func mvQ8_0AVX2(w, a []byte, nb, nrows int, out []float32) float32

//go:noescape
func mvQ5KAVX2(w, a []byte, nb, nrows int, out []float32) float32

//go:noescape
func mvF16AVX2(w, a []byte, nb, nrows int, out []float32) float32

//go:noescape
func mvBF16AVX2(w, a []byte, nb, nrows int, out []float32) float32

//go:noescape
func mvQ2KAVX2(w, a []byte, nb, nrows int, out []float32) float32

//go:noescape
func mvQ3KAVX2(w, a []byte, nb, nrows int, out []float32) float32

//go:noescape
func matQ4KAVX512x4(w, a []byte, astride, nb int, out *float32, ostride int)

//go:noescape
func matQ5KAVX512x4(w, a []byte, astride, nb int, out *float32, ostride int)

//go:noescape
func matQ6KAVX512x4(w, a []byte, astride, nb int, out *float32, ostride int)

//go:noescape
func matQ4KAVX2x4(w, a []byte, astride, nb int, out *float32, ostride int)

//go:noescape
func matQ6KAVX2x4(w, a []byte, astride, nb int, out *float32, ostride int)

//go:noescape
func matQ5KAVX2x4(w, a []byte, astride, nb int, out *float32, ostride int)

//go:noescape
func matQ8_0AVX2x4(w, a []byte, astride, nb int, out *float32, ostride int)

//go:noescape
func matQ4KAVX2x2(w, a []byte, astride, nb int, out *float32, ostride int)

//go:noescape
func matQ5KAVX2x2(w, a []byte, astride, nb int, out *float32, ostride int)

//go:noescape
func matQ6KAVX2x2(w, a []byte, astride, nb int, out *float32, ostride int)

//go:noescape
func matQ8_0AVX2x2(w, a []byte, astride, nb int, out *float32, ostride int)

// hasGFNI reports whether the AVX-512 level may use the GFNI variants of
// its kernels (VGF2P8AFFINEQB unpacks nibbles in one instruction). It reads
// the features golang.org/x/sys/cpu detected once at start-up
// (GODEBUG=cpu.avx512gfni=off turns it off).
func hasGFNI() bool { return cpu.X86.GFNI }

// addArchKernels installs the assembly kernels of level into k.
func addArchKernels(k *kernelSet, level isaLevel) {
	mv := map[gguf.Type]mvKernel{}
	x4 := map[gguf.Type]x4Kernel{}
	x2 := map[gguf.Type]x4Kernel{} // two tokens; each must give its mv kernel's bits
	if level >= levelAVX2 {
		mv[gguf.TypeQ4_K] = mvQ4KAVX2
		mv[gguf.TypeQ6_K] = mvQ6KAVX2
		mv[gguf.TypeQ8_0] = mvQ8_0AVX2
		mv[gguf.TypeQ5_K] = mvQ5KAVX2
		mv[gguf.TypeF16] = mvF16AVX2
		mv[gguf.TypeBF16] = mvBF16AVX2
		mv[gguf.TypeF32] = mvF32AVX2
		mv[gguf.TypeQ2_K] = mvQ2KAVX2
		mv[gguf.TypeQ3_K] = mvQ3KAVX2
		x4[gguf.TypeQ4_K] = matQ4KAVX2x4
		x4[gguf.TypeQ6_K] = matQ6KAVX2x4
		x4[gguf.TypeQ5_K] = matQ5KAVX2x4
		x4[gguf.TypeQ8_0] = matQ8_0AVX2x4
		x2[gguf.TypeQ4_K] = matQ4KAVX2x2
		x2[gguf.TypeQ6_K] = matQ6KAVX2x2
		x2[gguf.TypeQ5_K] = matQ5KAVX2x2
		x2[gguf.TypeQ8_0] = matQ8_0AVX2x2
	}
	if level >= levelAVX512 {
		mv[gguf.TypeQ4_K] = mvQ4KAVX512
		mv[gguf.TypeQ6_K] = mvQ6KAVX512
		if hasGFNI() {
			mv[gguf.TypeQ4_K] = mvQ4KAVX512GFNI
			mv[gguf.TypeQ6_K] = mvQ6KAVX512GFNI
		}
		mv[gguf.TypeQ5_K] = mvQ5KAVX512
		mv[gguf.TypeF16] = mvF16AVX512
		mv[gguf.TypeBF16] = mvBF16AVX512
		mv[gguf.TypeF32] = mvF32AVX512
		mv[gguf.TypeQ3_K] = mvQ3KAVX512
		mv[gguf.TypeQ2_K] = mvQ2KAVX512
		x4[gguf.TypeQ4_K] = matQ4KAVX512x4
		x4[gguf.TypeQ6_K] = matQ6KAVX512x4
		x4[gguf.TypeQ5_K] = matQ5KAVX512x4
		clear(x2) // the AVX2 pairs would not match the AVX-512 mv kernels' bits
	}
	for t, kern := range mv {
		k.dots[t] = asmDot(t, kern)
		k.matVecs[t] = asmMatVec(t, kern)
	}
	for t, kern := range x4 {
		k.matMuls[t] = matMulBy4(t, kern, x2[t], k.matVecs[t])
	}
	if level >= levelAVX512 {
		// Prefill batches: 16 rows × 8 tokens from unpacked panels (gemm_amd64.go).
		k.matMuls[gguf.TypeQ4_K] = matMulGEMM(gguf.TypeQ4_K, gemmPackQ4K, gemmQ4KAVX512x8, gemmQ4KAVX512x4, k.matMuls[gguf.TypeQ4_K])
		k.matMuls[gguf.TypeQ5_K] = matMulGEMM(gguf.TypeQ5_K, gemmPackQ5K, gemmQ4KAVX512x8, gemmQ4KAVX512x4, k.matMuls[gguf.TypeQ5_K])
		k.matMuls[gguf.TypeQ6_K] = matMulGEMM(gguf.TypeQ6_K, gemmPackQ6K, gemmQ6KAVX512x8, gemmQ6KAVX512x4, k.matMuls[gguf.TypeQ6_K])
		// f16 and bf16 batches: the activations widened once (matf16_amd64.go).
		k.matMuls[gguf.TypeF16] = matMulWide(matMulByRows(gguf.TypeF16, k.matVecs[gguf.TypeF16]), matF16F32AVX512x4, cvtF16F32AVX512)
		k.matMuls[gguf.TypeBF16] = matMulWide(matMulByRows(gguf.TypeBF16, k.matVecs[gguf.TypeBF16]), matBF16F32AVX512x4, cvtBF16F32AVX512)
	}
	addLegacyKernels(k, level) // q4_0, q4_1, q5_0, q5_1 and, with AVX-512, q8_0: dot_legacy_amd64.go
	addInterleavedKernels(k, level)
}
