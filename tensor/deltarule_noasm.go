//go:build !gc || purego || !amd64

package tensor

func deltaRuleAVX2(s, q, k, v, out *float32, n int, decay, beta, scale float32) {
	panic("tensor: no delta-rule kernel")
}

func deltaRuleAVX512(s, q, k, v, out *float32, n int, decay, beta, scale float32) {
	panic("tensor: no delta-rule kernel")
}
