//go:build gc && !purego

package quant

import "sync"

// wideKernel multiplies one row of 16-bit float weights (f16 or bf16) by
// four rows of activations already widened to float32.
type wideKernel func(w []byte, a []float32, astride, nb int, out *float32, ostride int)

// matMulWide is the AVX-512 f16 or bf16 MatMul for four tokens or more: it
// widens the activations (16-bit floats of the same kind, so exactly) to
// float32 once per call with cvt, into a pooled buffer, and runs kernel,
// which then widens only the weights, once per four tokens. Each token's
// result has MatVec's bits (the mv kernel's accumulators and order). Fewer
// than four tokens, the tokens past the last group of four, and rows that
// are not whole 32-value blocks go through small.
func matMulWide(small MatMulFunc, kernel wideKernel, cvt func(src []byte, dst []float32, n16 int)) MatMulFunc {
	bufs := sync.Pool{New: func() any { return new([]float32) }}
	return func(n int, w []byte, nrows int, a []byte, ntok int, out []float32, ldo int) {
		groups := ntok / 4
		if n%32 != 0 || groups == 0 || nrows <= 0 {
			small(n, w, nrows, a, ntok, out, ldo)
			return
		}
		nb := n / 32
		rb, arb := 2*n, 2*n
		_, _ = w[nrows*rb-1], a[ntok*arb-1]
		bp := bufs.Get().(*[]float32)
		if cap(*bp) < 4*groups*n {
			*bp = make([]float32, 4*groups*n)
		}
		af := (*bp)[:4*groups*n]
		cvt(a[:4*groups*arb], af, 4*groups*n/16)
		panel := max(1, (128<<10)/rb)
		for r0 := 0; r0 < nrows; r0 += panel {
			r1 := min(r0+panel, nrows)
			for g := range groups {
				as := af[4*g*n : 4*(g+1)*n]
				tok := 4 * g
				_ = out[(tok+3)*ldo+r1-1]
				for r := r0; r < r1; r++ {
					kernel(w[r*rb:(r+1)*rb], as, 4*n, nb, &out[tok*ldo+r], 4*ldo)
				}
			}
		}
		bufs.Put(bp)
		if rest := ntok - 4*groups; rest > 0 {
			tok := 4 * groups
			small(n, w, nrows, a[tok*arb:], rest, out[tok*ldo:], ldo)
		}
	}
}
