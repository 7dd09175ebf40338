//go:build gc && !purego

package tensor

import "github.com/smolgo/smolgo/internal/cpu"

// haveAttnKernels is read once at start-up: the attention and KV kernels of
// attn_amd64.s and attnq8_amd64.s need AVX2, FMA and F16C
// (GODEBUG=cpu.avx2=off turns them off; the purego build tag leaves only the
// Go code).
var haveAttnKernels = cpu.X86.AVX2

// attnAVX512 selects the AVX-512 scoring kernel (four keys at a time;
// the same bits), read once at start-up.
var attnAVX512 = cpu.X86.AVX512

// The assembly kernels below work on raw pointers, with the lengths checked
// by their exported callers (attn.go, kvq8.go). Each computes exactly what
// the Go loop quoted in its comment computes, bit for bit; attn_test.go
// checks every one of them against its Go twin.

// dotF16x64 is dotF16Go for n a positive multiple of 64: eight 8-lane
// accumulators stand for the 64 lanes of ggml's AVX-512 kernel
// (ggml_vec_dot_f16) and are reduced in its order:
//
//	var lanes [64]float32
//	for i := 0; i < n; i += 64 {
//		for l := range 64 {
//			lanes[l] += FromF16(k[i+l]) * q[i+l] // exact: an f16·f16 product fits in f32
//		}
//	}
//	// r[i] = (lanes[i] + lanes[32+i]) + (lanes[16+i] + lanes[48+i]), i < 16,
//	// then _mm512_reduce_add_ps: halves, quarters, pairs.
//
//go:noescape
func dotF16x64(k *uint16, q *float32, n int) float32

// dotsF16x64 is np dotF16x64 calls on key rows stride float16 elements
// apart, each result times scale:
//
//	for p := range np {
//		out[p] = dotF16x64(&k[p*stride], q, n) * scale
//	}
//
// n is a positive multiple of 64, np positive. Key rows 8 positions ahead
// are prefetched (the rows of one head in a KV cache are too far apart for
// the hardware prefetcher to see one stream).
//
//go:noescape
func dotsF16x64(k *uint16, stride, np int, q *float32, n int, scale float32, out *float32)

// madF16x8 is madF16Go for n a positive multiple of 8 (FMA in f32, then
// VCVTPS2PH, round to nearest even, and back):
//
//	for i := range n {
//		acc[i] = RoundF16(fma(FromF16(v[i]), s, acc[i]))
//	}
//
//go:noescape
func madF16x8(acc *float32, v *uint16, s float32, n int)

// madSeqF16x64 is madSeqF16Go for hd a positive multiple of 64 and np
// positive, holding 64 floats of acc in registers across all np positions
// instead of loading and storing them for every one:
//
//	for p := range np {
//		if ms[p] != 1 {
//			for i, a := range acc[:hd] {
//				acc[i] = RoundF16(a * ms[p])
//			}
//		}
//		madF16x8(acc, &v[p*stride], vs[p], hd)
//	}
//
// stride is in float16 elements; value rows 8 positions ahead are
// prefetched.
//
//go:noescape
func madSeqF16x64(acc *float32, v *uint16, stride int, vs, ms *float32, np, hd int)

// dotF32x8 is dotF32Go for n a positive multiple of 8: one 8-lane FMA
// accumulator, then a pairwise reduction:
//
//	var l [8]float32
//	for i := 0; i < n; i += 8 {
//		for j := range 8 {
//			l[j] = fma(a[i+j], b[i+j], l[j])
//		}
//	}
//	return ((l[0]+l[4]) + (l[2]+l[6])) + ((l[1]+l[5]) + (l[3]+l[7]))
//
//go:noescape
func dotF32x8(a, b *float32, n int) float32

// dotsF32x4x8 scores np key rows against four query rows at once, each key
// row loaded once for the four:
//
//	for p := range np {
//		for i := range 4 {
//			out[i*ostride/4+p] = dotF32x8(&k[p*hd], &q[i*hd], hd)
//		}
//	}
//
// hd is a positive multiple of 8, np positive; ostride is in bytes.
//
//go:noescape
func dotsF32x4x8(k *float32, np int, q *float32, hd int, out *float32, ostride int)

// dotsF32x4x8AVX512 is dotsF32x4x8 for np a positive multiple of 4
// (attn_avx512_amd64.s): four keys at a time, 16 accumulators, the 16 sums
// reduced together, each as dotF32x8 forms it.
//
//go:noescape
func pvF32x128AVX512(out, v, w *float32, np, hd int)

//go:noescape
func dotsF32x4x8AVX512(k *float32, np int, q *float32, hd int, out *float32, ostride int)

// axpyF32x8 is axpyF32Go for n a positive multiple of 8:
//
//	for i := range n {
//		y[i] = fma(x[i], a, y[i])
//	}
//
//go:noescape
func axpyF32x8(y, x *float32, a float32, n int)

// pvF32x64 is np axpyF32x8 calls, with 64 outputs at a time held in
// registers across all the rows:
//
//	for p := range np {
//		axpyF32x8(out, &v[p*hd], w[p], hd)
//	}
//
// hd is a positive multiple of 64, np positive.
//
//go:noescape
func pvF32x64(out, v, w *float32, np, hd int)

// madQ8x32 is madQ8Go for nb > 0 whole Q8_0 blocks of 32 values (an f16
// scale d, then 32 int8 quants):
//
//	for b := range nb {
//		d := FromF16(uint16(blk[34*b]) | uint16(blk[34*b+1])<<8)
//		for i := range 32 {
//			v := float32(int8(blk[34*b+2+i])) * d // rounded before the fma
//			acc[32*b+i] = fma(v, s, acc[32*b+i])
//		}
//	}
//
//go:noescape
func madQ8x32(acc *float32, blk *byte, s float32, nb int)

// madSeqQ8x64 is madSeqQ8Go for hd a positive multiple of 64 (two Q8_0
// blocks) and np positive, holding 64 floats of acc in registers across all
// np positions:
//
//	for p := range np {
//		if ms[p] != 1 {
//			for i := range acc[:hd] {
//				acc[i] *= ms[p]
//			}
//		}
//		madQ8x32(acc, &v[p*stride], vs[p], hd/32)
//	}
//
// stride is in bytes; value rows 8 positions ahead are prefetched.
//
//go:noescape
func madSeqQ8x64(acc *float32, v *byte, stride int, vs, ms *float32, np, hd int)
