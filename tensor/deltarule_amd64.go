//go:build gc && !purego

package tensor

// deltaRuleAVX2 is one token of deltaTokensGo for n a positive multiple of
// 32 (AVX2 and FMA: haveAttnKernels), bit for bit.
//
//go:noescape
func deltaRuleAVX2(s, q, k, v, out *float32, n int, decay, beta, scale float32)

// deltaRuleAVX512 is deltaRuleAVX2 in 16-lane registers (attnAVX512), bit
// for bit.
//
//go:noescape
func deltaRuleAVX512(s, q, k, v, out *float32, n int, decay, beta, scale float32)
