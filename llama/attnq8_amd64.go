//go:build gc && !purego

package llama

// madQ8x32 is madQ8Go for nb > 0 whole blocks in AVX2 (it needs the same
// AVX2 + FMA + F16C as the f16 kernels: haveF16Kernels).
//
//go:noescape
func madQ8x32(acc *float32, blk *byte, s float32, nb int)

// madSeqQ8x64 is the accumulator pass of onlineQ8Blocked over np positions
// (acc *= ms[p] where ms[p] != 1, then madQ8 with vs[p]), keeping acc in
// registers; hd is a positive multiple of 64 and stride is in bytes.
//
//go:noescape
func madSeqQ8x64(acc *float32, v *byte, stride int, vs, ms *float32, np, hd int)
