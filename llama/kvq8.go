package llama

import (
	"math"
	"slices"

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

// q8KV stores keys and values as Q8_0 blocks (KVQ8_0): row bytes per
// position, rotated by Walsh-Hadamard matrices of sizes rotK (queries and
// keys) and rotV (values; undone on the attention output), 0 for none.
type q8KV struct {
	k, v       []byte
	kv, hd     int // values per position (KVDim), head size
	row        int // bytes of one position's keys (or values)
	rotK, rotV int
}

// newQ8KV returns an empty q8_0 store for positions of kv values in heads
// of hd (both multiples of 32), with llama.cpp's rotations: queries and keys
// by the largest power of two dividing the head size (128 for SmolLM3-3B, 64
// for the tiny models), values by 64, where the head size is a multiple of
// 64.
func newQ8KV(kv, hd int) *q8KV {
	s := &q8KV{kv: kv, hd: hd, row: kv / q8Block * q8Bytes}
	if hd%64 == 0 {
		s.rotK = 64
		for hd%(2*s.rotK) == 0 {
			s.rotK *= 2
		}
		s.rotV = 64
	}
	return s
}

func (s *q8KV) grow(slots, keep int) {
	s.k = append(make([]byte, 0, slots*s.row), s.k[:keep*s.row]...)[:slots*s.row]
	s.v = append(make([]byte, 0, slots*s.row), s.v[:keep*s.row]...)[:slots*s.row]
}
func (s *q8KV) release()       { s.k, s.v = nil, nil }
func (s *q8KV) bytes() int64   { return int64(len(s.k) + len(s.v)) }
func (s *q8KV) tiled(int) bool { return false }

// put rounds the new keys and values to Q8_0 as llama.cpp's x86 backend
// copies f32 into a q8_0 tensor. Lengths are whole blocks by construction
// (KVDim is a multiple of 32).
func (s *q8KV) put(slot int, k, v []float32) {
	n := len(k) / s.kv
	tensor.QuantizeQ8_0(s.k[slot*s.row:(slot+n)*s.row], k)
	tensor.QuantizeQ8_0(s.v[slot*s.row:(slot+n)*s.row], v)
}

func (s *q8KV) move(dst, src, n int) {
	copy(s.k[dst*s.row:], s.k[src*s.row:(src+n)*s.row])
	copy(s.v[dst*s.row:], s.v[src*s.row:(src+n)*s.row])
}

func (s *q8KV) copyFrom(src kvStore, lo, hi int) {
	o := src.(*q8KV)
	copy(s.k[lo*s.row:hi*s.row], o.k[lo*s.row:hi*s.row])
	copy(s.v[lo*s.row:hi*s.row], o.v[lo*s.row:hi*s.row])
}

func (s *q8KV) clone(n int) kvStore {
	c := *s
	c.k, c.v = slices.Clone(s.k[:n*s.row]), slices.Clone(s.v[:n*s.row])
	return &c
}

// key dequantizes a position's keys and undoes their rotation (hadamard is
// its own inverse); setKey rotates and rounds them back.
func (s *q8KV) key(slot int, dst []float32) {
	tensor.DequantizeQ8_0(dst, s.k[slot*s.row:(slot+1)*s.row])
	hadamard(dst, s.rotK)
}

func (s *q8KV) setKey(slot int, src []float32) {
	hadamard(src, s.rotK)
	tensor.QuantizeQ8_0(s.k[slot*s.row:(slot+1)*s.row], src)
}

// prepare applies the rotations to the new queries and keys (rotK) and
// values (rotV), in place, and rounds the queries to Q8_0 blocks in qq (as
// llama.cpp rounds the query for a quantized cache; head h's blocks start at
// h*HeadDim/32*34).
func (s *q8KV) prepare(q, k, v []float32, qq []byte) {
	hadamard(q, s.rotK)
	hadamard(k, s.rotK)
	hadamard(v, s.rotV)
	tensor.QuantizeQ8_0(qq[:len(q)/q8Block*q8Bytes], q)
}

// finish undoes the values' rotation on the attention output.
func (s *q8KV) finish(att []float32) { hadamard(att, s.rotV) }

// head returns the bytes of KV head h at slot p in rows (s.k or s.v).
func (s *q8KV) head(rows []byte, p, h int) []byte {
	hb := s.hd / q8Block * q8Bytes
	i := p*s.row + h*hb
	return rows[i : i+hb]
}

// online is llama.cpp's flash-attention path over a Q8_0 cache for one
// query head against the positions of segs of KV head kvh: the query
// rounded to Q8_0 (qq), scores by the Q8_0 dot product, online softmax, and
// V dequantized into an f32 accumulator (ggml_vec_mad_f32: fused
// multiply-add; ggml_vec_scale_f32: a plain product) that is written to out.
func (s *q8KV) online(out []float32, qq []byte, kvh int, segs []seg, scale, sink float32) {
	hd := len(out)
	var accBuf [maxStackHead]float32
	acc := accBuf[:]
	if hd > maxStackHead {
		acc = make([]float32, hd)
	}
	acc = acc[:hd]
	clear(acc)
	if blockedDecode && hd%64 == 0 {
		s.onlineBlocked(acc, qq, kvh, segs, scale, sink, out)
		return
	}
	s.onlineGo(acc, qq, kvh, segs, scale, sink, out)
}

// onlineGo is the reference (and fallback) of onlineBlocked: llama.cpp's
// loop, one position at a time, with the accumulator acc (zeroed, hd
// floats).
func (s *q8KV) onlineGo(acc []float32, qq []byte, kvh int, segs []seg, scale, sink float32, out []float32) {
	M := float32(math.Inf(-1))
	var S float32
	for _, g := range segs {
		for p := g.slot; p < g.slot+g.n; p++ {
			sc := tensor.DotQ8_0(s.head(s.k, p, kvh), qq) * scale
			ms, vs := float32(1), float32(1)
			if sc > M {
				mold := M
				M = sc
				ms = expf(mold - M)
				for i := range acc {
					acc[i] *= ms
				}
			} else {
				vs = expf(sc - M)
			}
			tensor.MadQ8_0(acc, s.head(s.v, p, kvh), vs)
			S = S*ms + vs
		}
	}
	finishOnline(out, acc, M, S, sink)
}

// onlineBlocked is onlineGo reordered for speed, with bit-identical results
// (as onlineF16Blocked): per block of attnBlock positions, all key scores
// first, then the running max and sum with the factors ms and vs, then the
// accumulator updates (tensor.MadSeqQ8_0, which keeps the accumulator in
// registers).
func (s *q8KV) onlineBlocked(acc []float32, qq []byte, kvh int, segs []seg, scale, sink float32, out []float32) {
	hb := len(acc) / q8Block * q8Bytes // bytes of one head's row
	var sc, ms, vs [attnBlock]float32
	M := float32(math.Inf(-1))
	var S float32
	for _, g := range segs {
		for p0 := g.slot; p0 < g.slot+g.n; p0 += attnBlock {
			np := min(attnBlock, g.slot+g.n-p0)
			for i := range np {
				sc[i] = tensor.DotQ8_0(s.head(s.k, p0+i, kvh), qq) * scale
			}
			M, S = onlineFactors(sc[:np], ms[:np], vs[:np], M, S)
			tensor.MadSeqQ8_0(acc, s.v[p0*s.row+kvh*hb:], s.row, vs[:np], ms[:np])
		}
	}
	finishOnline(out, acc, M, S, sink)
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
