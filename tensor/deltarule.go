package tensor

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
// FMA per element, out the dot product times scale. Column j needs only
// column j, so each column is done in full before the next: one pass
// over the state for each step ggml does in a pass of its own, with the
// same bits.
func DeltaRule(s, q, k, v, out []float32, decay, beta, scale float32) {
	deltaRule(s, q, k, v, out, decay, beta, scale, haveAttnKernels)
}

func deltaRule(s, q, k, v, out []float32, decay, beta, scale float32, asm bool) {
	n := len(k)
	s, q, v, out = s[:n*n], q[:n], v[:n], out[:n]
	if asm && n > 0 && n%32 == 0 {
		deltaRuleAVX2(&s[0], &q[0], &k[0], &v[0], &out[0], n, decay, beta, scale)
		return
	}
	deltaRuleGo(s, q, k, v, out, decay, beta, scale)
}

// deltaRuleGo is the Go twin of DeltaRule.
func deltaRuleGo(s, q, k, v, out []float32, decay, beta, scale float32) {
	n := len(k)
	for j := range n {
		col := s[j*n : (j+1)*n]
		for i := range col {
			col[i] *= decay
		}
		d := (v[j] - dotGGML(col, k)) * beta
		for i := range col {
			col[i] = fma32(k[i], d, col[i])
		}
		out[j] = dotGGML(col, q) * scale
	}
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
