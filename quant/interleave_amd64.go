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

// addInterleavedKernels installs the interleaved products of level into k.
// Only the AVX2 level has them: the AVX-512 one keeps its own kernels.
func addInterleavedKernels(k *kernelSet, level isaLevel) {
	if level != levelAVX2 {
		return
	}
	k.interleaved[gguf.TypeQ4_K] = interleavedMatMul(gguf.TypeQ4_K, [4]x4Kernel{q4Kx8AVX2x1, q4Kx8AVX2x2, q4Kx8AVX2x3, q4Kx8AVX2x4})
	k.interleaved[gguf.TypeQ6_K] = interleavedMatMul(gguf.TypeQ6_K, [4]x4Kernel{q6Kx8AVX2x1, q6Kx8AVX2x2, q6Kx8AVX2x3, q6Kx8AVX2x4})
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
