package tensor

import (
	"fmt"
	"math"
)

// DeltaRule advances one head of a gated delta net (Gated DeltaNet, the
// recurrent layers of Qwen3.5 and Qwen3-Next) by one token, as ggml's CPU
// gated_delta_net op does it:
//
//	S = decay·S                 (decay = e^g, the token's gate)
//	d = β·(v − Sᵀk)
//	S = S + k·dᵀ
//	out = scale·Sᵀq
//
// S is the head's n×n state matrix (n = len(k)), kept in s by columns as
// ggml keeps it: s[j*n:(j+1)*n] is column j of S, so that both products
// with S are dot products of contiguous rows. q, k, v and out hold n values
// each; s is updated in place.
//
// The rounding is ggml's AVX2 build's: the decay a float32 multiply, the
// dot products ggml_vec_dot_f32's (four 8-lane FMA accumulators over each
// 32 values, summed (acc0+acc2)+(acc1+acc3), the lanes' halves added, then
// two horizontal adds; the values past the last multiple of 32 multiplied
// and added one by one), d a subtraction then a multiply, the update one
// FMA per element, out the dot product times scale.
func DeltaRule(s, q, k, v, out []float32, decay, beta, scale float32) {
	n := len(k)
	DeltaRuleTokens(s, q, k, v, out, n, n, []float32{decay}, []float32{beta}, 1, 1, scale)
}

// DeltaRuleTokens runs DeltaRule for ntok tokens in order, token t's q, k
// and v being the n = √len(s) values at q[t*stride:], k[t*stride:] and
// v[t*stride:], its output going to out[t*ostride:], with decay[t*gstride]
// and beta[t*gstride]: ntok DeltaRule calls. (Taking each column through
// every token before the next, which its independence allows, measured
// slower: the column's chain of dependent reductions is then exposed.)
func DeltaRuleTokens(s, q, k, v, out []float32, stride, ostride int, decay, beta []float32, gstride, ntok int, scale float32) {
	kernel := deltaGo
	switch {
	case attnAVX512:
		kernel = deltaAVX512
	case haveAttnKernels:
		kernel = deltaAVX2
	}
	deltaRuleTokens(s, q, k, v, out, stride, ostride, decay, beta, gstride, ntok, scale, kernel)
}

// The delta-rule kernels, all with the same bits.
const (
	deltaGo = iota
	deltaAVX2
	deltaAVX512
)

func deltaRuleTokens(s, q, k, v, out []float32, stride, ostride int, decay, beta []float32, gstride, ntok int, scale float32, kernel int) {
	if ntok <= 0 {
		return
	}
	n := isqrt(len(s))
	last, lastG := (ntok-1)*stride+n, (ntok-1)*gstride+1
	s, q, k, v, out = s[:n*n], q[:last], k[:last], v[:last], out[:(ntok-1)*ostride+n]
	decay, beta = decay[:lastG], beta[:lastG]
	if n == 0 || n%32 != 0 || kernel == deltaGo {
		deltaTokensGo(s, q, k, v, out, stride, ostride, decay, beta, gstride, ntok, scale)
		return
	}
	for t := range ntok {
		qt, kt, vt, ot := &q[t*stride], &k[t*stride], &v[t*stride], &out[t*ostride]
		if kernel == deltaAVX512 {
			deltaRuleAVX512(&s[0], qt, kt, vt, ot, n, decay[t*gstride], beta[t*gstride], scale)
		} else {
			deltaRuleAVX2(&s[0], qt, kt, vt, ot, n, decay[t*gstride], beta[t*gstride], scale)
		}
	}
}

// deltaTokensGo is the Go twin of DeltaRuleTokens. Column j after a token
// needs only column j before it, so each column is done in full before the
// next, in one pass over the state per step of ggml's.
func deltaTokensGo(s, q, k, v, out []float32, stride, ostride int, decay, beta []float32, gstride, ntok int, scale float32) {
	n := isqrt(len(s))
	for t := range ntok {
		kt, qt := k[t*stride:t*stride+n], q[t*stride:t*stride+n]
		dec := decay[t*gstride]
		for j := range n {
			col := s[j*n : (j+1)*n]
			for i := range col {
				col[i] *= dec
			}
			d := (v[t*stride+j] - dotGGML(col, kt)) * beta[t*gstride]
			for i := range col {
				col[i] = fma32(kt[i], d, col[i])
			}
			out[t*ostride+j] = dotGGML(col, qt) * scale
		}
	}
}

// isqrt is the n with n·n = x for the square x (the size of a state).
func isqrt(x int) int {
	n := int(math.Sqrt(float64(x)))
	if n*n != x {
		panic(fmt.Sprintf("tensor: a delta-rule state of %d values is not square", x))
	}
	return n
}

// dotGGML is ggml_vec_dot_f32 as ggml's AVX2 build computes it over
// len(a) values (see DeltaRule).
func dotGGML(a, b []float32) float32 {
	b = b[:len(a)]
	n32 := len(a) &^ 31
	var acc [4][8]float32
	for i := 0; i < n32; i += 32 {
		for c := range acc {
			for l := range 8 {
				acc[c][l] = fma32(a[i+8*c+l], b[i+8*c+l], acc[c][l])
			}
		}
	}
	var x [8]float32
	for l := range x {
		x[l] = (acc[0][l] + acc[2][l]) + (acc[1][l] + acc[3][l])
	}
	t0, t1, t2, t3 := x[0]+x[4], x[1]+x[5], x[2]+x[6], x[3]+x[7]
	sum := (t0 + t1) + (t2 + t3)
	for i := n32; i < len(a); i++ {
		sum += float32(a[i] * b[i])
	}
	return sum
}
