//go:build gc && !purego

package quant

import "github.com/smolgo/smolgo/gguf"

//go:generate go run gen_interleave.go

// The kernels of interleave_avx2_amd64.s (written by gen_interleave.go):
// one group of 8 interleaved rows (q4_K or q6_K) times 4, 3, 2 or 1
// activation rows (see interleave.go).

//go:noescape
func q4Kx8AVX2x4(w, a []byte, astride, nb int, out *float32, ostride int)

//go:noescape
func q4Kx8AVX2x3(w, a []byte, astride, nb int, out *float32, ostride int)

//go:noescape
func q4Kx8AVX2x2(w, a []byte, astride, nb int, out *float32, ostride int)

//go:noescape
func q4Kx8AVX2x1(w, a []byte, astride, nb int, out *float32, ostride int)

//go:noescape
func q6Kx8AVX2x4(w, a []byte, astride, nb int, out *float32, ostride int)

//go:noescape
func q6Kx8AVX2x3(w, a []byte, astride, nb int, out *float32, ostride int)

//go:noescape
func q6Kx8AVX2x2(w, a []byte, astride, nb int, out *float32, ostride int)

//go:noescape
func q6Kx8AVX2x1(w, a []byte, astride, nb int, out *float32, ostride int)

// addInterleavedKernels installs the interleaved products of level into k:
// on AVX2 and AVX-512 CPUs alike the kernels above for the batches of a
// decode step, and on AVX-512 the prefill GEMM (gemm_amd64.go) for batches
// of gemmMinTokens or more, its panels unpacked from the interleaved
// weights (gemm_interleaved_amd64.go), so a model keeps one copy of them.
func addInterleavedKernels(k *kernelSet, level isaLevel) {
	if level < levelAVX2 {
		return
	}
	q4 := interleavedMatMul(gguf.TypeQ4_K, [4]x4Kernel{q4Kx8AVX2x1, q4Kx8AVX2x2, q4Kx8AVX2x3, q4Kx8AVX2x4})
	q6 := interleavedMatMul(gguf.TypeQ6_K, [4]x4Kernel{q6Kx8AVX2x1, q6Kx8AVX2x2, q6Kx8AVX2x3, q6Kx8AVX2x4})
	if level >= levelAVX512 {
		q4 = matMulGEMM(gguf.TypeQ4_K, gemmPackQ4KIlv, gemmQ4KAVX512x8, gemmQ4KAVX512x4, q4)
		q6 = matMulGEMM(gguf.TypeQ6_K, gemmPackQ6KIlv, gemmQ6KAVX512x8, gemmQ6KAVX512x4, q6)
	}
	k.interleaved[gguf.TypeQ4_K] = q4
	k.interleaved[gguf.TypeQ6_K] = q6
}

// interleavedMatMul builds the MatMulFunc over interleaved rows of type t
// from its kernels for 1, 2, 3 and 4 tokens (kernels[k-1] takes k): groups
// of 8 rows, each with the tokens four at a time and the rest in one call.
// Every kernel gives a token the same bits, so a token's results do not
// depend on how many share the call.
func interleavedMatMul(t gguf.Type, kernels [4]x4Kernel) MatMulFunc {
	bb := t.BlockBytes()
	return func(n int, w []byte, nrows int, a []byte, ntok int, out []float32, ldo int) {
		nb := n / 256
		if nrows <= 0 || ntok <= 0 {
			return
		}
		if nb <= 0 || n%256 != 0 || nrows%interleaveGroup != 0 {
			panic("quant: interleaved product of a bad shape")
		}
		gb, arb := nb*bb*interleaveGroup, nb*292
		_, _ = w[nrows/interleaveGroup*gb-1], a[ntok*arb-1]
		_ = out[(ntok-1)*ldo+nrows-1]
		for g := 0; g < nrows/interleaveGroup; g++ {
			wg := w[g*gb : (g+1)*gb]
			for tok := 0; tok < ntok; tok += 4 {
				k := min(4, ntok-tok)
				kernels[k-1](wg, a[tok*arb:(tok+k)*arb], arb, nb, &out[tok*ldo+8*g], 4*ldo)
			}
		}
	}
}
