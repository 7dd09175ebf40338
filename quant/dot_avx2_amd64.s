//go:build gc && !purego

#include "textflag.h"

// AVX2 kernels (with FMA and F16C). VPMADDUBSW multiplies unsigned weight
// bytes by signed activation bytes and adds pairs into int16 lanes (no
// saturation is possible for these formats: at most 2·63·128); VPMADDWD
// multiplies those by the sub-block scales and adds pairs into int32 lanes.
// Per block, the int32 lanes are converted to float32 and accumulated with
// FMA against d_w·d_a.
//
// The block loops of the q4_K, q5_K, q6_K and q8_0 kernels ask for the
// weights 4 KiB ahead (PREFETCHT0, about a block's cache lines per block):
// the hardware's prefetcher alone leaves memory idle while a kernel
// computes. On Zen 3, one thread over 64 MB (BenchmarkMatVecDRAM, three
// alternating runs) went from 9.5-11.5 to 10.9-11.5 GB/s (q4_K), 10.1-10.9
// to 12.6-14.8 (q6_K), 10.5-11.2 to 12.1-13.0 (q8_0), 9.4-10.2 to
// 10.8-12.0 (q5_K); 2, 4 and 8 KiB were tried, 4 and 8 about equal. The
// other kernels do not prefetch: it made f16 and f32, which stream at the
// core's full read rate, 10-25 % slower (14.0-16.3 → 11.0-12.1 GB/s for
// f16), and q2_K, q3_K, q4_0 and bf16 no faster.
#define WPREFETCH1 PREFETCHT0 4096(SI)
#define WPREFETCH3 PREFETCHT0 4096(SI); PREFETCHT0 4160(SI); PREFETCHT0 4224(SI)
#define WPREFETCH4 WPREFETCH3; PREFETCHT0 4288(SI)

// q4kWordShuf: control s (32 bytes) broadcasts word s of a register that
// holds the 8 q4_K scales as words (in both 128-bit lanes).
DATA q4kWordShuf<>+0x00(SB)/8, $0x0100010001000100
DATA q4kWordShuf<>+0x08(SB)/8, $0x0100010001000100
DATA q4kWordShuf<>+0x10(SB)/8, $0x0100010001000100
DATA q4kWordShuf<>+0x18(SB)/8, $0x0100010001000100
DATA q4kWordShuf<>+0x20(SB)/8, $0x0302030203020302
DATA q4kWordShuf<>+0x28(SB)/8, $0x0302030203020302
DATA q4kWordShuf<>+0x30(SB)/8, $0x0302030203020302
DATA q4kWordShuf<>+0x38(SB)/8, $0x0302030203020302
DATA q4kWordShuf<>+0x40(SB)/8, $0x0504050405040504
DATA q4kWordShuf<>+0x48(SB)/8, $0x0504050405040504
DATA q4kWordShuf<>+0x50(SB)/8, $0x0504050405040504
DATA q4kWordShuf<>+0x58(SB)/8, $0x0504050405040504
DATA q4kWordShuf<>+0x60(SB)/8, $0x0706070607060706
DATA q4kWordShuf<>+0x68(SB)/8, $0x0706070607060706
DATA q4kWordShuf<>+0x70(SB)/8, $0x0706070607060706
DATA q4kWordShuf<>+0x78(SB)/8, $0x0706070607060706
DATA q4kWordShuf<>+0x80(SB)/8, $0x0908090809080908
DATA q4kWordShuf<>+0x88(SB)/8, $0x0908090809080908
DATA q4kWordShuf<>+0x90(SB)/8, $0x0908090809080908
DATA q4kWordShuf<>+0x98(SB)/8, $0x0908090809080908
DATA q4kWordShuf<>+0xa0(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA q4kWordShuf<>+0xa8(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA q4kWordShuf<>+0xb0(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA q4kWordShuf<>+0xb8(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA q4kWordShuf<>+0xc0(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA q4kWordShuf<>+0xc8(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA q4kWordShuf<>+0xd0(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA q4kWordShuf<>+0xd8(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA q4kWordShuf<>+0xe0(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA q4kWordShuf<>+0xe8(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA q4kWordShuf<>+0xf0(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA q4kWordShuf<>+0xf8(SB)/8, $0x0f0e0f0e0f0e0f0e
GLOBL q4kWordShuf<>(SB), RODATA|NOPTR, $256

// q4kMinShuf2 turns the 8 mins (bytes, broadcast to both lanes) into words
// m0 m0 m1 m1 ... m7 m7 to meet bsums[0..15] in VPMADDWD.
DATA q4kMinShuf2<>+0x00(SB)/8, $0x8001800180008000
DATA q4kMinShuf2<>+0x08(SB)/8, $0x8003800380028002
DATA q4kMinShuf2<>+0x10(SB)/8, $0x8005800580048004
DATA q4kMinShuf2<>+0x18(SB)/8, $0x8007800780068006
GLOBL q4kMinShuf2<>(SB), RODATA|NOPTR, $32

// q6kByteShuf: control c (16 bytes) repeats scale byte 2c eight times, then
// scale 2c+1 eight times: the scales of the 32 elements of chunk c.
DATA q6kByteShuf<>+0x00(SB)/8, $0x0000000000000000
DATA q6kByteShuf<>+0x08(SB)/8, $0x0101010101010101
DATA q6kByteShuf<>+0x10(SB)/8, $0x0202020202020202
DATA q6kByteShuf<>+0x18(SB)/8, $0x0303030303030303
DATA q6kByteShuf<>+0x20(SB)/8, $0x0404040404040404
DATA q6kByteShuf<>+0x28(SB)/8, $0x0505050505050505
DATA q6kByteShuf<>+0x30(SB)/8, $0x0606060606060606
DATA q6kByteShuf<>+0x38(SB)/8, $0x0707070707070707
DATA q6kByteShuf<>+0x40(SB)/8, $0x0808080808080808
DATA q6kByteShuf<>+0x48(SB)/8, $0x0909090909090909
DATA q6kByteShuf<>+0x50(SB)/8, $0x0a0a0a0a0a0a0a0a
DATA q6kByteShuf<>+0x58(SB)/8, $0x0b0b0b0b0b0b0b0b
DATA q6kByteShuf<>+0x60(SB)/8, $0x0c0c0c0c0c0c0c0c
DATA q6kByteShuf<>+0x68(SB)/8, $0x0d0d0d0d0d0d0d0d
DATA q6kByteShuf<>+0x70(SB)/8, $0x0e0e0e0e0e0e0e0e
DATA q6kByteShuf<>+0x78(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL q6kByteShuf<>(SB), RODATA|NOPTR, $128

// q6kEvenOdd orders the 16 int8 scales of a q6_K block as the even ones,
// then the odd ones, so that VPMOVSXBW puts scale 2k in word k of the low
// lane and scale 2k+1 in word k of the high lane.
DATA q6kEvenOdd<>+0x00(SB)/8, $0x0e0c0a0806040200
DATA q6kEvenOdd<>+0x08(SB)/8, $0x0f0d0b0907050301
GLOBL q6kEvenOdd<>(SB), RODATA|NOPTR, $16

// q6kWordBcast: control k (32 bytes) repeats word k of each lane eight
// times: over the q6kEvenOdd words, scale 2k in the low lane and 2k+1 in
// the high lane, the two scales of chunk k's 32 quants.
DATA q6kWordBcast<>+0x00(SB)/8, $0x0100010001000100
DATA q6kWordBcast<>+0x08(SB)/8, $0x0100010001000100
DATA q6kWordBcast<>+0x10(SB)/8, $0x0100010001000100
DATA q6kWordBcast<>+0x18(SB)/8, $0x0100010001000100
DATA q6kWordBcast<>+0x20(SB)/8, $0x0302030203020302
DATA q6kWordBcast<>+0x28(SB)/8, $0x0302030203020302
DATA q6kWordBcast<>+0x30(SB)/8, $0x0302030203020302
DATA q6kWordBcast<>+0x38(SB)/8, $0x0302030203020302
DATA q6kWordBcast<>+0x40(SB)/8, $0x0504050405040504
DATA q6kWordBcast<>+0x48(SB)/8, $0x0504050405040504
DATA q6kWordBcast<>+0x50(SB)/8, $0x0504050405040504
DATA q6kWordBcast<>+0x58(SB)/8, $0x0504050405040504
DATA q6kWordBcast<>+0x60(SB)/8, $0x0706070607060706
DATA q6kWordBcast<>+0x68(SB)/8, $0x0706070607060706
DATA q6kWordBcast<>+0x70(SB)/8, $0x0706070607060706
DATA q6kWordBcast<>+0x78(SB)/8, $0x0706070607060706
DATA q6kWordBcast<>+0x80(SB)/8, $0x0908090809080908
DATA q6kWordBcast<>+0x88(SB)/8, $0x0908090809080908
DATA q6kWordBcast<>+0x90(SB)/8, $0x0908090809080908
DATA q6kWordBcast<>+0x98(SB)/8, $0x0908090809080908
DATA q6kWordBcast<>+0xa0(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA q6kWordBcast<>+0xa8(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA q6kWordBcast<>+0xb0(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA q6kWordBcast<>+0xb8(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA q6kWordBcast<>+0xc0(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA q6kWordBcast<>+0xc8(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA q6kWordBcast<>+0xd0(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA q6kWordBcast<>+0xd8(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA q6kWordBcast<>+0xe0(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA q6kWordBcast<>+0xe8(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA q6kWordBcast<>+0xf0(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA q6kWordBcast<>+0xf8(SB)/8, $0x0f0e0f0e0f0e0f0e
GLOBL q6kWordBcast<>(SB), RODATA|NOPTR, $256

// func mvQ4KAVX2(w, a []byte, nb, nrows int, out []float32) float32
//
// For nrows consecutive weight rows of nb blocks each, out[r] is the dot
// product of row r with the activations a.
// The q4_K · q8_K dot product of nb blocks, as the Go twin dotQ4_K:
//
//	for s := 0; s < 8; s++ {
//		sc, m := scaleMinK4(s, x[4:16])
//		msum += int32(m) * (q8KBsum(y, 2*s) + q8KBsum(y, 2*s+1))
//		q := x[16+32*(s/2):]
//		shift := 4 * (s % 2)
//		var d int32
//		for l := 0; l < 32; l++ {
//			d += int32(q[l]>>shift&0xf) * int32(int8(y[4+32*s+l]))
//		}
//		isum += int32(sc) * d
//	}
//	dy := q8KScale(y)
//	sum += f16(x)*dy*float32(isum) - f16(x[2:])*dy*float32(msum)
//
// in eight lanes, its float steps per block grouped as
// dy*(f16(x)*isum - f16(x[2:])*msum): d and dmin are broadcast once per
// block, and the activation's dy, the only factor that differs between
// tokens, comes last, so that the multi-token kernels (Q4KX4_SCALE) pay one
// multiply and two fused multiply-adds per token and block, with MatVec's
// bits.
TEXT ·mvQ4KAVX2(SB), NOSPLIT, $8-92
	MOVQ w_base+0(FP), SI
	MOVQ out_base+64(FP), R13
	MOVQ out_len+72(FP), AX
	TESTQ AX, AX
	JNZ mvQ4KAVX2OutOK
	LEAQ scratch-8(SP), R13 // no out (one row): store to the frame
mvQ4KAVX2OutOK:
	MOVQ nrows+56(FP), R12
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	VMOVDQU q4kMinShuf2<>(SB), Y12

q4k2row:
	MOVQ a_base+24(FP), DI
	MOVQ nb+48(FP), CX
	VPXOR Y14, Y14, Y14 // Σ d_a·(d·isum - dmin·msum) lanes

q4k2loop:
	WPREFETCH3
	// Unpack the 12 scale bytes into 8 scales (AX) and 8 mins (R10).
	MOVL 4(SI), AX
	MOVL 8(SI), BX
	MOVL 12(SI), DX
	MOVL DX, R8
	SHRL $4, R8
	ANDL $0x0f0f0f0f, R8
	MOVL BX, R9
	SHRL $6, R9
	ANDL $0x03030303, R9
	SHLL $4, R9
	ORL R9, R8           // mins 4..7
	MOVL BX, R10
	ANDL $0x3f3f3f3f, R10 // mins 0..3
	MOVL DX, R11
	ANDL $0x0f0f0f0f, R11
	MOVL AX, R9
	SHRL $6, R9
	ANDL $0x03030303, R9
	SHLL $4, R9
	ORL R9, R11          // scales 4..7
	ANDL $0x3f3f3f3f, AX // scales 0..3
	SHLQ $32, R11
	ORQ R11, AX
	SHLQ $32, R8
	ORQ R8, R10
	VMOVQ AX, X1
	VPMOVZXBW X1, X1
	VINSERTI128 $1, X1, Y1, Y1 // scales as words, in both lanes
	VMOVQ R10, X2
	VPBROADCASTQ X2, Y2

	// Mins: 8 lanes of m_k·(bsums[2k]+bsums[2k+1]).
	VPSHUFB Y12, Y2, Y2
	VPMADDWD 260(DI), Y2, Y13
	VCVTDQ2PS Y13, Y13
	VCVTPH2PS (SI), X4
	VBROADCASTSS X4, Y6  // d
	VMOVSHDUP X4, X7
	VBROADCASTSS X7, Y7  // dmin

	VPXOR Y10, Y10, Y10

#define Q4K_CHUNK(qoff, aoff, shuf) \
	VMOVDQU qoff(SI), Y8 \
	VPSRLW $4, Y8, Y9 \
	VPAND Y15, Y8, Y8 \
	VPAND Y15, Y9, Y9 \
	VPMADDUBSW aoff(DI), Y8, Y8 \
	VPMADDUBSW (aoff+32)(DI), Y9, Y9 \
	VPSHUFB q4kWordShuf<>+shuf(SB), Y1, Y11 \
	VPMADDWD Y11, Y8, Y8 \
	VPSHUFB q4kWordShuf<>+(shuf+32)(SB), Y1, Y11 \
	VPMADDWD Y11, Y9, Y9 \
	VPADDD Y8, Y10, Y10 \
	VPADDD Y9, Y10, Y10

	Q4K_CHUNK(16, 4, 0)
	Q4K_CHUNK(48, 68, 64)
	Q4K_CHUNK(80, 132, 128)
	Q4K_CHUNK(112, 196, 192)

	VCVTDQ2PS Y10, Y10
	VMULPS Y6, Y10, Y10
	VFNMADD231PS Y7, Y13, Y10 // d·isum - dmin·msum
	VBROADCASTSS (DI), Y5
	VFMADD231PS Y5, Y10, Y14 // acc += d_a·(d·isum - dmin·msum)

	ADDQ $144, SI
	ADDQ $292, DI
	DECQ CX
	JNZ q4k2loop

q4k2done:
	VEXTRACTF128 $1, Y14, X1
	VADDPS X1, X14, X0
	VMOVHLPS X0, X0, X1
	VADDPS X1, X0, X0
	VMOVSHDUP X0, X1
	VADDSS X1, X0, X0
	MOVSS X0, (R13)
	ADDQ $4, R13
	DECQ R12
	JNZ q4k2row
	VZEROUPPER
	MOVSS X0, ret+88(FP) // the last row's result
	RET

// func mvQ6KAVX2(w, a []byte, nb, nrows int, out []float32) float32
//
// For nrows consecutive weight rows of nb blocks each, out[r] is the dot
// product of row r with the activations a.
// The q6_K · q8_K dot product of nb blocks, as the Go twin dotQ6_K:
//
//	for g := 0; g < 16; g++ {
//		hh, p := g/8, g%8/2
//		ql := x[64*hh+32*(p%2):]
//		qh := x[128+32*hh:]
//		var s int32
//		for l := 16 * (g % 2); l < 16*(g%2)+16; l++ {
//			v := int32(ql[l]>>(4*(p/2))&0xf) | int32(qh[l]>>(2*p)&3)<<4
//			s += (v - 32) * int32(int8(y[4+16*g+l%16]))
//		}
//		isum += int32(int8(x[192+g])) * s
//	}
//	sum += f16(x[208:]) * q8KScale(y) * float32(isum)
//
// The quants are used unsigned (0..63) and the -32 is applied once per
// block as -32·Σ scale_g·bsums_g.
TEXT ·mvQ6KAVX2(SB), NOSPLIT, $8-92
	MOVQ w_base+0(FP), SI
	MOVQ out_base+64(FP), R13
	MOVQ out_len+72(FP), AX
	TESTQ AX, AX
	JNZ mvQ6KAVX2OutOK
	LEAQ scratch-8(SP), R13 // no out (one row): store to the frame
mvQ6KAVX2OutOK:
	MOVQ nrows+56(FP), R12
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	MOVL $0x30303030, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14

q6k2row:
	MOVQ a_base+24(FP), DI
	MOVQ nb+48(FP), CX
	VPXOR Y13, Y13, Y13

q6k2loop:
	WPREFETCH4
	VMOVDQU 192(SI), X1 // 16 int8 scales
	VPMOVSXBW X1, Y2
	VPMADDWD 260(DI), Y2, Y3
	VPSLLD $5, Y3, Y3
	VPXOR Y10, Y10, Y10
	VPSUBD Y3, Y10, Y10 // start at -32·Σ scale·bsum

#define Q6K_CHUNK(aoff, shuf) \
	VPMADDUBSW aoff(DI), Y7, Y7 \
	VPSHUFB q6kByteShuf<>+shuf(SB), X1, X8 \
	VPMOVSXBW X8, Y8 \
	VPMADDWD Y8, Y7, Y7 \
	VPADDD Y7, Y10, Y10

#define Q6K_HALF(qloff, qhoff, aoff, shuf) \
	VMOVDQU qloff(SI), Y4 \
	VMOVDQU (qloff+32)(SI), Y5 \
	VMOVDQU qhoff(SI), Y6 \
	VPAND Y15, Y4, Y7 \
	VPSLLW $4, Y6, Y8 \
	VPAND Y14, Y8, Y8 \
	VPOR Y8, Y7, Y7 \
	Q6K_CHUNK(aoff, shuf) \
	VPAND Y15, Y5, Y7 \
	VPSLLW $2, Y6, Y8 \
	VPAND Y14, Y8, Y8 \
	VPOR Y8, Y7, Y7 \
	Q6K_CHUNK(aoff+32, shuf+16) \
	VPSRLW $4, Y4, Y7 \
	VPAND Y15, Y7, Y7 \
	VPAND Y14, Y6, Y8 \
	VPOR Y8, Y7, Y7 \
	Q6K_CHUNK(aoff+64, shuf+32) \
	VPSRLW $4, Y5, Y7 \
	VPAND Y15, Y7, Y7 \
	VPSRLW $2, Y6, Y8 \
	VPAND Y14, Y8, Y8 \
	VPOR Y8, Y7, Y7 \
	Q6K_CHUNK(aoff+96, shuf+48)

	Q6K_HALF(0, 128, 4, 0)
	Q6K_HALF(64, 160, 132, 64)

	VCVTDQ2PS Y10, Y10
	MOVWLZX 208(SI), AX
	VMOVD AX, X4
	VCVTPH2PS X4, X4
	VMULSS (DI), X4, X4
	VBROADCASTSS X4, Y4
	VFMADD231PS Y4, Y10, Y13

	ADDQ $210, SI
	ADDQ $292, DI
	DECQ CX
	JNZ q6k2loop

q6k2done:
	VEXTRACTF128 $1, Y13, X1
	VADDPS X1, X13, X0
	VMOVHLPS X0, X0, X1
	VADDPS X1, X0, X0
	VMOVSHDUP X0, X1
	VADDSS X1, X0, X0
	MOVSS X0, (R13)
	ADDQ $4, R13
	DECQ R12
	JNZ q6k2row
	VZEROUPPER
	MOVSS X0, ret+88(FP) // the last row's result
	RET

// func mvQ8_0AVX2(w, a []byte, nb, nrows int, out []float32) float32
//
// For nrows consecutive weight rows of nb blocks each, out[r] is the dot
// product of row r with the activations a.
// The q8_0 · q8_0 dot product of nb blocks, as the Go twin dotQ8_0:
//
//	for j := 0; j < 32; j++ {
//		s += int32(int8(x[2+j])) * int32(int8(y[2+j]))
//	}
//	sum += f16(x) * f16(y) * float32(s)
//
// VPMADDUBSW needs one unsigned operand: |w| times a with w's sign
// (VPSIGNB), as ggml's mul_sum_i8_pairs.
TEXT ·mvQ8_0AVX2(SB), NOSPLIT, $8-92
	MOVQ w_base+0(FP), SI
	MOVQ out_base+64(FP), R13
	MOVQ out_len+72(FP), AX
	TESTQ AX, AX
	JNZ mvQ8_0AVX2OutOK
	LEAQ scratch-8(SP), R13 // no out (one row): store to the frame
mvQ8_0AVX2OutOK:
	MOVQ nrows+56(FP), R12
	MOVL $0x00010001, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15

q802row:
	MOVQ a_base+24(FP), DI
	MOVQ nb+48(FP), CX
	VPXOR Y0, Y0, Y0

q802loop:
	WPREFETCH1
	VMOVDQU 2(SI), Y1
	VMOVDQU 2(DI), Y2
	VPSIGNB Y1, Y2, Y2
	VPABSB Y1, Y1
	VPMADDUBSW Y2, Y1, Y3
	VPMADDWD Y15, Y3, Y3
	VCVTDQ2PS Y3, Y3
	MOVWLZX (SI), AX
	MOVWLZX (DI), BX
	SHLL $16, BX
	ORL BX, AX
	VMOVD AX, X5
	VCVTPH2PS X5, X5
	VMOVSHDUP X5, X6
	VMULSS X6, X5, X5
	VBROADCASTSS X5, Y5
	VFMADD231PS Y5, Y3, Y0
	ADDQ $34, SI
	ADDQ $34, DI
	DECQ CX
	JNZ q802loop

q802done:
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMOVHLPS X0, X0, X1
	VADDPS X1, X0, X0
	VMOVSHDUP X0, X1
	VADDSS X1, X0, X0
	MOVSS X0, (R13)
	ADDQ $4, R13
	DECQ R12
	JNZ q802row
	VZEROUPPER
	MOVSS X0, ret+88(FP) // the last row's result
	RET

DATA q5kFifth<>+0x00(SB)/8, $0x1010101010101010
DATA q5kFifth<>+0x08(SB)/8, $0x1010101010101010
DATA q5kFifth<>+0x10(SB)/8, $0x1010101010101010
DATA q5kFifth<>+0x18(SB)/8, $0x1010101010101010
GLOBL q5kFifth<>(SB), RODATA|NOPTR, $32

// func mvQ5KAVX2(w, a []byte, nb, nrows int, out []float32) float32
//
// For nrows consecutive weight rows of nb blocks each, out[r] is the dot
// product of row r with the activations a. The q5_K · q8_K dot product, as
// the Go twin dotQ5_K:
//
//	for s := 0; s < 8; s++ {
//		sc, m := scaleMinK4(s, x[4:16])
//		msum += int32(m) * (q8KBsum(y, 2*s) + q8KBsum(y, 2*s+1))
//		q := x[48+32*(s/2):]
//		shift := 4 * (s % 2)
//		var d int32
//		for l := 0; l < 32; l++ {
//			v := int32(q[l]>>shift&0xf) | int32(x[16+l]>>s&1)<<4
//			d += v * int32(int8(y[4+32*s+l]))
//		}
//		isum += int32(sc) * d
//	}
//	dy := q8KScale(y)
//	sum += f16(x)*dy*float32(isum) - f16(x[2:])*dy*float32(msum)
//
// It is mvQ4KAVX2 with the fifth bits shifted to bit 4 and or-ed in (word
// shifts cannot carry a bit into bit 4 of the other byte for these counts),
// its float steps grouped as mvQ4KAVX2's.
TEXT ·mvQ5KAVX2(SB), NOSPLIT, $8-92
	MOVQ w_base+0(FP), SI
	MOVQ out_base+64(FP), R13
	MOVQ out_len+72(FP), AX
	TESTQ AX, AX
	JNZ mvQ5KAVX2OutOK
	LEAQ scratch-8(SP), R13 // no out (one row): store to the frame
mvQ5KAVX2OutOK:
	MOVQ nrows+56(FP), R12
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	VMOVDQU q4kMinShuf2<>(SB), Y12

q5k2row:
	MOVQ a_base+24(FP), DI
	MOVQ nb+48(FP), CX
	VPXOR Y14, Y14, Y14 // Σ d_a·(d·isum - dmin·msum) lanes

q5k2loop:
	WPREFETCH3
	// Unpack the 12 scale bytes into 8 scales (AX) and 8 mins (R10).
	MOVL 4(SI), AX
	MOVL 8(SI), BX
	MOVL 12(SI), DX
	MOVL DX, R8
	SHRL $4, R8
	ANDL $0x0f0f0f0f, R8
	MOVL BX, R9
	SHRL $6, R9
	ANDL $0x03030303, R9
	SHLL $4, R9
	ORL R9, R8           // mins 4..7
	MOVL BX, R10
	ANDL $0x3f3f3f3f, R10 // mins 0..3
	MOVL DX, R11
	ANDL $0x0f0f0f0f, R11
	MOVL AX, R9
	SHRL $6, R9
	ANDL $0x03030303, R9
	SHLL $4, R9
	ORL R9, R11          // scales 4..7
	ANDL $0x3f3f3f3f, AX // scales 0..3
	SHLQ $32, R11
	ORQ R11, AX
	SHLQ $32, R8
	ORQ R8, R10
	VMOVQ AX, X1
	VPMOVZXBW X1, X1
	VINSERTI128 $1, X1, Y1, Y1 // scales as words, in both lanes
	VMOVQ R10, X2
	VPBROADCASTQ X2, Y2

	// Mins: 8 lanes of m_k·(bsums[2k]+bsums[2k+1]).
	VPSHUFB Y12, Y2, Y2
	VPMADDWD 260(DI), Y2, Y13
	VCVTDQ2PS Y13, Y13
	VCVTPH2PS (SI), X4
	VBROADCASTSS X4, Y6  // d
	VMOVSHDUP X4, X7
	VBROADCASTSS X7, Y7  // dmin

	VPXOR Y10, Y10, Y10

	VMOVDQU 16(SI), Y0 // qh: bit s of qh[l] is the fifth bit of element 32s+l

#define Q5K_CHUNK0 \
	VMOVDQU 48(SI), Y8 \
	VPSRLW $4, Y8, Y9 \
	VPAND Y15, Y8, Y8 \
	VPAND Y15, Y9, Y9 \
	VPSLLW $4, Y0, Y2 \
	VPAND q5kFifth<>(SB), Y2, Y2 \
	VPSLLW $3, Y0, Y3 \
	VPAND q5kFifth<>(SB), Y3, Y3 \
	VPOR Y2, Y8, Y8 \
	VPOR Y3, Y9, Y9 \
	VPMADDUBSW 4(DI), Y8, Y8 \
	VPMADDUBSW 36(DI), Y9, Y9 \
	VPSHUFB q4kWordShuf<>+0(SB), Y1, Y11 \
	VPMADDWD Y11, Y8, Y8 \
	VPSHUFB q4kWordShuf<>+32(SB), Y1, Y11 \
	VPMADDWD Y11, Y9, Y9 \
	VPADDD Y8, Y10, Y10 \
	VPADDD Y9, Y10, Y10

	Q5K_CHUNK0

#define Q5K_CHUNK1 \
	VMOVDQU 80(SI), Y8 \
	VPSRLW $4, Y8, Y9 \
	VPAND Y15, Y8, Y8 \
	VPAND Y15, Y9, Y9 \
	VPSLLW $2, Y0, Y2 \
	VPAND q5kFifth<>(SB), Y2, Y2 \
	VPSLLW $1, Y0, Y3 \
	VPAND q5kFifth<>(SB), Y3, Y3 \
	VPOR Y2, Y8, Y8 \
	VPOR Y3, Y9, Y9 \
	VPMADDUBSW 68(DI), Y8, Y8 \
	VPMADDUBSW 100(DI), Y9, Y9 \
	VPSHUFB q4kWordShuf<>+64(SB), Y1, Y11 \
	VPMADDWD Y11, Y8, Y8 \
	VPSHUFB q4kWordShuf<>+96(SB), Y1, Y11 \
	VPMADDWD Y11, Y9, Y9 \
	VPADDD Y8, Y10, Y10 \
	VPADDD Y9, Y10, Y10

	Q5K_CHUNK1

#define Q5K_CHUNK2 \
	VMOVDQU 112(SI), Y8 \
	VPSRLW $4, Y8, Y9 \
	VPAND Y15, Y8, Y8 \
	VPAND Y15, Y9, Y9 \
	VMOVDQU Y0, Y2 \
	VPAND q5kFifth<>(SB), Y2, Y2 \
	VPSRLW $1, Y0, Y3 \
	VPAND q5kFifth<>(SB), Y3, Y3 \
	VPOR Y2, Y8, Y8 \
	VPOR Y3, Y9, Y9 \
	VPMADDUBSW 132(DI), Y8, Y8 \
	VPMADDUBSW 164(DI), Y9, Y9 \
	VPSHUFB q4kWordShuf<>+128(SB), Y1, Y11 \
	VPMADDWD Y11, Y8, Y8 \
	VPSHUFB q4kWordShuf<>+160(SB), Y1, Y11 \
	VPMADDWD Y11, Y9, Y9 \
	VPADDD Y8, Y10, Y10 \
	VPADDD Y9, Y10, Y10

	Q5K_CHUNK2

#define Q5K_CHUNK3 \
	VMOVDQU 144(SI), Y8 \
	VPSRLW $4, Y8, Y9 \
	VPAND Y15, Y8, Y8 \
	VPAND Y15, Y9, Y9 \
	VPSRLW $2, Y0, Y2 \
	VPAND q5kFifth<>(SB), Y2, Y2 \
	VPSRLW $3, Y0, Y3 \
	VPAND q5kFifth<>(SB), Y3, Y3 \
	VPOR Y2, Y8, Y8 \
	VPOR Y3, Y9, Y9 \
	VPMADDUBSW 196(DI), Y8, Y8 \
	VPMADDUBSW 228(DI), Y9, Y9 \
	VPSHUFB q4kWordShuf<>+192(SB), Y1, Y11 \
	VPMADDWD Y11, Y8, Y8 \
	VPSHUFB q4kWordShuf<>+224(SB), Y1, Y11 \
	VPMADDWD Y11, Y9, Y9 \
	VPADDD Y8, Y10, Y10 \
	VPADDD Y9, Y10, Y10

	Q5K_CHUNK3


	VCVTDQ2PS Y10, Y10
	VMULPS Y6, Y10, Y10
	VFNMADD231PS Y7, Y13, Y10 // d·isum - dmin·msum
	VBROADCASTSS (DI), Y5
	VFMADD231PS Y5, Y10, Y14 // acc += d_a·(d·isum - dmin·msum)

	ADDQ $176, SI
	ADDQ $292, DI
	DECQ CX
	JNZ q5k2loop

q5k2done:
	VEXTRACTF128 $1, Y14, X1
	VADDPS X1, X14, X0
	VMOVHLPS X0, X0, X1
	VADDPS X1, X0, X0
	VMOVSHDUP X0, X1
	VADDSS X1, X0, X0
	MOVSS X0, (R13)
	ADDQ $4, R13
	DECQ R12
	JNZ q5k2row
	VZEROUPPER
	MOVSS X0, ret+88(FP) // the last row's result
	RET

// func mvF16AVX2(w, a []byte, nb, nrows int, out []float32) float32
//
// For nrows rows of nb·32 f16 weights, out[r] is the dot product with nb·32
// f16 activations, as the Go twin dotF16:
//
//	for i := 0; i < n; i++ {
//		sum += f16(w[2*i:]) * f16(a[2*i:])
//	}
//
// Widened exactly with VCVTPH2PS; products exact in float32, summed with FMA
// in four accumulators.
TEXT ·mvF16AVX2(SB), NOSPLIT, $8-92
	MOVQ w_base+0(FP), SI
	MOVQ out_base+64(FP), R13
	MOVQ out_len+72(FP), AX
	TESTQ AX, AX
	JNZ mvF16AVX2OutOK
	LEAQ scratch-8(SP), R13 // no out (one row): store to the frame
mvF16AVX2OutOK:
	MOVQ nrows+56(FP), R12

f162row:
	MOVQ a_base+24(FP), DI
	MOVQ nb+48(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

f162loop:
	VCVTPH2PS 0(SI), Y4
	VCVTPH2PS 0(DI), Y5
	VFMADD231PS Y5, Y4, Y0
	VCVTPH2PS 16(SI), Y6
	VCVTPH2PS 16(DI), Y7
	VFMADD231PS Y7, Y6, Y1
	VCVTPH2PS 32(SI), Y4
	VCVTPH2PS 32(DI), Y5
	VFMADD231PS Y5, Y4, Y2
	VCVTPH2PS 48(SI), Y6
	VCVTPH2PS 48(DI), Y7
	VFMADD231PS Y7, Y6, Y3
	ADDQ $64, SI
	ADDQ $64, DI
	DECQ CX
	JNZ f162loop

	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMOVHLPS X0, X0, X1
	VADDPS X1, X0, X0
	VMOVSHDUP X0, X1
	VADDSS X1, X0, X0
	MOVSS X0, (R13)
	ADDQ $4, R13
	DECQ R12
	JNZ f162row
	VZEROUPPER
	MOVSS X0, ret+88(FP) // the last row's result
	RET

// func mvBF16AVX2(w, a []byte, nb, nrows int, out []float32) float32
//
// For nrows rows of nb·32 bf16 weights, out[r] is the dot product with
// nb·32 bf16 activations, as the Go twin dotBF16:
//
//	for i := 0; i < n; i++ {
//		x := math.Float32frombits(uint32(binary.LittleEndian.Uint16(w[2*i:])) << 16)
//		y := math.Float32frombits(uint32(binary.LittleEndian.Uint16(a[2*i:])) << 16)
//		sum += x * y
//	}
TEXT ·mvBF16AVX2(SB), NOSPLIT, $8-92
	MOVQ w_base+0(FP), SI
	MOVQ out_base+64(FP), R13
	MOVQ out_len+72(FP), AX
	TESTQ AX, AX
	JNZ mvBF16AVX2OutOK
	LEAQ scratch-8(SP), R13 // no out (one row): store to the frame
mvBF16AVX2OutOK:
	MOVQ nrows+56(FP), R12

bf162row:
	MOVQ a_base+24(FP), DI
	MOVQ nb+48(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1

#define BF16_8(off, ACC) \
	VPMOVZXWD off(SI), Y4 \
	VPSLLD $16, Y4, Y4 \
	VPMOVZXWD off(DI), Y5 \
	VPSLLD $16, Y5, Y5 \
	VFMADD231PS Y5, Y4, ACC

bf162loop:
	BF16_8(0, Y0)
	BF16_8(16, Y1)
	BF16_8(32, Y0)
	BF16_8(48, Y1)
	ADDQ $64, SI
	ADDQ $64, DI
	DECQ CX
	JNZ bf162loop

	VADDPS Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMOVHLPS X0, X0, X1
	VADDPS X1, X0, X0
	VMOVSHDUP X0, X1
	VADDSS X1, X0, X0
	MOVSS X0, (R13)
	ADDQ $4, R13
	DECQ R12
	JNZ bf162row
	VZEROUPPER
	MOVSS X0, ret+88(FP) // the last row's result
	RET

// Q4KX_SCALES unpacks the 12 scale bytes of the q4_K (or q5_K) block at SI,
// as mvQ4KAVX2 does: its 8 scales as words in both lanes of Y14 and its 8
// mins as bytes in BX (AX, DX, R8 and R9 are clobbered).
#define Q4KX_SCALES \
	MOVL 4(SI), AX \
	MOVL 8(SI), BX \
	MOVL 12(SI), DX \
	MOVL DX, R8 \
	SHRL $4, R8 \
	ANDL $0x0f0f0f0f, R8 \
	MOVL BX, R9 \
	SHRL $6, R9 \
	ANDL $0x03030303, R9 \
	SHLL $4, R9 \
	ORL R9, R8 \
	ANDL $0x0f0f0f0f, DX \
	MOVL AX, R9 \
	SHRL $6, R9 \
	ANDL $0x03030303, R9 \
	SHLL $4, R9 \
	ORL R9, DX \
	ANDL $0x3f3f3f3f, BX \
	ANDL $0x3f3f3f3f, AX \
	SHLQ $32, DX \
	ORQ DX, AX \
	SHLQ $32, R8 \
	ORQ R8, BX \
	VMOVQ AX, X14 \
	VPMOVZXBW X14, X14 \
	VINSERTI128 $1, X14, Y14, Y14

// Q4KX_NIBBLES splits the 32 bytes at qoff(SI) into their low nibbles (Y8)
// and high nibbles (Y9), and broadcasts the words of the two sub-blocks'
// scales from Y14 (Y10, Y11; control shuf of q4kWordShuf).
#define Q4KX_NIBBLES(qoff, shuf) \
	VMOVDQU qoff(SI), Y8 \
	VPSRLW $4, Y8, Y9 \
	VPAND Y15, Y8, Y8 \
	VPAND Y15, Y9, Y9 \
	VPSHUFB q4kWordShuf<>+shuf(SB), Y14, Y10 \
	VPSHUFB q4kWordShuf<>+(shuf+32)(SB), Y14, Y11

// func matQ4KAVX2x4(w, a []byte, astride, nb int, out *float32, ostride int)
//
// One q4_K weight row of nb blocks times four q8_K activation rows (astride
// bytes apart) into four floats ostride bytes apart from out:
// out[t] = dotQ4_K(w, a[t*astride:]), as mvQ4KAVX2 computes
// it for one. Each 32-byte chunk of nibbles is unpacked once and meets the
// four tokens, which makes a batched prefill cheaper per token than decode.
TEXT ·matQ4KAVX2x4(SB), NOSPLIT, $0-80
	MOVQ w_base+0(FP), SI
	MOVQ a_base+24(FP), DI
	MOVQ astride+48(FP), R13
	MOVQ nb+56(FP), CX
	LEAQ (DI)(R13*1), R10
	LEAQ (DI)(R13*2), R11
	LEAQ (R10)(R13*2), R12
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7

#define Q4KX4_TOK(aoff, P, ACC) \
	VPMADDUBSW aoff(P), Y8, Y12 \
	VPMADDWD Y10, Y12, Y12 \
	VPADDD Y12, ACC, ACC \
	VPMADDUBSW (aoff+32)(P), Y9, Y13 \
	VPMADDWD Y11, Y13, Y13 \
	VPADDD Y13, ACC, ACC

// Q4KX4_TOK0 is Q4KX4_TOK for a block's first chunk: it starts the token's
// accumulator instead of adding to it.
#define Q4KX4_TOK0(aoff, P, ACC) \
	VPMADDUBSW aoff(P), Y8, Y12 \
	VPMADDWD Y10, Y12, Y12 \
	VPMADDUBSW (aoff+32)(P), Y9, Y13 \
	VPMADDWD Y11, Y13, Y13 \
	VPADDD Y13, Y12, ACC

// Q4KX_DMIN readies a block's scaling after its quants: the mins from BX as
// word pairs (Y8) for the q8_K bsums, d broadcast in Y10 and dmin in Y11.
#define Q4KX_DMIN \
	VMOVQ BX, X8 \
	VPBROADCASTQ X8, Y8 \
	VPSHUFB q4kMinShuf2<>(SB), Y8, Y8 \
	VCVTPH2PS (SI), X9 \
	VBROADCASTSS X9, Y10 \
	VMOVSHDUP X9, X11 \
	VBROADCASTSS X11, Y11

// Q4KX4_SCALE adds the block's d_a·(d·isum - dmin·msum) lanes to the token's
// float accumulator FACC, in mvQ4KAVX2's order, so that each token gets
// MatVec's bits. d_a is the one factor that differs between the tokens: it
// is broadcast from memory (a load, no shuffle), and d and dmin are
// broadcast once for all of them by Q4KX_DMIN.
#define Q4KX4_SCALE(P, IACC, FACC) \
	VPMADDWD 260(P), Y8, Y12 \
	VCVTDQ2PS Y12, Y12 \
	VCVTDQ2PS IACC, IACC \
	VMULPS Y10, IACC, IACC \
	VFNMADD231PS Y11, Y12, IACC \
	VBROADCASTSS (P), Y13 \
	VFMADD231PS Y13, IACC, FACC

q4k2x4loop:
	WPREFETCH3
	Q4KX_SCALES

	Q4KX_NIBBLES(16, 0)
	Q4KX4_TOK0(4, DI, Y0)
	Q4KX4_TOK0(4, R10, Y1)
	Q4KX4_TOK0(4, R11, Y2)
	Q4KX4_TOK0(4, R12, Y3)
	Q4KX_NIBBLES(48, 64)
	Q4KX4_TOK(68, DI, Y0)
	Q4KX4_TOK(68, R10, Y1)
	Q4KX4_TOK(68, R11, Y2)
	Q4KX4_TOK(68, R12, Y3)
	Q4KX_NIBBLES(80, 128)
	Q4KX4_TOK(132, DI, Y0)
	Q4KX4_TOK(132, R10, Y1)
	Q4KX4_TOK(132, R11, Y2)
	Q4KX4_TOK(132, R12, Y3)
	Q4KX_NIBBLES(112, 192)
	Q4KX4_TOK(196, DI, Y0)
	Q4KX4_TOK(196, R10, Y1)
	Q4KX4_TOK(196, R11, Y2)
	Q4KX4_TOK(196, R12, Y3)

	Q4KX_DMIN
	Q4KX4_SCALE(DI, Y0, Y4)
	Q4KX4_SCALE(R10, Y1, Y5)
	Q4KX4_SCALE(R11, Y2, Y6)
	Q4KX4_SCALE(R12, Y3, Y7)

	ADDQ $144, SI
	ADDQ $292, DI
	ADDQ $292, R10
	ADDQ $292, R11
	ADDQ $292, R12
	DECQ CX
	JNZ q4k2x4loop

	MOVQ out+64(FP), AX
	MOVQ ostride+72(FP), BX

#define HSUM2_STORE(YACC, XACC) \
	VEXTRACTF128 $1, YACC, X1 \
	VADDPS X1, XACC, X0 \
	VMOVHLPS X0, X0, X1 \
	VADDPS X1, X0, X0 \
	VMOVSHDUP X0, X1 \
	VADDSS X1, X0, X0 \
	MOVSS X0, (AX) \
	ADDQ BX, AX

	HSUM2_STORE(Y4, X4)
	HSUM2_STORE(Y5, X5)
	HSUM2_STORE(Y6, X6)
	HSUM2_STORE(Y7, X7)
	VZEROUPPER
	RET

// The four ways a chunk of 32 q6_K quants is assembled from its 4-bit part
// (qloff(SI)) and its 2-bit part (qhoff(SI)) into Y8 (0..63), with its two
// scales as words in Y9 (chunk k = shuf/16: control k of q6kWordBcast over
// the scale words in Y13, ordered by q6kEvenOdd): low nibbles with the 2-bit field shifted up by sh (4 or 2); high
// nibbles with the field in place; high nibbles with the field shifted down
// by 2. Each is followed by the tokens' Q6KX4_TOK.
#define Q6KX_LOW(qloff, qhoff, sh, shuf) \
	VMOVDQU qloff(SI), Y8 \
	VPAND Y15, Y8, Y8 \
	VMOVDQU qhoff(SI), Y11 \
	VPSLLW $sh, Y11, Y11 \
	VPAND Y14, Y11, Y11 \
	VPOR Y11, Y8, Y8 \
	VPSHUFB q6kWordBcast<>+(2*shuf)(SB), Y13, Y9

#define Q6KX_HIGH(qloff, qhoff, shuf) \
	VMOVDQU qloff(SI), Y8 \
	VPSRLW $4, Y8, Y8 \
	VPAND Y15, Y8, Y8 \
	VMOVDQU qhoff(SI), Y11 \
	VPAND Y14, Y11, Y11 \
	VPOR Y11, Y8, Y8 \
	VPSHUFB q6kWordBcast<>+(2*shuf)(SB), Y13, Y9

#define Q6KX_HIGHSHR2(qloff, qhoff, shuf) \
	VMOVDQU qloff(SI), Y8 \
	VPSRLW $4, Y8, Y8 \
	VPAND Y15, Y8, Y8 \
	VMOVDQU qhoff(SI), Y11 \
	VPSRLW $2, Y11, Y11 \
	VPAND Y14, Y11, Y11 \
	VPOR Y11, Y8, Y8 \
	VPSHUFB q6kWordBcast<>+(2*shuf)(SB), Y13, Y9

// func matQ6KAVX2x4(w, a []byte, astride, nb int, out *float32, ostride int)
//
// One q6_K weight row of nb blocks times four q8_K activation rows (astride
// bytes apart) into four floats ostride bytes apart from out:
// out[t] = dotQ6_K(w, a[t*astride:]), as mvQ6KAVX2 computes
// it for one. Each chunk of 32 quants is unpacked once and meets the four
// tokens.
TEXT ·matQ6KAVX2x4(SB), NOSPLIT, $0-80
	MOVQ w_base+0(FP), SI
	MOVQ a_base+24(FP), DI
	MOVQ astride+48(FP), R13
	MOVQ nb+56(FP), CX
	LEAQ (DI)(R13*1), R10
	LEAQ (DI)(R13*2), R11
	LEAQ (R10)(R13*2), R12
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	MOVL $0x30303030, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7

#define Q6KX4_TOK(aoff, P, ACC) \
	VPMADDUBSW aoff(P), Y8, Y10 \
	VPMADDWD Y9, Y10, Y10 \
	VPADDD Y10, ACC, ACC

#define Q6KX4_START(P, ACC) \
	VPMADDWD 260(P), Y13, Y10 \
	VPSLLD $5, Y10, Y10 \
	VPXOR ACC, ACC, ACC \
	VPSUBD Y10, ACC, ACC

#define Q6KX4_SCALE(P, IACC, FACC) \
	VCVTDQ2PS IACC, IACC \
	VMULSS (P), X13, X10 \
	VBROADCASTSS X10, Y10 \
	VFMADD231PS Y10, IACC, FACC

q6k2x4loop:
	WPREFETCH4
	VMOVDQU 192(SI), X12 // 16 int8 scales
	VPMOVSXBW X12, Y13
	Q6KX4_START(DI, Y0)
	Q6KX4_START(R10, Y1)
	Q6KX4_START(R11, Y2)
	Q6KX4_START(R12, Y3)
	VPSHUFB q6kEvenOdd<>(SB), X12, X9
	VPMOVSXBW X9, Y13 // scales as words for the chunks (q6kWordBcast)

	Q6KX_LOW(0, 128, 4, 0)
	Q6KX4_TOK(4, DI, Y0)
	Q6KX4_TOK(4, R10, Y1)
	Q6KX4_TOK(4, R11, Y2)
	Q6KX4_TOK(4, R12, Y3)
	Q6KX_LOW(32, 128, 2, 16)
	Q6KX4_TOK(36, DI, Y0)
	Q6KX4_TOK(36, R10, Y1)
	Q6KX4_TOK(36, R11, Y2)
	Q6KX4_TOK(36, R12, Y3)
	Q6KX_HIGH(0, 128, 32)
	Q6KX4_TOK(68, DI, Y0)
	Q6KX4_TOK(68, R10, Y1)
	Q6KX4_TOK(68, R11, Y2)
	Q6KX4_TOK(68, R12, Y3)
	Q6KX_HIGHSHR2(32, 128, 48)
	Q6KX4_TOK(100, DI, Y0)
	Q6KX4_TOK(100, R10, Y1)
	Q6KX4_TOK(100, R11, Y2)
	Q6KX4_TOK(100, R12, Y3)
	Q6KX_LOW(64, 160, 4, 64)
	Q6KX4_TOK(132, DI, Y0)
	Q6KX4_TOK(132, R10, Y1)
	Q6KX4_TOK(132, R11, Y2)
	Q6KX4_TOK(132, R12, Y3)
	Q6KX_LOW(96, 160, 2, 80)
	Q6KX4_TOK(164, DI, Y0)
	Q6KX4_TOK(164, R10, Y1)
	Q6KX4_TOK(164, R11, Y2)
	Q6KX4_TOK(164, R12, Y3)
	Q6KX_HIGH(64, 160, 96)
	Q6KX4_TOK(196, DI, Y0)
	Q6KX4_TOK(196, R10, Y1)
	Q6KX4_TOK(196, R11, Y2)
	Q6KX4_TOK(196, R12, Y3)
	Q6KX_HIGHSHR2(96, 160, 112)
	Q6KX4_TOK(228, DI, Y0)
	Q6KX4_TOK(228, R10, Y1)
	Q6KX4_TOK(228, R11, Y2)
	Q6KX4_TOK(228, R12, Y3)

	MOVWLZX 208(SI), AX
	VMOVD AX, X13
	VCVTPH2PS X13, X13
	Q6KX4_SCALE(DI, Y0, Y4)
	Q6KX4_SCALE(R10, Y1, Y5)
	Q6KX4_SCALE(R11, Y2, Y6)
	Q6KX4_SCALE(R12, Y3, Y7)

	ADDQ $210, SI
	ADDQ $292, DI
	ADDQ $292, R10
	ADDQ $292, R11
	ADDQ $292, R12
	DECQ CX
	JNZ q6k2x4loop

	MOVQ out+64(FP), AX
	MOVQ ostride+72(FP), BX
	HSUM2_STORE(Y4, X4)
	HSUM2_STORE(Y5, X5)
	HSUM2_STORE(Y6, X6)
	HSUM2_STORE(Y7, X7)
	VZEROUPPER
	RET

// func mvF32AVX2(w, a []byte, nb, nrows int, out []float32) float32
//
// For nrows rows of nb·32 f32 weights, out[r] is the dot product with nb·32
// f32 activations, as the Go twin dotF32:
//
//	for i := 0; i < n; i++ {
//		sum += x[i] * y[i]
//	}
//
// summed with FMA in four accumulators of 8 lanes.
TEXT ·mvF32AVX2(SB), NOSPLIT, $8-92
	MOVQ w_base+0(FP), SI
	MOVQ out_base+64(FP), R13
	MOVQ out_len+72(FP), AX
	TESTQ AX, AX
	JNZ f322OutOK
	LEAQ scratch-8(SP), R13 // no out (one row): store to the frame
f322OutOK:
	MOVQ nrows+56(FP), R12

f322row:
	MOVQ a_base+24(FP), DI
	MOVQ nb+48(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

f322loop:
	VMOVUPS 0(SI), Y4
	VFMADD231PS 0(DI), Y4, Y0
	VMOVUPS 32(SI), Y5
	VFMADD231PS 32(DI), Y5, Y1
	VMOVUPS 64(SI), Y6
	VFMADD231PS 64(DI), Y6, Y2
	VMOVUPS 96(SI), Y7
	VFMADD231PS 96(DI), Y7, Y3
	ADDQ $128, SI
	ADDQ $128, DI
	DECQ CX
	JNZ f322loop

	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMOVHLPS X0, X0, X1
	VADDPS X1, X0, X0
	VMOVSHDUP X0, X1
	VADDSS X1, X0, X0
	MOVSS X0, (R13)
	ADDQ $4, R13
	DECQ R12
	JNZ f322row
	VZEROUPPER
	MOVSS X0, ret+88(FP) // the last row's result
	RET

DATA q3kThirtyTwo<>+0x00(SB)/8, $0x2020202020202020
DATA q3kThirtyTwo<>+0x08(SB)/8, $0x2020202020202020
GLOBL q3kThirtyTwo<>(SB), RODATA|NOPTR, $16

// func mvQ2KAVX2(w, a []byte, nb, nrows int, out []float32) float32
//
// For nrows consecutive weight rows of nb blocks each, out[r] is the dot
// product of row r with the activations a. The q2_K · q8_K dot product, as
// the Go twin dotQ2_K:
//
//	for g := 0; g < 16; g++ {
//		msum += int32(x[g]>>4) * q8KBsum(y, g)
//	}
//	for e0 := 0; e0 < 256; e0 += 16 {
//		k, j, h := e0/128, e0%128/32, e0%32/16
//		q := x[16+32*k+16*h:]
//		var s int32
//		for l := 0; l < 16; l++ {
//			s += int32(q[l]>>(2*j)&3) * int32(int8(y[4+e0+l]))
//		}
//		isum += int32(x[e0/16]&0xf) * s
//	}
//	dy := q8KScale(y)
//	sum += dy*f16(x[80:])*float32(isum) - dy*f16(x[82:])*float32(msum)
TEXT ·mvQ2KAVX2(SB), NOSPLIT, $8-92
	MOVQ w_base+0(FP), SI
	MOVQ out_base+64(FP), R13
	MOVQ out_len+72(FP), AX
	TESTQ AX, AX
	JNZ q2k2OutOK
	LEAQ scratch-8(SP), R13 // no out (one row): store to the frame
q2k2OutOK:
	MOVQ nrows+56(FP), R12
	MOVL $0x03030303, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14

q2k2row:
	MOVQ a_base+24(FP), DI
	MOVQ nb+48(FP), CX
	VXORPS Y11, Y11, Y11 // Σ d·isum lanes
	VXORPS Y12, Y12, Y12 // Σ dmin·msum lanes

q2k2loop:
	VMOVDQU 0(SI), X2
	VPAND X14, X2, X1 // 16 scales
	VPSRLW $4, X2, X2
	VPAND X14, X2, X2 // 16 mins
	VPMOVZXBW X2, Y2
	VPMADDWD 260(DI), Y2, Y3
	VCVTDQ2PS Y3, Y3
	VCVTPH2PS 80(SI), X4 // d, dmin
	VBROADCASTSS (DI), X5
	VMULPS X5, X4, X4
	VBROADCASTSS X4, Y6
	VMOVSHDUP X4, X7
	VBROADCASTSS X7, Y7
	VFMADD231PS Y7, Y3, Y12
	VPXOR Y10, Y10, Y10

	VMOVDQU 16(SI), Y8
	VPAND Y15, Y8, Y8
	VPMADDUBSW 4(DI), Y8, Y8
	VPSHUFB q6kByteShuf<>+0(SB), X1, X9
	VPMOVZXBW X9, Y9
	VPMADDWD Y9, Y8, Y8
	VPADDD Y8, Y10, Y10
	VMOVDQU 16(SI), Y8
	VPSRLW $2, Y8, Y8
	VPAND Y15, Y8, Y8
	VPMADDUBSW 36(DI), Y8, Y8
	VPSHUFB q6kByteShuf<>+16(SB), X1, X9
	VPMOVZXBW X9, Y9
	VPMADDWD Y9, Y8, Y8
	VPADDD Y8, Y10, Y10
	VMOVDQU 16(SI), Y8
	VPSRLW $4, Y8, Y8
	VPAND Y15, Y8, Y8
	VPMADDUBSW 68(DI), Y8, Y8
	VPSHUFB q6kByteShuf<>+32(SB), X1, X9
	VPMOVZXBW X9, Y9
	VPMADDWD Y9, Y8, Y8
	VPADDD Y8, Y10, Y10
	VMOVDQU 16(SI), Y8
	VPSRLW $6, Y8, Y8
	VPAND Y15, Y8, Y8
	VPMADDUBSW 100(DI), Y8, Y8
	VPSHUFB q6kByteShuf<>+48(SB), X1, X9
	VPMOVZXBW X9, Y9
	VPMADDWD Y9, Y8, Y8
	VPADDD Y8, Y10, Y10
	VMOVDQU 48(SI), Y8
	VPAND Y15, Y8, Y8
	VPMADDUBSW 132(DI), Y8, Y8
	VPSHUFB q6kByteShuf<>+64(SB), X1, X9
	VPMOVZXBW X9, Y9
	VPMADDWD Y9, Y8, Y8
	VPADDD Y8, Y10, Y10
	VMOVDQU 48(SI), Y8
	VPSRLW $2, Y8, Y8
	VPAND Y15, Y8, Y8
	VPMADDUBSW 164(DI), Y8, Y8
	VPSHUFB q6kByteShuf<>+80(SB), X1, X9
	VPMOVZXBW X9, Y9
	VPMADDWD Y9, Y8, Y8
	VPADDD Y8, Y10, Y10
	VMOVDQU 48(SI), Y8
	VPSRLW $4, Y8, Y8
	VPAND Y15, Y8, Y8
	VPMADDUBSW 196(DI), Y8, Y8
	VPSHUFB q6kByteShuf<>+96(SB), X1, X9
	VPMOVZXBW X9, Y9
	VPMADDWD Y9, Y8, Y8
	VPADDD Y8, Y10, Y10
	VMOVDQU 48(SI), Y8
	VPSRLW $6, Y8, Y8
	VPAND Y15, Y8, Y8
	VPMADDUBSW 228(DI), Y8, Y8
	VPSHUFB q6kByteShuf<>+112(SB), X1, X9
	VPMOVZXBW X9, Y9
	VPMADDWD Y9, Y8, Y8
	VPADDD Y8, Y10, Y10

	VCVTDQ2PS Y10, Y10
	VFMADD231PS Y6, Y10, Y11

	ADDQ $84, SI
	ADDQ $292, DI
	DECQ CX
	JNZ q2k2loop

	VSUBPS Y12, Y11, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMOVHLPS X0, X0, X1
	VADDPS X1, X0, X0
	VMOVSHDUP X0, X1
	VADDSS X1, X0, X0
	MOVSS X0, (R13)
	ADDQ $4, R13
	DECQ R12
	JNZ q2k2row
	VZEROUPPER
	MOVSS X0, ret+88(FP) // the last row's result
	RET

// func mvQ3KAVX2(w, a []byte, nb, nrows int, out []float32) float32
//
// For nrows consecutive weight rows of nb blocks each, out[r] is the dot
// product of row r with the activations a. The q3_K · q8_K dot product, as
// the Go twin dotQ3_K (quoted at mvQ3KAVX512): the quants are used
// unsigned, v+4 in 0..7, and the -4 is applied once per block as
// -4·Σ scale_g·bsums_g.
TEXT ·mvQ3KAVX2(SB), NOSPLIT, $8-92
	MOVQ w_base+0(FP), SI
	MOVQ out_base+64(FP), R13
	MOVQ out_len+72(FP), AX
	TESTQ AX, AX
	JNZ q3k2OutOK
	LEAQ scratch-8(SP), R13 // no out (one row): store to the frame
q3k2OutOK:
	MOVQ nrows+56(FP), R12
	MOVL $0x03030303, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	MOVL $0x01010101, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14

q3k2row:
	MOVQ a_base+24(FP), DI
	MOVQ nb+48(FP), CX
	VXORPS Y11, Y11, Y11

q3k2loop:
	// The 16 6-bit scales (ggml's kmask1/kmask2 unpacking), minus 32.
	MOVL 96(SI), AX
	MOVL 100(SI), BX
	MOVL 104(SI), DX
	MOVL AX, R8
	SHRL $4, R8
	ANDL $0x0f0f0f0f, R8
	MOVL DX, R9
	SHRL $4, R9
	ANDL $0x03030303, R9
	SHLL $4, R9
	ORL R9, R8 // scales 8..11
	MOVL BX, R10
	SHRL $4, R10
	ANDL $0x0f0f0f0f, R10
	MOVL DX, R9
	SHRL $6, R9
	ANDL $0x03030303, R9
	SHLL $4, R9
	ORL R9, R10 // scales 12..15
	ANDL $0x0f0f0f0f, AX
	MOVL DX, R9
	ANDL $0x03030303, R9
	SHLL $4, R9
	ORL R9, AX // scales 0..3
	ANDL $0x0f0f0f0f, BX
	MOVL DX, R9
	SHRL $2, R9
	ANDL $0x03030303, R9
	SHLL $4, R9
	ORL R9, BX // scales 4..7
	SHLQ $32, BX
	ORQ BX, AX
	SHLQ $32, R10
	ORQ R10, R8
	VMOVQ AX, X12
	VPINSRQ $1, R8, X12, X12
	VPSUBB q3kThirtyTwo<>(SB), X12, X12 // 16 signed scales
	VPMOVSXBW X12, Y13
	VPMADDWD 260(DI), Y13, Y3
	VPSLLD $2, Y3, Y3
	VPXOR Y10, Y10, Y10
	VPSUBD Y3, Y10, Y10 // start at -4·Σ scale·bsum

	VMOVDQU 32(SI), Y8
	VPAND Y15, Y8, Y8
	VMOVDQU 0(SI), Y7
	VPAND Y14, Y7, Y7
	VPSLLW $2, Y7, Y7
	VPOR Y7, Y8, Y8
	VPMADDUBSW 4(DI), Y8, Y8
	VPSHUFB q6kByteShuf<>+0(SB), X12, X9
	VPMOVSXBW X9, Y9
	VPMADDWD Y9, Y8, Y8
	VPADDD Y8, Y10, Y10
	VMOVDQU 32(SI), Y8
	VPSRLW $2, Y8, Y8
	VPAND Y15, Y8, Y8
	VMOVDQU 0(SI), Y7
	VPSRLW $1, Y7, Y7
	VPAND Y14, Y7, Y7
	VPSLLW $2, Y7, Y7
	VPOR Y7, Y8, Y8
	VPMADDUBSW 36(DI), Y8, Y8
	VPSHUFB q6kByteShuf<>+16(SB), X12, X9
	VPMOVSXBW X9, Y9
	VPMADDWD Y9, Y8, Y8
	VPADDD Y8, Y10, Y10
	VMOVDQU 32(SI), Y8
	VPSRLW $4, Y8, Y8
	VPAND Y15, Y8, Y8
	VMOVDQU 0(SI), Y7
	VPSRLW $2, Y7, Y7
	VPAND Y14, Y7, Y7
	VPSLLW $2, Y7, Y7
	VPOR Y7, Y8, Y8
	VPMADDUBSW 68(DI), Y8, Y8
	VPSHUFB q6kByteShuf<>+32(SB), X12, X9
	VPMOVSXBW X9, Y9
	VPMADDWD Y9, Y8, Y8
	VPADDD Y8, Y10, Y10
	VMOVDQU 32(SI), Y8
	VPSRLW $6, Y8, Y8
	VPAND Y15, Y8, Y8
	VMOVDQU 0(SI), Y7
	VPSRLW $3, Y7, Y7
	VPAND Y14, Y7, Y7
	VPSLLW $2, Y7, Y7
	VPOR Y7, Y8, Y8
	VPMADDUBSW 100(DI), Y8, Y8
	VPSHUFB q6kByteShuf<>+48(SB), X12, X9
	VPMOVSXBW X9, Y9
	VPMADDWD Y9, Y8, Y8
	VPADDD Y8, Y10, Y10
	VMOVDQU 64(SI), Y8
	VPAND Y15, Y8, Y8
	VMOVDQU 0(SI), Y7
	VPSRLW $4, Y7, Y7
	VPAND Y14, Y7, Y7
	VPSLLW $2, Y7, Y7
	VPOR Y7, Y8, Y8
	VPMADDUBSW 132(DI), Y8, Y8
	VPSHUFB q6kByteShuf<>+64(SB), X12, X9
	VPMOVSXBW X9, Y9
	VPMADDWD Y9, Y8, Y8
	VPADDD Y8, Y10, Y10
	VMOVDQU 64(SI), Y8
	VPSRLW $2, Y8, Y8
	VPAND Y15, Y8, Y8
	VMOVDQU 0(SI), Y7
	VPSRLW $5, Y7, Y7
	VPAND Y14, Y7, Y7
	VPSLLW $2, Y7, Y7
	VPOR Y7, Y8, Y8
	VPMADDUBSW 164(DI), Y8, Y8
	VPSHUFB q6kByteShuf<>+80(SB), X12, X9
	VPMOVSXBW X9, Y9
	VPMADDWD Y9, Y8, Y8
	VPADDD Y8, Y10, Y10
	VMOVDQU 64(SI), Y8
	VPSRLW $4, Y8, Y8
	VPAND Y15, Y8, Y8
	VMOVDQU 0(SI), Y7
	VPSRLW $6, Y7, Y7
	VPAND Y14, Y7, Y7
	VPSLLW $2, Y7, Y7
	VPOR Y7, Y8, Y8
	VPMADDUBSW 196(DI), Y8, Y8
	VPSHUFB q6kByteShuf<>+96(SB), X12, X9
	VPMOVSXBW X9, Y9
	VPMADDWD Y9, Y8, Y8
	VPADDD Y8, Y10, Y10
	VMOVDQU 64(SI), Y8
	VPSRLW $6, Y8, Y8
	VPAND Y15, Y8, Y8
	VMOVDQU 0(SI), Y7
	VPSRLW $7, Y7, Y7
	VPAND Y14, Y7, Y7
	VPSLLW $2, Y7, Y7
	VPOR Y7, Y8, Y8
	VPMADDUBSW 228(DI), Y8, Y8
	VPSHUFB q6kByteShuf<>+112(SB), X12, X9
	VPMOVSXBW X9, Y9
	VPMADDWD Y9, Y8, Y8
	VPADDD Y8, Y10, Y10

	VCVTDQ2PS Y10, Y10
	MOVWLZX 108(SI), AX
	VMOVD AX, X4
	VCVTPH2PS X4, X4
	VMULSS (DI), X4, X4
	VBROADCASTSS X4, Y4
	VFMADD231PS Y4, Y10, Y11

	ADDQ $110, SI
	ADDQ $292, DI
	DECQ CX
	JNZ q3k2loop

	VEXTRACTF128 $1, Y11, X1
	VADDPS X1, X11, X0
	VMOVHLPS X0, X0, X1
	VADDPS X1, X0, X0
	VMOVSHDUP X0, X1
	VADDSS X1, X0, X0
	MOVSS X0, (R13)
	ADDQ $4, R13
	DECQ R12
	JNZ q3k2row
	VZEROUPPER
	MOVSS X0, ret+88(FP) // the last row's result
	RET


// Q5KX_QUANTS assembles 64 q5_K quants (0..31) of chunk qoff(SI): the low
// nibbles (Y8) and high nibbles (Y9) with their fifth bits from the qh bytes
// at 16(SI), moved into bit 4 by op1 n1 and op2 n2 (Y12, Y13 clobbered), and
// broadcasts the two sub-blocks' scale words from Y14 into Y10 and Y11
// (control shuf of q4kWordShuf). Q5KX_QUANTS_MID is the chunk whose low
// fifth bits are already in place.
#define Q5KX_QUANTS(qoff, op1, n1, op2, n2, shuf) \
	VMOVDQU qoff(SI), Y8 \
	VPSRLW $4, Y8, Y9 \
	VPAND Y15, Y8, Y8 \
	VPAND Y15, Y9, Y9 \
	VMOVDQU 16(SI), Y12 \
	op1 $n1, Y12, Y12 \
	VPAND q5kFifth<>(SB), Y12, Y12 \
	VMOVDQU 16(SI), Y13 \
	op2 $n2, Y13, Y13 \
	VPAND q5kFifth<>(SB), Y13, Y13 \
	VPOR Y12, Y8, Y8 \
	VPOR Y13, Y9, Y9 \
	VPSHUFB q4kWordShuf<>+shuf(SB), Y14, Y10 \
	VPSHUFB q4kWordShuf<>+(shuf+32)(SB), Y14, Y11

#define Q5KX_QUANTS_MID(qoff, shuf) \
	VMOVDQU qoff(SI), Y8 \
	VPSRLW $4, Y8, Y9 \
	VPAND Y15, Y8, Y8 \
	VPAND Y15, Y9, Y9 \
	VMOVDQU 16(SI), Y12 \
	VPAND q5kFifth<>(SB), Y12, Y12 \
	VMOVDQU 16(SI), Y13 \
	VPSRLW $1, Y13, Y13 \
	VPAND q5kFifth<>(SB), Y13, Y13 \
	VPOR Y12, Y8, Y8 \
	VPOR Y13, Y9, Y9 \
	VPSHUFB q4kWordShuf<>+shuf(SB), Y14, Y10 \
	VPSHUFB q4kWordShuf<>+(shuf+32)(SB), Y14, Y11

// func matQ5KAVX2x4(w, a []byte, astride, nb int, out *float32, ostride int)
//
// One q5_K weight row of nb blocks times four q8_K activation rows (astride
// bytes apart) into four floats ostride bytes apart from out:
// out[t] = dotQ5_K(w, a[t*astride:]), as mvQ5KAVX2 computes
// it for one. Each 32-byte chunk of nibbles is unpacked once and meets the
// four tokens, which makes a batched prefill cheaper per token than decode.
TEXT ·matQ5KAVX2x4(SB), NOSPLIT, $0-80
	MOVQ w_base+0(FP), SI
	MOVQ a_base+24(FP), DI
	MOVQ astride+48(FP), R13
	MOVQ nb+56(FP), CX
	LEAQ (DI)(R13*1), R10
	LEAQ (DI)(R13*2), R11
	LEAQ (R10)(R13*2), R12
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7

q5k2x4loop:
	WPREFETCH3
	Q4KX_SCALES

	Q5KX_QUANTS(48, VPSLLW, 4, VPSLLW, 3, 0)
	Q4KX4_TOK0(4, DI, Y0)
	Q4KX4_TOK0(4, R10, Y1)
	Q4KX4_TOK0(4, R11, Y2)
	Q4KX4_TOK0(4, R12, Y3)
	Q5KX_QUANTS(80, VPSLLW, 2, VPSLLW, 1, 64)
	Q4KX4_TOK(68, DI, Y0)
	Q4KX4_TOK(68, R10, Y1)
	Q4KX4_TOK(68, R11, Y2)
	Q4KX4_TOK(68, R12, Y3)
	Q5KX_QUANTS_MID(112, 128)
	Q4KX4_TOK(132, DI, Y0)
	Q4KX4_TOK(132, R10, Y1)
	Q4KX4_TOK(132, R11, Y2)
	Q4KX4_TOK(132, R12, Y3)
	Q5KX_QUANTS(144, VPSRLW, 2, VPSRLW, 3, 192)
	Q4KX4_TOK(196, DI, Y0)
	Q4KX4_TOK(196, R10, Y1)
	Q4KX4_TOK(196, R11, Y2)
	Q4KX4_TOK(196, R12, Y3)

	Q4KX_DMIN
	Q4KX4_SCALE(DI, Y0, Y4)
	Q4KX4_SCALE(R10, Y1, Y5)
	Q4KX4_SCALE(R11, Y2, Y6)
	Q4KX4_SCALE(R12, Y3, Y7)

	ADDQ $176, SI
	ADDQ $292, DI
	ADDQ $292, R10
	ADDQ $292, R11
	ADDQ $292, R12
	DECQ CX
	JNZ q5k2x4loop

	MOVQ out+64(FP), AX
	MOVQ ostride+72(FP), BX

	HSUM2_STORE(Y4, X4)
	HSUM2_STORE(Y5, X5)
	HSUM2_STORE(Y6, X6)
	HSUM2_STORE(Y7, X7)
	VZEROUPPER
	RET

// func matQ8_0AVX2x4(w, a []byte, astride, nb int, out *float32, ostride int)
//
// One q8_0 weight row of nb blocks times four q8_0 activation rows (astride
// bytes apart) into four floats ostride bytes apart from out:
// out[t] = dotQ8_0(w, a[t*astride:]), as mvQ8_0AVX2 computes it for one.
// Each weight block's |w| and scale are prepared once for the four tokens.
TEXT ·matQ8_0AVX2x4(SB), NOSPLIT, $0-80
	MOVQ w_base+0(FP), SI
	MOVQ a_base+24(FP), DI
	MOVQ astride+48(FP), R13
	MOVQ nb+56(FP), CX
	LEAQ (DI)(R13*1), R10
	LEAQ (DI)(R13*2), R11
	LEAQ (R10)(R13*2), R12
	MOVL $0x00010001, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11

#define Q802X4_TOKEN(P, ACC) \
	VMOVDQU 2(P), Y2 \
	VPSIGNB Y1, Y2, Y2 \
	VPMADDUBSW Y2, Y3, Y4 \
	VPMADDWD Y15, Y4, Y4 \
	VCVTDQ2PS Y4, Y4 \
	MOVWLZX (P), AX \
	VMOVD AX, X5 \
	VCVTPH2PS X5, X5 \
	VMULSS X6, X5, X5 \
	VBROADCASTSS X5, Y5 \
	VFMADD231PS Y5, Y4, ACC

q802x4loop:
	WPREFETCH1
	VMOVDQU 2(SI), Y1
	VPABSB Y1, Y3
	MOVWLZX (SI), AX
	VMOVD AX, X6
	VCVTPH2PS X6, X6 // d_w
	Q802X4_TOKEN(DI, Y8)
	Q802X4_TOKEN(R10, Y9)
	Q802X4_TOKEN(R11, Y10)
	Q802X4_TOKEN(R12, Y11)
	ADDQ $34, SI
	ADDQ $34, DI
	ADDQ $34, R10
	ADDQ $34, R11
	ADDQ $34, R12
	DECQ CX
	JNZ q802x4loop

	MOVQ out+64(FP), AX
	MOVQ ostride+72(FP), BX
	HSUM2_STORE(Y8, X8)
	HSUM2_STORE(Y9, X9)
	HSUM2_STORE(Y10, X10)
	HSUM2_STORE(Y11, X11)
	VZEROUPPER
	RET

// func matQ4KAVX2x2(w, a []byte, astride, nb int, out *float32, ostride int)
//
// matQ4KAVX2x4 for two tokens: one q4_K weight row of nb blocks times two
// activation rows (astride bytes apart) into two floats ostride bytes
// apart from out, out[t] = dotQ4_K(w, a[t*astride:]) with mvQ4KAVX2's
// bits. Two or three streams decoding together, or a draft of one token,
// unpack each weight block once instead of once per token.
TEXT ·matQ4KAVX2x2(SB), NOSPLIT, $0-80
	MOVQ w_base+0(FP), SI
	MOVQ a_base+24(FP), DI
	MOVQ astride+48(FP), R13
	MOVQ nb+56(FP), CX
	LEAQ (DI)(R13*1), R10
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5

q4k2x2loop:
	WPREFETCH3
	Q4KX_SCALES

	Q4KX_NIBBLES(16, 0)
	Q4KX4_TOK0(4, DI, Y0)
	Q4KX4_TOK0(4, R10, Y1)
	Q4KX_NIBBLES(48, 64)
	Q4KX4_TOK(68, DI, Y0)
	Q4KX4_TOK(68, R10, Y1)
	Q4KX_NIBBLES(80, 128)
	Q4KX4_TOK(132, DI, Y0)
	Q4KX4_TOK(132, R10, Y1)
	Q4KX_NIBBLES(112, 192)
	Q4KX4_TOK(196, DI, Y0)
	Q4KX4_TOK(196, R10, Y1)

	Q4KX_DMIN
	Q4KX4_SCALE(DI, Y0, Y4)
	Q4KX4_SCALE(R10, Y1, Y5)

	ADDQ $144, SI
	ADDQ $292, DI
	ADDQ $292, R10
	DECQ CX
	JNZ q4k2x2loop

	MOVQ out+64(FP), AX
	MOVQ ostride+72(FP), BX

	HSUM2_STORE(Y4, X4)
	HSUM2_STORE(Y5, X5)
	VZEROUPPER
	RET

// func matQ5KAVX2x2(w, a []byte, astride, nb int, out *float32, ostride int)
//
// matQ5KAVX2x4 for two tokens: one q5_K weight row of nb blocks times two
// activation rows (astride bytes apart) into two floats ostride bytes
// apart from out, out[t] = dotQ5_K(w, a[t*astride:]) with mvQ5KAVX2's
// bits. Two or three streams decoding together, or a draft of one token,
// unpack each weight block once instead of once per token.
TEXT ·matQ5KAVX2x2(SB), NOSPLIT, $0-80
	MOVQ w_base+0(FP), SI
	MOVQ a_base+24(FP), DI
	MOVQ astride+48(FP), R13
	MOVQ nb+56(FP), CX
	LEAQ (DI)(R13*1), R10
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5

q5k2x2loop:
	WPREFETCH3
	Q4KX_SCALES

	Q5KX_QUANTS(48, VPSLLW, 4, VPSLLW, 3, 0)
	Q4KX4_TOK0(4, DI, Y0)
	Q4KX4_TOK0(4, R10, Y1)
	Q5KX_QUANTS(80, VPSLLW, 2, VPSLLW, 1, 64)
	Q4KX4_TOK(68, DI, Y0)
	Q4KX4_TOK(68, R10, Y1)
	Q5KX_QUANTS_MID(112, 128)
	Q4KX4_TOK(132, DI, Y0)
	Q4KX4_TOK(132, R10, Y1)
	Q5KX_QUANTS(144, VPSRLW, 2, VPSRLW, 3, 192)
	Q4KX4_TOK(196, DI, Y0)
	Q4KX4_TOK(196, R10, Y1)

	Q4KX_DMIN
	Q4KX4_SCALE(DI, Y0, Y4)
	Q4KX4_SCALE(R10, Y1, Y5)

	ADDQ $176, SI
	ADDQ $292, DI
	ADDQ $292, R10
	DECQ CX
	JNZ q5k2x2loop

	MOVQ out+64(FP), AX
	MOVQ ostride+72(FP), BX

	HSUM2_STORE(Y4, X4)
	HSUM2_STORE(Y5, X5)
	VZEROUPPER
	RET

// func matQ6KAVX2x2(w, a []byte, astride, nb int, out *float32, ostride int)
//
// matQ6KAVX2x4 for two tokens: one q6_K weight row of nb blocks times two
// activation rows (astride bytes apart) into two floats ostride bytes
// apart from out, out[t] = dotQ6_K(w, a[t*astride:]) with mvQ6KAVX2's
// bits. Two or three streams decoding together, or a draft of one token,
// unpack each weight block once instead of once per token.
TEXT ·matQ6KAVX2x2(SB), NOSPLIT, $0-80
	MOVQ w_base+0(FP), SI
	MOVQ a_base+24(FP), DI
	MOVQ astride+48(FP), R13
	MOVQ nb+56(FP), CX
	LEAQ (DI)(R13*1), R10
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	MOVL $0x30303030, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5

q6k2x2loop:
	WPREFETCH4
	VMOVDQU 192(SI), X12 // 16 int8 scales
	VPMOVSXBW X12, Y13
	Q6KX4_START(DI, Y0)
	Q6KX4_START(R10, Y1)
	VPSHUFB q6kEvenOdd<>(SB), X12, X9
	VPMOVSXBW X9, Y13 // scales as words for the chunks (q6kWordBcast)

	Q6KX_LOW(0, 128, 4, 0)
	Q6KX4_TOK(4, DI, Y0)
	Q6KX4_TOK(4, R10, Y1)
	Q6KX_LOW(32, 128, 2, 16)
	Q6KX4_TOK(36, DI, Y0)
	Q6KX4_TOK(36, R10, Y1)
	Q6KX_HIGH(0, 128, 32)
	Q6KX4_TOK(68, DI, Y0)
	Q6KX4_TOK(68, R10, Y1)
	Q6KX_HIGHSHR2(32, 128, 48)
	Q6KX4_TOK(100, DI, Y0)
	Q6KX4_TOK(100, R10, Y1)
	Q6KX_LOW(64, 160, 4, 64)
	Q6KX4_TOK(132, DI, Y0)
	Q6KX4_TOK(132, R10, Y1)
	Q6KX_LOW(96, 160, 2, 80)
	Q6KX4_TOK(164, DI, Y0)
	Q6KX4_TOK(164, R10, Y1)
	Q6KX_HIGH(64, 160, 96)
	Q6KX4_TOK(196, DI, Y0)
	Q6KX4_TOK(196, R10, Y1)
	Q6KX_HIGHSHR2(96, 160, 112)
	Q6KX4_TOK(228, DI, Y0)
	Q6KX4_TOK(228, R10, Y1)

	MOVWLZX 208(SI), AX
	VMOVD AX, X13
	VCVTPH2PS X13, X13
	Q6KX4_SCALE(DI, Y0, Y4)
	Q6KX4_SCALE(R10, Y1, Y5)

	ADDQ $210, SI
	ADDQ $292, DI
	ADDQ $292, R10
	DECQ CX
	JNZ q6k2x2loop

	MOVQ out+64(FP), AX
	MOVQ ostride+72(FP), BX
	HSUM2_STORE(Y4, X4)
	HSUM2_STORE(Y5, X5)
	VZEROUPPER
	RET

// func matQ8_0AVX2x2(w, a []byte, astride, nb int, out *float32, ostride int)
//
// matQ8_0AVX2x4 for two tokens: one q8_0 weight row of nb blocks times two
// activation rows (astride bytes apart) into two floats ostride bytes
// apart from out, out[t] = dotQ8_0(w, a[t*astride:]) with mvQ8_0AVX2's
// bits. Two or three streams decoding together, or a draft of one token,
// unpack each weight block once instead of once per token.
TEXT ·matQ8_0AVX2x2(SB), NOSPLIT, $0-80
	MOVQ w_base+0(FP), SI
	MOVQ a_base+24(FP), DI
	MOVQ astride+48(FP), R13
	MOVQ nb+56(FP), CX
	LEAQ (DI)(R13*1), R10
	MOVL $0x00010001, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9

q802x2loop:
	WPREFETCH1
	VMOVDQU 2(SI), Y1
	VPABSB Y1, Y3
	MOVWLZX (SI), AX
	VMOVD AX, X6
	VCVTPH2PS X6, X6 // d_w
	Q802X4_TOKEN(DI, Y8)
	Q802X4_TOKEN(R10, Y9)
	ADDQ $34, SI
	ADDQ $34, DI
	ADDQ $34, R10
	DECQ CX
	JNZ q802x2loop

	MOVQ out+64(FP), AX
	MOVQ ostride+72(FP), BX
	HSUM2_STORE(Y8, X8)
	HSUM2_STORE(Y9, X9)
	VZEROUPPER
	RET
