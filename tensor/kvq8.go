package tensor

import (
	"encoding/binary"
	"fmt"

	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/quant"
)

// The rows of a Q8_0 KV cache (llama.cpp's -ctk q8_0 -ctv q8_0) are ggml's
// Q8_0 blocks: 32 values per block, stored as a float16 scale d followed by
// 32 int8 quants q (34 bytes), value = d·q. A cache rounds new keys and
// values with QuantizeQ8_0, scores a query rounded the same way with
// DotQ8_0, and sums value rows with MadQ8_0 or MadSeqQ8_0, the way
// llama.cpp's flash-attention kernel reads a quantized cache.

// The Q8_0 block: Q8_0Block values in Q8_0BlockBytes bytes.
const (
	Q8_0Block      = 32 // values per Q8_0 block
	Q8_0BlockBytes = 34 // bytes per Q8_0 block: f16 d + 32 int8
	q8Block        = Q8_0Block
	q8Bytes        = Q8_0BlockBytes
)

// QuantizeQ8_0 rounds x to Q8_0 blocks in dst, bit for bit as llama.cpp's
// x86 backend copies f32 into a q8_0 tensor (quant.QuantizeActivations):
// per block of 32, d = max|x|/127 stored as f16 and q =
// round-half-even(x·(127/max|x|)). len(x) must be a multiple of 32 and dst
// must hold len(x)/32*34 bytes; it panics otherwise.
func QuantizeQ8_0(dst []byte, x []float32) {
	if err := quant.QuantizeActivations(gguf.TypeQ8_0, x, dst); err != nil {
		panic(fmt.Sprintf("tensor: QuantizeQ8_0: %v", err))
	}
}

// DotQ8_0 is the Q8_0·Q8_0 dot product of the whole blocks in x with as
// many blocks of y: per block the exact integer sum of q_x·q_y scaled by
// d_x·d_y, summed in float32 (ggml_vec_dot_q8_0_q8_0). It runs quant's
// fastest kernel for this CPU, chosen once.
func DotQ8_0(x, y []byte) float32 {
	return dotQ8_0(len(x)/q8Bytes*q8Block, x, y)
}

// dotQ8_0 is quant's Q8_0 dot kernel for this CPU, looked up once at
// start-up and only read afterwards.
var dotQ8_0 = func() quant.DotFunc {
	f, err := quant.Dot(gguf.TypeQ8_0)
	if err != nil {
		panic(fmt.Sprintf("tensor: no q8_0 dot product: %v", err)) // quant always has one
	}
	return f
}()

// DequantizeQ8_0 widens the len(dst)/32 Q8_0 blocks at the start of src to
// float32 as ggml's dequantize_row_q8_0 does: q·d, d widened from f16.
func DequantizeQ8_0(dst []float32, src []byte) {
	for b := 0; b < len(dst)/q8Block; b++ {
		blk := src[b*q8Bytes : (b+1)*q8Bytes]
		d := FromF16(binary.LittleEndian.Uint16(blk))
		out := dst[b*q8Block : (b+1)*q8Block]
		for i := range out {
			out[i] = float32(int8(blk[2+i])) * d
		}
	}
}

// MadQ8_0 is ggml_vec_mad_f32 over a dequantized Q8_0 row: for each of the
// len(acc) values v = float32(q)·d (rounded to float32 first) of the blocks
// in blk, acc[i] = fma(v, s, acc[i]). len(acc) must be a multiple of 32.
func MadQ8_0(acc []float32, blk []byte, s float32) { madQ8(acc, blk, s, haveAttnKernels) }

func madQ8(acc []float32, blk []byte, s float32, asm bool) {
	if nb := len(acc) / q8Block; asm && nb > 0 && len(blk) >= nb*q8Bytes {
		madQ8x32(&acc[0], &blk[0], s, nb)
		return
	}
	madQ8Go(acc, blk, s)
}

// madQ8Go is the Go twin of MadQ8_0.
func madQ8Go(acc []float32, blk []byte, s float32) {
	for b := 0; b < len(acc)/q8Block; b++ {
		src := blk[b*q8Bytes : (b+1)*q8Bytes]
		d := FromF16(binary.LittleEndian.Uint16(src))
		out := acc[b*q8Block : (b+1)*q8Block]
		for i := range out {
			v := float32(float32(int8(src[2+i])) * d) // rounded before the fma
			out[i] = fmaF64(v, s, out[i])
		}
	}
}

// MadSeqQ8_0 is the accumulator pass of an online softmax over len(vs)
// positions of a Q8_0 cache: value rows (len(acc)/32 blocks each) stride
// bytes apart in v, weights vs and rescale factors ms (1 except where the
// running maximum rose), with the accumulator in float32 as llama.cpp keeps
// it for a quantized cache:
//
//	for p := range vs {
//		if ms[p] != 1 {
//			for i := range acc {
//				acc[i] *= ms[p]
//			}
//		}
//		MadQ8_0(acc, v[p*stride:], vs[p])
//	}
//
// In assembly (len(acc) a multiple of 64) the accumulator stays in
// registers across the positions; ms must be at least as long as vs.
func MadSeqQ8_0(acc []float32, v []byte, stride int, vs, ms []float32) {
	madSeqQ8(acc, v, stride, vs, ms, haveAttnKernels)
}

func madSeqQ8(acc []float32, v []byte, stride int, vs, ms []float32, asm bool) {
	np, hd := len(vs), len(acc)
	if np == 0 {
		return
	}
	ms = ms[:np]
	if asm && hd > 0 && hd%64 == 0 {
		_ = v[(np-1)*stride+hd/q8Block*q8Bytes-1]
		madSeqQ8x64(&acc[0], &v[0], stride, &vs[0], &ms[0], np, hd)
		return
	}
	madSeqQ8Go(acc, v, stride, vs, ms)
}

// madSeqQ8Go is the Go twin of MadSeqQ8_0.
func madSeqQ8Go(acc []float32, v []byte, stride int, vs, ms []float32) {
	for p, w := range vs {
		if m := ms[p]; m != 1 {
			for i := range acc {
				acc[i] *= m
			}
		}
		madQ8Go(acc, v[p*stride:], w)
	}
}
