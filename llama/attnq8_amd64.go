//go:build !purego

package llama

// madQ8x32 is madQ8Go for nb > 0 whole blocks in AVX2 (it needs the same
// AVX2 + FMA + F16C as the f16 kernels: haveF16Kernels).
//
//go:noescape
func madQ8x32(acc *float32, blk *byte, s float32, nb int)
