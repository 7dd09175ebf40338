//go:build gc && !purego

package quant

import "github.com/smolgo/smolgo/gguf"

// The kernels of interleave_avx2_amd64.s (written by gen_interleave.go):
// one group of 8 interleaved rows (q4_K or q6_K) times 4, 3, 2 or 1
// activation rows (see interleave.go); and those of
// interleave_avx512_amd64.s: one group of 16 interleaved rows times 8, 4,
// 3, 2 or 1 activation rows.

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

//go:noescape
func q4Kx16AVX512x8(w, a []byte, astride, nb int, out *float32, ostride int)

//go:noescape
func q4Kx16AVX512x4(w, a []byte, astride, nb int, out *float32, ostride int)

//go:noescape
func q4Kx16AVX512x3(w, a []byte, astride, nb int, out *float32, ostride int)

//go:noescape
func q4Kx16AVX512x2(w, a []byte, astride, nb int, out *float32, ostride int)

//go:noescape
func q4Kx16AVX512x1(w, a []byte, astride, nb int, out *float32, ostride int)

//go:noescape
func q6Kx16AVX512x8(w, a []byte, astride, nb int, out *float32, ostride int)

//go:noescape
func q6Kx16AVX512x4(w, a []byte, astride, nb int, out *float32, ostride int)

//go:noescape
func q6Kx16AVX512x3(w, a []byte, astride, nb int, out *float32, ostride int)

//go:noescape
func q6Kx16AVX512x2(w, a []byte, astride, nb int, out *float32, ostride int)

//go:noescape
func q6Kx16AVX512x1(w, a []byte, astride, nb int, out *float32, ostride int)

// ilvKernels are one level's kernels over interleaved weights of a type:
// groups of rows rows, k[n-1] taking n tokens (nil where there is none; 1
// is always there). Every kernel gives each row and token the bits of the
// Go twin.
type ilvKernels struct {
	rows int
	k    [8]x4Kernel
}

var (
	q4KAVX2   = ilvKernels{8, [8]x4Kernel{q4Kx8AVX2x1, q4Kx8AVX2x2, q4Kx8AVX2x3, q4Kx8AVX2x4}}
	q6KAVX2   = ilvKernels{8, [8]x4Kernel{q6Kx8AVX2x1, q6Kx8AVX2x2, q6Kx8AVX2x3, q6Kx8AVX2x4}}
	q4KAVX512 = ilvKernels{16, [8]x4Kernel{0: q4Kx16AVX512x1, 1: q4Kx16AVX512x2, 2: q4Kx16AVX512x3, 3: q4Kx16AVX512x4, 7: q4Kx16AVX512x8}}
	q6KAVX512 = ilvKernels{16, [8]x4Kernel{0: q6Kx16AVX512x1, 1: q6Kx16AVX512x2, 2: q6Kx16AVX512x3, 3: q6Kx16AVX512x4, 7: q6Kx16AVX512x8}}
)

// addInterleavedKernels installs the interleaved products of level into k:
// on AVX2 the AVX2 kernels over groups of 8 rows; on AVX-512 the AVX-512
// kernels over groups of 16 for the batches of a decode step, and the
// prefill GEMM (gemm_amd64.go) for batches of gemmMinTokens or more, its
// panels unpacked from the interleaved groups (gemm_interleaved_amd64.go),
// so a model keeps one copy of its weights.
func addInterleavedKernels(k *kernelSet, level isaLevel) {
	switch {
	case level >= levelAVX512:
		k.ilvRows = 16
		k.interleaved[gguf.TypeQ4_K] = matMulGEMM(gguf.TypeQ4_K, gemmPackQ4KIlv, gemmQ4KAVX512x8, gemmQ4KAVX512x4,
			interleavedMatMul(gguf.TypeQ4_K, q4KAVX512))
		k.interleaved[gguf.TypeQ6_K] = matMulGEMM(gguf.TypeQ6_K, gemmPackQ6KIlv, gemmQ6KAVX512x8, gemmQ6KAVX512x4,
			interleavedMatMul(gguf.TypeQ6_K, q6KAVX512))
	case level >= levelAVX2:
		k.ilvRows = 8
		k.interleaved[gguf.TypeQ4_K] = interleavedMatMul(gguf.TypeQ4_K, q4KAVX2)
		k.interleaved[gguf.TypeQ6_K] = interleavedMatMul(gguf.TypeQ6_K, q6KAVX2)
	}
}

// interleavedMatMul builds the MatMulFunc over interleaved rows of type t
// from its kernels: each group with the tokens as many at a time as a
// kernel takes (the most it can, then the rest in as few calls as the
// kernels allow). Every kernel gives a token the same bits, so a token's
// results do not depend on how many share the call.
func interleavedMatMul(t gguf.Type, ks ilvKernels) MatMulFunc {
	bb, g := t.BlockBytes(), ks.rows
	// take[n] is how many of n tokens left the next call takes.
	var take [9]int
	for n := 1; n <= 8; n++ {
		for j := n; j >= 1; j-- {
			if ks.k[j-1] != nil {
				take[n] = j
				break
			}
		}
	}
	return func(n int, w []byte, nrows int, a []byte, ntok int, out []float32, ldo int) {
		nb := n / 256
		if nrows <= 0 || ntok <= 0 {
			return
		}
		if nb <= 0 || n%256 != 0 || nrows%g != 0 {
			panic("quant: interleaved product of a bad shape")
		}
		gb, arb := nb*bb*g, nb*292
		_, _ = w[nrows/g*gb-1], a[ntok*arb-1]
		_ = out[(ntok-1)*ldo+nrows-1]
		for grp := 0; grp < nrows/g; grp++ {
			wg := w[grp*gb : (grp+1)*gb]
			for tok := 0; tok < ntok; {
				k := take[min(8, ntok-tok)]
				ks.k[k-1](wg, a[tok*arb:(tok+k)*arb], arb, nb, &out[tok*ldo+g*grp], 4*ldo)
				tok += k
			}
		}
	}
}
