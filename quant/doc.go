// Package quant implements ggml's tensor block formats: their byte layouts,
// dequantization to float32, the reference quantizers llama.cpp uses to
// write GGUF files, and the dot-product kernels that multiply quantized
// weights with activations.
//
// # Blocks
//
// A quantized tensor row is a sequence of fixed-size blocks, stored back to
// back with no padding, little endian. A block holds one or more scales
// (float16, except Q8_K's float32) and small integer quants q; a weight is a
// quant times a scale, sometimes minus a minimum. The 32-element formats have
// one scale per block. The K-quants group 256 elements into a super-block of
// 8 or 16 sub-blocks whose scales (and mins) are themselves quantized, to 4,
// 6 or 8 bits, against one or two float16 super-scales d and dmin.
//
//	type    elements  bytes  bits/weight  weight
//	Q4_0    32        18     4.5          d·(q−8)              q in 0..15
//	Q4_1    32        20     5.0          d·q + m              q in 0..15
//	Q5_0    32        22     5.5          d·(q−16)             q in 0..31
//	Q5_1    32        24     6.0          d·q + m              q in 0..31
//	Q8_0    32        34     8.5          d·q                  q in −127..127
//	Q2_K    256       84     2.625        d·sc·q − dmin·m      sc, m 4-bit; 16 sub-blocks of 16
//	Q3_K    256       110    3.4375       d·(sc−32)·(q−4)      sc 6-bit;    16 sub-blocks of 16
//	Q4_K    256       144    4.5          d·sc·q − dmin·m      sc, m 6-bit; 8 sub-blocks of 32
//	Q5_K    256       176    5.5          d·sc·q − dmin·m      sc, m 6-bit; 8 sub-blocks of 32
//	Q6_K    256       210    6.5625       d·sc·(q−32)          sc int8;     16 sub-blocks of 16
//	IQ4_NL  32        18     4.5          d·T[q]               T a fixed 16-entry table
//	IQ4_XS  256       136    4.25         d·(sc−32)·T[q]       sc 6-bit;    8 sub-blocks of 32
//	MXFP4   32        17     4.25         2^(e−128)·F[q]       e 8-bit exponent; F the E2M1 values doubled
//	Q8_1    32        36     9.0          d·q   (activations; also stores s = d·Σq)
//	Q8_K    256       292    9.125        d·q   (activations; float32 d, sums of 16 quants)
//
// F32, F16 and BF16 are blocks of one element. What each block stores, in
// order (fN = N-bit float, uN/iN = unsigned/signed integers):
//
//	Q4_0    d f16 | qs [16]u8: x[j] in the low nibble of qs[j], x[j+16] in the high one
//	Q4_1    d f16 | m f16 | qs [16]u8 (as Q4_0)
//	Q5_0    d f16 | qh u32: bit j is bit 4 of q[j] | qs [16]u8: low four bits, as Q4_0
//	Q5_1    d f16 | m f16 | qh u32 | qs [16]u8 (as Q5_0)
//	Q8_0    d f16 | qs [32]i8
//	Q8_1    d f16 | s f16 | qs [32]i8
//	Q2_K    scales [16]u8: scale in the low nibble, min in the high one |
//	        qs [64]u8: 2-bit quants | d f16 | dmin f16
//	Q3_K    hmask [32]u8: bit b of hmask[l] is the high bit of element 32b+l |
//	        qs [64]u8: low 2 bits | scales [12]u8: sixteen 6-bit scales | d f16
//	Q4_K    d f16 | dmin f16 | scales [12]u8: eight 6-bit scales and eight 6-bit mins |
//	        qs [128]u8: nibbles
//	Q5_K    d f16 | dmin f16 | scales [12]u8 (as Q4_K) | qh [32]u8: fifth bits |
//	        qs [128]u8: low nibbles
//	Q6_K    ql [128]u8: low 4 bits | qh [64]u8: high 2 bits | scales [16]i8 | d f16
//	Q8_K    d f32 | qs [256]i8 | bsums [16]i16: the sum of each 16 quants
//	IQ4_NL  d f16 | qs [16]u8 (as Q4_0, indexes into the table)
//	IQ4_XS  d f16 | scales_h u16: top 2 bits of each sub-block scale |
//	        scales_l [4]u8: low nibbles | qs [128]u8: 16 bytes per sub-block
//	MXFP4   e u8 (E8M0, a bare exponent) | qs [16]u8 (as Q4_0, indexes into
//	        F = 0, 1, 2, 3, 4, 6, 8, 12, then the same negated)
//
// The K-quants interleave their quants so SIMD code can unpack them with a
// few shifts: in Q4_K the 32 bytes of chunk c (64 elements) hold element
// 64c+l in the low nibble of byte l and element 64c+32+l in the high nibble;
// the 2-bit fields of Q2_K and Q3_K put elements 128h+l, +32, +64, +96 in
// bits 0-1, 2-3, 4-5 and 6-7 of byte 32h+l. In Q4_K and Q5_K, sub-blocks 0-3
// keep their 6-bit scale in scales[j] and min in scales[j+4]; sub-blocks 4-7
// keep the low nibbles in scales[j+4] and their top two bits in bits 6-7 of
// scales[j-4] (scale) and scales[j] (min). The comments in blocks.go (`go doc
// -u`) give every field's offset.
//
// # Dequantization
//
// Dequantize reproduces ggml's dequantize_row_* bit for bit: the float32
// operations happen in ggml's order with no fused multiply-adds (every
// product that feeds a sum is wrapped in float32(), which Go guarantees
// rounds it, so builds that fuse, GOAMD64=v3 or arm64, agree too; run the
// tests with GOAMD64=v3 to check). The tests
// compare SHA-256 digests of every tensor of llama.cpp's golden models, so
// code built on Dequantize sees exactly the weights llama.cpp sees.
//
// # Quantization
//
// Quantize runs ggml's reference quantizers, operation for operation in
// float32, including their scale searches: Q4_0/Q5_0 take the element of
// largest magnitude as the scale's anchor, Q4_1/Q5_1 the min and max, Q8_0
// rounds half away from zero, MXFP4 takes the exponent e that puts the
// largest magnitude at 8 to 16 times 2^(e−128) and the nearest table value
// for each element; Q6_K and Q3_K fit each sub-block's scale by an
// x²-weighted least-squares search (make_qx_quants, make_q3_quants), Q2_K,
// Q4_K and Q5_K fit a scale and a min per sub-block (make_qkx2_quants), and
// then all of them quantize the sub-block scales against the super-scales and
// re-quantize every weight with the scales as stored. Quantizing the F32
// source of a file made by llama-quantize (without an importance matrix)
// gives byte-identical tensors; the tests check every tensor of the golden
// family. Unlike ggml, Quantize refuses NaN, ±Inf and magnitudes the format's
// float16 scales cannot hold, with an error that names the block.
//
// # Matrix products
//
// A weight matrix is never widened for a matrix product. The activation row is
// first rounded to the weight type's "vec dot type" (VecDotType,
// QuantizeActivations: Q8_0, Q8_1 or Q8_K for the quantized types), and a
// DotFunc (Dot, MatVec, MatMul) multiplies weight blocks by activation blocks
// with integer sums, as llama.cpp does on the CPU.
//
// # Interleaved weights
//
// Where the CPU's kernels have one (InterleaveRows: q4_K and q6_K on AVX2
// and AVX-512), Interleave rewrites a matrix into an interleaved layout: G
// rows' blocks side by side (G = 8 on AVX2, 16 on AVX-512, chosen at load
// by the kernel level), 4 weights of each row in every 4·G bytes. On AVX2
// one VPMADDUBSW covers 8 rows, a sub-block's products add up in 16 bits
// and one VPMADDWD applies 8 rows' scales; on AVX-512 one VPDPBUSD covers
// 16 rows, its activation operand broadcast from memory. Either way each
// 32-bit lane ends up holding one row (no horizontal sums). The bytes are
// the file's, reordered: a group takes exactly its rows' space. The
// interleaved kernels (1 to 4 tokens on AVX2; 1 to 4 and 8 on AVX-512)
// compute the same integers as the file layout's and round every float
// step (no fused multiply-adds), so their results are within float32
// rounding of the file layout's and equal to their Go twins (dotQ4KxG,
// dotQ6KxG) to the bit. On AVX-512, batches of 24 tokens or more take the
// prefill GEMM, its panels unpacked from the interleaved groups, so a model
// keeps one copy of its weights. The interleaved kernels take fewer
// instructions per block than the file layout's, most of all for several
// tokens: BenchmarkInterleaved measures them beside the file layout's
// (weights in L2), and docs/speed.md (Zen 3, AVX2) and docs/avx512.md
// (Zen 5) have the runs; interleave.go documents the layouts.
//
// # Prefetch
//
// The AVX2 kernels' block loops, and the AVX-512 interleaved ones', ask
// for the weights a few KiB ahead (PREFETCHT0), which changes no result:
// left to the hardware's prefetcher, memory sat idle while a kernel
// computed, most of all in the multi-token kernels. BenchmarkInterleavedDRAM
// and BenchmarkMatVecDRAM measure the kernels from memory (weights larger
// than the caches); docs/speed.md and docs/avx512.md have the runs with and
// without the prefetch. gen_interleave.go and dot_avx2_amd64.s give the
// distances and how they were chosen (docs/avx512.md for the AVX-512
// ones). The AVX-512 file-layout kernels do not
// prefetch (on AVX-512 CPUs q4_K and q6_K, the types of a Q4_K_M model's
// big matrices, are interleaved).
package quant
