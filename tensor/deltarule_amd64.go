//go:build gc && !purego

package tensor

// deltaRuleAVX2 is deltaRuleGo for n a positive multiple of 32 (AVX2 and
// FMA: haveAttnKernels), bit for bit.
//
//go:noescape
func deltaRuleAVX2(s, q, k, v, out *float32, n int, decay, beta, scale float32)
