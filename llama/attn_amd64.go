//go:build gc && !purego

package llama

import "github.com/smolgo/smolgo/internal/cpu"

// haveF16Kernels is read once at start-up: the AVX2 + FMA + F16C attention
// kernels of attn_amd64.s need all three (GODEBUG=cpu.avx2=off turns them off;
// the purego build tag leaves only the Go code).
var haveF16Kernels = cpu.X86.AVX2

// dotF16x64 is dotF16Go for n a positive multiple of 64, in AVX2: eight
// 8-lane accumulators stand for the 64 lanes of ggml's AVX-512 kernel and
// are reduced in its order.
//
//go:noescape
func dotF16x64(k *uint16, q *float32, n int) float32

// madF16x8 is madF16Go for n a positive multiple of 8: FMA in f32, then
// VCVTPS2PH (round to nearest even) and back.
//
//go:noescape
func madF16x8(acc *float32, v *uint16, s float32, n int)

// dotF32x8 is dotF32Go for n a positive multiple of 8.
//
//go:noescape
func dotF32x8(a, b *float32, n int) float32

// axpyF32x8 is axpyF32Go for n a positive multiple of 8.
//
//go:noescape
func axpyF32x8(y, x *float32, a float32, n int)

// dotsF32x4 computes the dot products of np key rows with four query rows
// (all hd floats, hd a positive multiple of 8) as dotF32x8 would, storing
// query i's scores ostride bytes after query i-1's.
//
//go:noescape
func dotsF32x4(k *float32, np int, q *float32, hd int, out *float32, ostride int)

// pvF32x64 is np axpyF32x8 calls out += w[p]·v[p*hd:] in order, for hd a
// positive multiple of 64, keeping the outputs in registers.
//
//go:noescape
func pvF32x64(out, v, w *float32, np, hd int)

// madSeqF16x64 is the accumulator pass of onlineF16Blocked over np positions
// (acc += round16(v[p]·vs[p]) after a rescale by ms[p] where ms[p] != 1),
// keeping acc in registers; hd is a positive multiple of 64 and stride is in
// float16 elements.
//
//go:noescape
func madSeqF16x64(acc *float32, v *uint16, stride int, vs, ms *float32, np, hd int)

// dotsF16x64 computes out[p] = dotF16x64(k[p*stride:], q, n) * scale for p
// in [0, np), prefetching the key rows ahead; n is a positive multiple of
// 64 and stride is in float16 elements.
//
//go:noescape
func dotsF16x64(k *uint16, stride, np int, q *float32, n int, scale float32, out *float32)
