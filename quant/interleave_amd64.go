//go:build gc && !purego

package quant

import "github.com/smolgo/smolgo/gguf"

// The kernels of interleave_avx2_amd64.s: one group of 8 interleaved rows
// (q4_K or q6_K) times 4, 2 or 1 activation rows (see interleave.go).

//go:noescape
func q4Kx8AVX2x4(w, a []byte, astride, nb int, out *float32, ostride int)

//go:noescape
func q4Kx8AVX2x2(w, a []byte, astride, nb int, out *float32, ostride int)

//go:noescape
func q4Kx8AVX2x1(w, a []byte, astride, nb int, out *float32, ostride int)

//go:noescape
func q6Kx8AVX2x4(w, a []byte, astride, nb int, out *float32, ostride int)

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
	k.interleaved[gguf.TypeQ4_K] = interleavedMatMul(gguf.TypeQ4_K, q4Kx8AVX2x4, q4Kx8AVX2x2, q4Kx8AVX2x1)
	k.interleaved[gguf.TypeQ6_K] = interleavedMatMul(gguf.TypeQ6_K, q6Kx8AVX2x4, q6Kx8AVX2x2, q6Kx8AVX2x1)
}

// interleavedMatMul builds the MatMulFunc over interleaved rows of type t
// from its kernels for 4, 2 and 1 tokens: groups of 8 rows, each with the
// tokens four at a time, then two, then one. Every kernel gives a token the
// same bits, so a token's results do not depend on how many share the call.
func interleavedMatMul(t gguf.Type, x4, x2, x1 x4Kernel) MatMulFunc {
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
			tok := 0
			for ; tok+4 <= ntok; tok += 4 {
				x4(wg, a[tok*arb:(tok+4)*arb], arb, nb, &out[tok*ldo+8*g], 4*ldo)
			}
			if tok+2 <= ntok {
				x2(wg, a[tok*arb:(tok+2)*arb], arb, nb, &out[tok*ldo+8*g], 4*ldo)
				tok += 2
			}
			if tok < ntok {
				x1(wg, a[tok*arb:(tok+1)*arb], arb, nb, &out[tok*ldo+8*g], 4*ldo)
			}
		}
	}
}
