package llama

import (
	"math"

	"github.com/smolgo/smolgo/tensor"
)

// A Q8_0 cache (KVQ8_0) stores every position's keys and values as ggml's
// Q8_0 blocks, the layout llama.cpp uses for -ctk q8_0 -ctv q8_0: the
// KVDim values of a position are cut into blocks of 32 along the head
// dimension (a head of 64 or 128 is 2 or 4 whole blocks), and each block is
// an f16 scale d followed by 32 int8 quants q, value = d·q. New keys and
// values are rounded exactly as llama.cpp's x86 backend copies f32 into a
// q8_0 tensor (tensor.QuantizeQ8_0: d = max|x|/127, q =
// round-half-even(x·127/max|x|)).
//
// Like llama.cpp (since its attention-rotation change), a q8_0 cache with a
// head size that is a multiple of 64 stores its keys and values rotated by
// an orthonormal Walsh-Hadamard matrix: queries and keys (after RoPE) by
// the largest power of two dividing the head size (128 for SmolLM3-3B, 64 for
// the tiny models), values by 64, and the attention output is rotated back.
// q·k and the weighted sum of values are unchanged by the rotation, but it
// spreads outliers over a whole block, so rounding to 8 bits loses less.
//
// Attention reads it the way llama.cpp's flash-attention kernel does for a
// quantized K: the query head is rounded to Q8_0 too, each score is the
// integer Q8_0·Q8_0 dot product scaled by the two d's, and V is dequantized
// position by position into an f32 accumulator (no f16 rounding of the
// running sum, unlike the f16 cache). llama.cpp takes this path for every
// batch size with a quantized cache (its tiled and split-KV paths are for
// f16 and f32 caches only), and so do we. The block arithmetic (rounding
// rows to Q8_0, the Q8_0·Q8_0 dot product, the accumulator updates) is
// package tensor's (kvq8.go there); the layout and the online softmax are
// here.

// The Q8_0 block, as tensor defines it.
const (
	q8Block = tensor.Q8_0Block
	q8Bytes = tensor.Q8_0BlockBytes
)

// initQ8 sets a q8_0 cache's row size and rotation sizes.
func (c *Cache) initQ8() {
	c.rowQ8 = c.model.Config.KVDim() / q8Block * q8Bytes
	if hd := c.model.Config.HeadDim; hd%64 == 0 {
		c.rotK = 64 // the largest power of two that divides the head size
		for hd%(2*c.rotK) == 0 {
			c.rotK *= 2
		}
		c.rotV = 64
	}
}

// rotateIn applies the q8_0 cache's Walsh-Hadamard rotations to the new
// queries and keys (size rotK) and values (size rotV), in place; nothing
// for other caches.
func (c *Cache) rotateIn(q, k, v []float32) {
	if c.typ != KVQ8_0 {
		return
	}
	hadamard(q, c.rotK)
	hadamard(k, c.rotK)
	hadamard(v, c.rotV)
}

// rotateOut undoes the values' rotation on the attention output.
func (c *Cache) rotateOut(att []float32) {
	if c.typ == KVQ8_0 {
		hadamard(att, c.rotV)
	}
}

// hadamard multiplies every n-element chunk of x by the orthonormal
// Walsh-Hadamard matrix of size n (Sylvester's order; it is its own
// inverse), as ggml's fast transform does: each element scaled by
// 1/sqrtf(n) first, then the butterflies (u+v, u-v) for spans 1, 2, 4, ...
// n = 0 does nothing.
func hadamard(x []float32, n int) {
	if n == 0 {
		return
	}
	scale := 1 / float32(math.Sqrt(float64(n)))
	for i := range x {
		x[i] *= scale
	}
	for c := 0; c+n <= len(x); c += n {
		row := x[c : c+n]
		for span := 1; span < n; span <<= 1 {
			for i := 0; i < n; i += 2 * span {
				a, b := row[i:i+span], row[i+span:i+2*span]
				for j := range a {
					a[j], b[j] = a[j]+b[j], a[j]-b[j]
				}
			}
		}
	}
}

// storeQ8 rounds the new keys and values (whole positions, back to back) of
// layer l to Q8_0 at positions pos...
func (c *Cache) storeQ8(l, pos int, k, v []float32) {
	rb, kv := c.rowQ8, c.model.Config.KVDim()
	n := len(k) / kv
	// Lengths are whole blocks by construction (KVDim is a multiple of 32).
	tensor.QuantizeQ8_0(c.k8[l][pos*rb:(pos+n)*rb], k)
	tensor.QuantizeQ8_0(c.v8[l][pos*rb:(pos+n)*rb], v)
}

// headQ8 returns the bytes of KV head h of position p in a layer's Q8_0 rows.
func (c *Cache) headQ8(rows []byte, p, h int) []byte {
	hb := c.model.Config.HeadDim / q8Block * q8Bytes
	i := p*c.rowQ8 + h*hb
	return rows[i : i+hb]
}

// onlineQ8 is llama.cpp's flash-attention path over a Q8_0 cache for one
// query head against positions [0, kvLen) of KV head kvh in layer l: the
// query rounded to Q8_0 (qq, by quantizeQueries), scores by the Q8_0 dot
// product, online softmax, and V dequantized into an f32 accumulator
// (ggml_vec_mad_f32: fused multiply-add; ggml_vec_scale_f32: a plain
// product) that is written to out.
func (c *Cache) onlineQ8(out []float32, qq []byte, l, kvh, kvLen int, scale float32) {
	hd := len(out)
	var accBuf [maxStackHead]float32
	acc := accBuf[:]
	if hd > maxStackHead {
		acc = make([]float32, hd)
	}
	acc = acc[:hd]
	clear(acc)
	kc, vc := c.k8[l], c.v8[l]
	if blockedDecode && hd%64 == 0 && kvLen > 0 {
		c.onlineQ8Blocked(acc, qq, kc, vc, kvh, kvLen, scale, out)
		return
	}
	c.onlineQ8Go(acc, qq, kc, vc, kvh, kvLen, scale, out)
}

// quantizeQueries rounds queries (whole heads, back to back) to Q8_0 blocks
// in dst, as llama.cpp rounds the query for a quantized cache; head h's
// blocks start at h*HeadDim/32*34.
func quantizeQueries(dst []byte, q []float32) {
	// The length is whole blocks by construction (HeadDim is a multiple of 32).
	tensor.QuantizeQ8_0(dst[:len(q)/q8Block*q8Bytes], q)
}

// onlineQ8Go is the reference (and fallback) of onlineQ8Blocked: llama.cpp's
// loop, one position at a time, with the accumulator acc (zeroed, hd floats).
func (c *Cache) onlineQ8Go(acc []float32, qq, kc, vc []byte, kvh, kvLen int, scale float32, out []float32) {
	M := float32(math.Inf(-1))
	var S float32
	for p := range kvLen {
		s := tensor.DotQ8_0(c.headQ8(kc, p, kvh), qq) * scale
		ms, vs := float32(1), float32(1)
		if s > M {
			mold := M
			M = s
			ms = expf(mold - M)
			for i := range acc {
				acc[i] *= ms
			}
		} else {
			vs = expf(s - M)
		}
		tensor.MadQ8_0(acc, c.headQ8(vc, p, kvh), vs)
		S = S*ms + vs
	}
	inv := float32(0)
	if S != 0 {
		inv = 1 / S
	}
	for i := range out {
		out[i] = acc[i] * inv
	}
}

// onlineQ8Blocked is the loop of onlineQ8 reordered for speed, with
// bit-identical results (as onlineF16Blocked): per block of attnBlock
// positions, all key scores first, then the running max and sum with the
// factors ms and vs, then the accumulator updates (tensor.MadSeqQ8_0, which
// keeps the accumulator, zeroed, hd floats, in registers).
func (c *Cache) onlineQ8Blocked(acc []float32, qq, kc, vc []byte, kvh, kvLen int, scale float32, out []float32) {
	hb := len(acc) / q8Block * q8Bytes // bytes of one head's row
	var sc, ms, vs [attnBlock]float32
	M := float32(math.Inf(-1))
	var S float32
	for p0 := 0; p0 < kvLen; p0 += attnBlock {
		np := min(attnBlock, kvLen-p0)
		for i := range np {
			sc[i] = tensor.DotQ8_0(c.headQ8(kc, p0+i, kvh), qq) * scale
		}
		M, S = onlineFactors(sc[:np], ms[:np], vs[:np], M, S)
		tensor.MadSeqQ8_0(acc, vc[p0*c.rowQ8+kvh*hb:], c.rowQ8, vs[:np], ms[:np])
	}
	inv := float32(0)
	if S != 0 {
		inv = 1 / S
	}
	for i := range out {
		out[i] = acc[i] * inv
	}
}
