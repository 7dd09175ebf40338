//go:build gc && !purego

#include "textflag.h"

// Kernels over interleaved q4_K weights (interleave.go has the layout and
// the Go twin, dotQ4Kx8). Each multiplies one group of 8 rows (nb group
// blocks of 1152 bytes at w) by T q8_K activation rows astride bytes apart
// and stores each token's 8 results (rows 0..7, consecutive floats) ostride
// bytes apart from out:
//
//	for b := range nb {
//		for r := range 8 {
//			// isum, msum: dotQ4_K's integers for row r, block b
//			acc[r] += d_a * (d[r]*float32(isum) - dmin[r]*float32(msum))
//		}
//	}
//
// Registers: Y0..Y3 the tokens' isum (a 32-bit lane per row), Y4..Y7 their
// 16-bit sums over the current sub-block, Y8/Y9 the low/high nibbles of a
// 32-byte piece, Y11 the sub-block's scales as word pairs, Y15 the nibble
// mask. The frame holds the block's unpacked scales and mins (0..127) and
// the tokens' float accumulators (128..255).

DATA q4kx8ScaleShuf<>+0x00(SB)/8, $0x8004800480008000
DATA q4kx8ScaleShuf<>+0x08(SB)/8, $0x800c800c80088008
DATA q4kx8ScaleShuf<>+0x10(SB)/8, $0x8004800480008000
DATA q4kx8ScaleShuf<>+0x18(SB)/8, $0x800c800c80088008
DATA q4kx8ScaleShuf<>+0x20(SB)/8, $0x8005800580018001
DATA q4kx8ScaleShuf<>+0x28(SB)/8, $0x800d800d80098009
DATA q4kx8ScaleShuf<>+0x30(SB)/8, $0x8005800580018001
DATA q4kx8ScaleShuf<>+0x38(SB)/8, $0x800d800d80098009
DATA q4kx8ScaleShuf<>+0x40(SB)/8, $0x8006800680028002
DATA q4kx8ScaleShuf<>+0x48(SB)/8, $0x800e800e800a800a
DATA q4kx8ScaleShuf<>+0x50(SB)/8, $0x8006800680028002
DATA q4kx8ScaleShuf<>+0x58(SB)/8, $0x800e800e800a800a
DATA q4kx8ScaleShuf<>+0x60(SB)/8, $0x8007800780038003
DATA q4kx8ScaleShuf<>+0x68(SB)/8, $0x800f800f800b800b
DATA q4kx8ScaleShuf<>+0x70(SB)/8, $0x8007800780038003
DATA q4kx8ScaleShuf<>+0x78(SB)/8, $0x800f800f800b800b
// q4kx8ScaleShuf: control j (32 bytes) turns 8 rows' scale bytes (4 per
// row: row r's byte j at 4r+j, r mod 4 in each 128-bit lane) into row r's
// scale j as the two words of 32-bit lane r.
GLOBL q4kx8ScaleShuf<>(SB), RODATA|NOPTR, $128

DATA q4kx8MinShuf<>+0x00(SB)/8, $0x8005800480018000
DATA q4kx8MinShuf<>+0x08(SB)/8, $0x800d800c80098008
DATA q4kx8MinShuf<>+0x10(SB)/8, $0x8005800480018000
DATA q4kx8MinShuf<>+0x18(SB)/8, $0x800d800c80098008
DATA q4kx8MinShuf<>+0x20(SB)/8, $0x8007800680038002
DATA q4kx8MinShuf<>+0x28(SB)/8, $0x800f800e800b800a
DATA q4kx8MinShuf<>+0x30(SB)/8, $0x8007800680038002
DATA q4kx8MinShuf<>+0x38(SB)/8, $0x800f800e800b800a
// q4kx8MinShuf: control h (32 bytes) turns 8 rows' min bytes (4 per row)
// into mins 2h and 2h+1 of row r as the two words of 32-bit lane r.
GLOBL q4kx8MinShuf<>(SB), RODATA|NOPTR, $64

DATA q4kx8Mask3f<>+0x00(SB)/8, $0x3f3f3f3f3f3f3f3f
DATA q4kx8Mask3f<>+0x08(SB)/8, $0x3f3f3f3f3f3f3f3f
DATA q4kx8Mask3f<>+0x10(SB)/8, $0x3f3f3f3f3f3f3f3f
DATA q4kx8Mask3f<>+0x18(SB)/8, $0x3f3f3f3f3f3f3f3f
GLOBL q4kx8Mask3f<>(SB), RODATA|NOPTR, $32

DATA q4kx8Mask30<>+0x00(SB)/8, $0x3030303030303030
DATA q4kx8Mask30<>+0x08(SB)/8, $0x3030303030303030
DATA q4kx8Mask30<>+0x10(SB)/8, $0x3030303030303030
DATA q4kx8Mask30<>+0x18(SB)/8, $0x3030303030303030
GLOBL q4kx8Mask30<>(SB), RODATA|NOPTR, $32

// Q4KX8_SCALES unpacks the 6-bit scales and mins of the group block at SI
// (see scaleMinK4) into the frame: scales 0..3 at 0, 4..7 at 32, mins 0..3
// at 64, 4..7 at 96, as bytes, 4 per row.
#define Q4KX8_SCALES \
	VMOVDQU 32(SI), Y8 \
	VMOVDQU 64(SI), Y9 \
	VMOVDQU 96(SI), Y10 \
	VPAND q4kx8Mask3f<>(SB), Y8, Y11 \
	VMOVDQU Y11, 0(SP) \
	VPSRLW $2, Y8, Y12 \
	VPAND q4kx8Mask30<>(SB), Y12, Y12 \
	VPAND Y15, Y10, Y13 \
	VPOR Y13, Y12, Y12 \
	VMOVDQU Y12, 32(SP) \
	VPAND q4kx8Mask3f<>(SB), Y9, Y11 \
	VMOVDQU Y11, 64(SP) \
	VPSRLW $2, Y9, Y12 \
	VPAND q4kx8Mask30<>(SB), Y12, Y12 \
	VPSRLW $4, Y10, Y13 \
	VPAND Y15, Y13, Y13 \
	VPOR Y13, Y12, Y12 \
	VMOVDQU Y12, 96(SP)

// Q4KX8_PIECE splits the 32 bytes at woff(SI) into low (Y8) and high (Y9)
// nibbles: 4 weights of each of the 8 rows, and the 4 weights 16 further on.
#define Q4KX8_PIECE(woff) \
	VMOVDQU woff(SI), Y8 \
	VPSRLW $4, Y8, Y9 \
	VPAND Y15, Y8, Y8 \
	VPAND Y15, Y9, Y9

// Q4KX8_TOK0 starts the token's 16-bit sub-block sums S with the piece's
// products: each row's 4 low-nibble weights times the activations at
// aoff(P), its 4 high-nibble ones times those at aoff+16.
#define Q4KX8_TOK0(aoff, P, S) \
	VPBROADCASTD aoff(P), Y10 \
	VPMADDUBSW Y10, Y8, S \
	VPBROADCASTD (aoff+16)(P), Y12 \
	VPMADDUBSW Y12, Y9, Y12 \
	VPADDW Y12, S, S

// Q4KX8_TOK adds the products of a further piece to S.
#define Q4KX8_TOK(aoff, P, S) \
	VPBROADCASTD aoff(P), Y10 \
	VPMADDUBSW Y10, Y8, Y10 \
	VPADDW Y10, S, S \
	VPBROADCASTD (aoff+16)(P), Y12 \
	VPMADDUBSW Y12, Y9, Y12 \
	VPADDW Y12, S, S

// Q4KX8_ISUM scales the token's 16-bit sub-block sums S by the rows'
// scales (Y11) into 32-bit lanes and adds them to its isum.
#define Q4KX8_ISUM(S, ISUM) \
	VPMADDWD Y11, S, S \
	VPADDD S, ISUM, ISUM

// Q4KX8_MINS readies the block's mins as word pairs (Y4: mins 0,1 of each
// row; Y5: 2,3; Y6: 4,5; Y7: 6,7) and d (Y14) and dmin (Y13) of its rows,
// with SI at the end of the group block.
#define Q4KX8_MINS \
	VMOVDQU 64(SP), Y8 \
	VPSHUFB q4kx8MinShuf<>+0(SB), Y8, Y4 \
	VPSHUFB q4kx8MinShuf<>+32(SB), Y8, Y5 \
	VMOVDQU 96(SP), Y8 \
	VPSHUFB q4kx8MinShuf<>+0(SB), Y8, Y6 \
	VPSHUFB q4kx8MinShuf<>+32(SB), Y8, Y7 \
	VCVTPH2PS -1152(SI), Y14 \
	VCVTPH2PS -1136(SI), Y13

// Q4KX8_FLOAT adds the block to the token's float accumulator at foff in
// the frame, once the sub-block loop has moved P 256 bytes into the q8_K
// block and SI to the end of the group block: msum from the bsums at 4(P)
// (summed in pairs: one 32-weight sub-block each), then
// d_a·(d·isum − dmin·msum) for the 8 rows, d_a at -256(P).
#define Q4KX8_FLOAT(P, ISUM, foff) \
	VBROADCASTI128 4(P), Y8 \
	VBROADCASTI128 20(P), Y9 \
	VPHADDW Y9, Y8, Y8 \
	VPSHUFD $0x00, Y8, Y9 \
	VPMADDWD Y9, Y4, Y10 \
	VPSHUFD $0x55, Y8, Y9 \
	VPMADDWD Y9, Y5, Y9 \
	VPADDD Y9, Y10, Y10 \
	VPSHUFD $0xaa, Y8, Y9 \
	VPMADDWD Y9, Y6, Y9 \
	VPADDD Y9, Y10, Y10 \
	VPSHUFD $0xff, Y8, Y9 \
	VPMADDWD Y9, Y7, Y9 \
	VPADDD Y9, Y10, Y10 \
	VCVTDQ2PS Y10, Y10 \
	VCVTDQ2PS ISUM, ISUM \
	VMULPS Y14, ISUM, ISUM \
	VMULPS Y13, Y10, Y10 \
	VSUBPS Y10, ISUM, ISUM \
	VBROADCASTSS -256(P), Y9 \
	VMULPS Y9, ISUM, ISUM \
	VADDPS foff(SP), ISUM, ISUM \
	VMOVUPS ISUM, foff(SP)

#define Q4KX8_SETUP \
	MOVQ w_base+0(FP), SI \
	MOVQ a_base+24(FP), DI \
	MOVQ astride+48(FP), R13 \
	MOVQ nb+56(FP), CX \
	LEAQ (DI)(R13*1), R10 \
	LEAQ (DI)(R13*2), R11 \
	LEAQ (R10)(R13*2), R12 \
	MOVL $0x0f0f0f0f, AX \
	VMOVD AX, X15 \
	VPBROADCASTD X15, Y15 \
	VXORPS Y0, Y0, Y0 \
	VMOVUPS Y0, 128(SP) \
	VMOVUPS Y0, 160(SP) \
	VMOVUPS Y0, 192(SP) \
	VMOVUPS Y0, 224(SP)

// func q4Kx8AVX2x4(w, a []byte, astride, nb int, out *float32, ostride int)
//
// The 8 rows of one interleaved q4_K group times 4 tokens. The sub-blocks
// run in a loop (not unrolled), which keeps the body in the op cache.
TEXT ·q4Kx8AVX2x4(SB), NOSPLIT, $256-80
	Q4KX8_SETUP

q4Kx8AVX2x4block:
	Q4KX8_SCALES
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	LEAQ 0(SP), R9 // scales 0..3, then 4..7
	ADDQ $128, SI // the quants
	MOVQ $2, DX

q4Kx8AVX2x4half:
	LEAQ q4kx8ScaleShuf<>(SB), R8
	MOVQ $4, BX

q4Kx8AVX2x4sub:
	Q4KX8_PIECE(0)
	Q4KX8_TOK0(4, DI, Y4)
	Q4KX8_TOK0(4, R10, Y5)
	Q4KX8_TOK0(4, R11, Y6)
	Q4KX8_TOK0(4, R12, Y7)
	Q4KX8_PIECE(32)
	Q4KX8_TOK(8, DI, Y4)
	Q4KX8_TOK(8, R10, Y5)
	Q4KX8_TOK(8, R11, Y6)
	Q4KX8_TOK(8, R12, Y7)
	Q4KX8_PIECE(64)
	Q4KX8_TOK(12, DI, Y4)
	Q4KX8_TOK(12, R10, Y5)
	Q4KX8_TOK(12, R11, Y6)
	Q4KX8_TOK(12, R12, Y7)
	Q4KX8_PIECE(96)
	Q4KX8_TOK(16, DI, Y4)
	Q4KX8_TOK(16, R10, Y5)
	Q4KX8_TOK(16, R11, Y6)
	Q4KX8_TOK(16, R12, Y7)
	VMOVDQU (R9), Y11
	VPSHUFB (R8), Y11, Y11 // the sub-block's scales
	Q4KX8_ISUM(Y4, Y0)
	Q4KX8_ISUM(Y5, Y1)
	Q4KX8_ISUM(Y6, Y2)
	Q4KX8_ISUM(Y7, Y3)
	ADDQ $128, SI
	ADDQ $32, DI
	ADDQ $32, R10
	ADDQ $32, R11
	ADDQ $32, R12
	ADDQ $32, R8
	DECQ BX
	JNZ q4Kx8AVX2x4sub
	ADDQ $32, R9
	DECQ DX
	JNZ q4Kx8AVX2x4half

	Q4KX8_MINS
	Q4KX8_FLOAT(DI, Y0, 128)
	Q4KX8_FLOAT(R10, Y1, 160)
	Q4KX8_FLOAT(R11, Y2, 192)
	Q4KX8_FLOAT(R12, Y3, 224)
	ADDQ $36, DI
	ADDQ $36, R10
	ADDQ $36, R11
	ADDQ $36, R12
	DECQ CX
	JNZ q4Kx8AVX2x4block

	MOVQ out+64(FP), AX
	MOVQ ostride+72(FP), BX
	VMOVUPS 128(SP), Y0
	VMOVUPS Y0, (AX)
	ADDQ BX, AX
	VMOVUPS 160(SP), Y0
	VMOVUPS Y0, (AX)
	ADDQ BX, AX
	VMOVUPS 192(SP), Y0
	VMOVUPS Y0, (AX)
	ADDQ BX, AX
	VMOVUPS 224(SP), Y0
	VMOVUPS Y0, (AX)
	VZEROUPPER
	RET


// func q4Kx8AVX2x3(w, a []byte, astride, nb int, out *float32, ostride int)
//
// The 8 rows of one interleaved q4_K group times 3 tokens. The sub-blocks
// run in a loop (not unrolled), which keeps the body in the op cache.
TEXT ·q4Kx8AVX2x3(SB), NOSPLIT, $256-80
	Q4KX8_SETUP

q4Kx8AVX2x3block:
	Q4KX8_SCALES
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	LEAQ 0(SP), R9 // scales 0..3, then 4..7
	ADDQ $128, SI // the quants
	MOVQ $2, DX

q4Kx8AVX2x3half:
	LEAQ q4kx8ScaleShuf<>(SB), R8
	MOVQ $4, BX

q4Kx8AVX2x3sub:
	Q4KX8_PIECE(0)
	Q4KX8_TOK0(4, DI, Y4)
	Q4KX8_TOK0(4, R10, Y5)
	Q4KX8_TOK0(4, R11, Y6)
	Q4KX8_PIECE(32)
	Q4KX8_TOK(8, DI, Y4)
	Q4KX8_TOK(8, R10, Y5)
	Q4KX8_TOK(8, R11, Y6)
	Q4KX8_PIECE(64)
	Q4KX8_TOK(12, DI, Y4)
	Q4KX8_TOK(12, R10, Y5)
	Q4KX8_TOK(12, R11, Y6)
	Q4KX8_PIECE(96)
	Q4KX8_TOK(16, DI, Y4)
	Q4KX8_TOK(16, R10, Y5)
	Q4KX8_TOK(16, R11, Y6)
	VMOVDQU (R9), Y11
	VPSHUFB (R8), Y11, Y11 // the sub-block's scales
	Q4KX8_ISUM(Y4, Y0)
	Q4KX8_ISUM(Y5, Y1)
	Q4KX8_ISUM(Y6, Y2)
	ADDQ $128, SI
	ADDQ $32, DI
	ADDQ $32, R10
	ADDQ $32, R11
	ADDQ $32, R8
	DECQ BX
	JNZ q4Kx8AVX2x3sub
	ADDQ $32, R9
	DECQ DX
	JNZ q4Kx8AVX2x3half

	Q4KX8_MINS
	Q4KX8_FLOAT(DI, Y0, 128)
	Q4KX8_FLOAT(R10, Y1, 160)
	Q4KX8_FLOAT(R11, Y2, 192)
	ADDQ $36, DI
	ADDQ $36, R10
	ADDQ $36, R11
	DECQ CX
	JNZ q4Kx8AVX2x3block

	MOVQ out+64(FP), AX
	MOVQ ostride+72(FP), BX
	VMOVUPS 128(SP), Y0
	VMOVUPS Y0, (AX)
	ADDQ BX, AX
	VMOVUPS 160(SP), Y0
	VMOVUPS Y0, (AX)
	ADDQ BX, AX
	VMOVUPS 192(SP), Y0
	VMOVUPS Y0, (AX)
	VZEROUPPER
	RET

// func q4Kx8AVX2x2(w, a []byte, astride, nb int, out *float32, ostride int)
//
// The 8 rows of one interleaved q4_K group times 2 tokens. The sub-blocks
// run in a loop (not unrolled), which keeps the body in the op cache.
TEXT ·q4Kx8AVX2x2(SB), NOSPLIT, $256-80
	Q4KX8_SETUP

q4Kx8AVX2x2block:
	Q4KX8_SCALES
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	LEAQ 0(SP), R9 // scales 0..3, then 4..7
	ADDQ $128, SI // the quants
	MOVQ $2, DX

q4Kx8AVX2x2half:
	LEAQ q4kx8ScaleShuf<>(SB), R8
	MOVQ $4, BX

q4Kx8AVX2x2sub:
	Q4KX8_PIECE(0)
	Q4KX8_TOK0(4, DI, Y4)
	Q4KX8_TOK0(4, R10, Y5)
	Q4KX8_PIECE(32)
	Q4KX8_TOK(8, DI, Y4)
	Q4KX8_TOK(8, R10, Y5)
	Q4KX8_PIECE(64)
	Q4KX8_TOK(12, DI, Y4)
	Q4KX8_TOK(12, R10, Y5)
	Q4KX8_PIECE(96)
	Q4KX8_TOK(16, DI, Y4)
	Q4KX8_TOK(16, R10, Y5)
	VMOVDQU (R9), Y11
	VPSHUFB (R8), Y11, Y11 // the sub-block's scales
	Q4KX8_ISUM(Y4, Y0)
	Q4KX8_ISUM(Y5, Y1)
	ADDQ $128, SI
	ADDQ $32, DI
	ADDQ $32, R10
	ADDQ $32, R8
	DECQ BX
	JNZ q4Kx8AVX2x2sub
	ADDQ $32, R9
	DECQ DX
	JNZ q4Kx8AVX2x2half

	Q4KX8_MINS
	Q4KX8_FLOAT(DI, Y0, 128)
	Q4KX8_FLOAT(R10, Y1, 160)
	ADDQ $36, DI
	ADDQ $36, R10
	DECQ CX
	JNZ q4Kx8AVX2x2block

	MOVQ out+64(FP), AX
	MOVQ ostride+72(FP), BX
	VMOVUPS 128(SP), Y0
	VMOVUPS Y0, (AX)
	ADDQ BX, AX
	VMOVUPS 160(SP), Y0
	VMOVUPS Y0, (AX)
	VZEROUPPER
	RET


// func q4Kx8AVX2x1(w, a []byte, astride, nb int, out *float32, ostride int)
//
// The 8 rows of one interleaved q4_K group times 1 token. The sub-blocks
// run in a loop (not unrolled), which keeps the body in the op cache.
TEXT ·q4Kx8AVX2x1(SB), NOSPLIT, $256-80
	Q4KX8_SETUP

q4Kx8AVX2x1block:
	Q4KX8_SCALES
	VPXOR Y0, Y0, Y0
	LEAQ 0(SP), R9 // scales 0..3, then 4..7
	ADDQ $128, SI // the quants
	MOVQ $2, DX

q4Kx8AVX2x1half:
	LEAQ q4kx8ScaleShuf<>(SB), R8
	MOVQ $4, BX

q4Kx8AVX2x1sub:
	Q4KX8_PIECE(0)
	Q4KX8_TOK0(4, DI, Y4)
	Q4KX8_PIECE(32)
	Q4KX8_TOK(8, DI, Y4)
	Q4KX8_PIECE(64)
	Q4KX8_TOK(12, DI, Y4)
	Q4KX8_PIECE(96)
	Q4KX8_TOK(16, DI, Y4)
	VMOVDQU (R9), Y11
	VPSHUFB (R8), Y11, Y11 // the sub-block's scales
	Q4KX8_ISUM(Y4, Y0)
	ADDQ $128, SI
	ADDQ $32, DI
	ADDQ $32, R8
	DECQ BX
	JNZ q4Kx8AVX2x1sub
	ADDQ $32, R9
	DECQ DX
	JNZ q4Kx8AVX2x1half

	Q4KX8_MINS
	Q4KX8_FLOAT(DI, Y0, 128)
	ADDQ $36, DI
	DECQ CX
	JNZ q4Kx8AVX2x1block

	MOVQ out+64(FP), AX
	MOVQ ostride+72(FP), BX
	VMOVUPS 128(SP), Y0
	VMOVUPS Y0, (AX)
	VZEROUPPER
	RET


// q6_K: see interleave.go for the layout and dotQ6Kx8 for the Go twin.
// Registers: Y0..Y3 the tokens' isum (a 32-bit lane per row), Y4/Y5 two
// pieces of 6-bit weights, Y6 the sub-block's high bits, Y7 its scales as
// word pairs, Y15 the nibble mask; the frame holds the tokens' float
// accumulators (128..255), as for q4_K.

// q6kx8ScaleShuf: control j (32 bytes) turns 8 rows' scale bytes (4 per
// row) into row r's scale j, shifted up a byte, as the two words of 32-bit
// lane r (VPSRAW $8 then sign-extends it).
DATA q6kx8ScaleShuf<>+0x00(SB)/8, $0x0480048000800080
DATA q6kx8ScaleShuf<>+0x08(SB)/8, $0x0c800c8008800880
DATA q6kx8ScaleShuf<>+0x10(SB)/8, $0x0480048000800080
DATA q6kx8ScaleShuf<>+0x18(SB)/8, $0x0c800c8008800880
DATA q6kx8ScaleShuf<>+0x20(SB)/8, $0x0580058001800180
DATA q6kx8ScaleShuf<>+0x28(SB)/8, $0x0d800d8009800980
DATA q6kx8ScaleShuf<>+0x30(SB)/8, $0x0580058001800180
DATA q6kx8ScaleShuf<>+0x38(SB)/8, $0x0d800d8009800980
DATA q6kx8ScaleShuf<>+0x40(SB)/8, $0x0680068002800280
DATA q6kx8ScaleShuf<>+0x48(SB)/8, $0x0e800e800a800a80
DATA q6kx8ScaleShuf<>+0x50(SB)/8, $0x0680068002800280
DATA q6kx8ScaleShuf<>+0x58(SB)/8, $0x0e800e800a800a80
DATA q6kx8ScaleShuf<>+0x60(SB)/8, $0x0780078003800380
DATA q6kx8ScaleShuf<>+0x68(SB)/8, $0x0f800f800b800b80
DATA q6kx8ScaleShuf<>+0x70(SB)/8, $0x0780078003800380
DATA q6kx8ScaleShuf<>+0x78(SB)/8, $0x0f800f800b800b80
GLOBL q6kx8ScaleShuf<>(SB), RODATA|NOPTR, $128

// q6kx8PairShuf: control h (32 bytes) turns 8 rows' scale bytes (4 per
// row) into scales 2h and 2h+1 of row r, shifted up a byte, as the words of
// 32-bit lane r.
DATA q6kx8PairShuf<>+0x00(SB)/8, $0x0580048001800080
DATA q6kx8PairShuf<>+0x08(SB)/8, $0x0d800c8009800880
DATA q6kx8PairShuf<>+0x10(SB)/8, $0x0580048001800080
DATA q6kx8PairShuf<>+0x18(SB)/8, $0x0d800c8009800880
DATA q6kx8PairShuf<>+0x20(SB)/8, $0x0780068003800280
DATA q6kx8PairShuf<>+0x28(SB)/8, $0x0f800e800b800a80
DATA q6kx8PairShuf<>+0x30(SB)/8, $0x0780068003800280
DATA q6kx8PairShuf<>+0x38(SB)/8, $0x0f800e800b800a80
GLOBL q6kx8PairShuf<>(SB), RODATA|NOPTR, $64

DATA q6kx8Mask03<>+0x00(SB)/8, $0x0303030303030303
DATA q6kx8Mask03<>+0x08(SB)/8, $0x0303030303030303
DATA q6kx8Mask03<>+0x10(SB)/8, $0x0303030303030303
DATA q6kx8Mask03<>+0x18(SB)/8, $0x0303030303030303
GLOBL q6kx8Mask03<>(SB), RODATA|NOPTR, $32

DATA q6kx8Mask0c<>+0x00(SB)/8, $0x0c0c0c0c0c0c0c0c
DATA q6kx8Mask0c<>+0x08(SB)/8, $0x0c0c0c0c0c0c0c0c
DATA q6kx8Mask0c<>+0x10(SB)/8, $0x0c0c0c0c0c0c0c0c
DATA q6kx8Mask0c<>+0x18(SB)/8, $0x0c0c0c0c0c0c0c0c
GLOBL q6kx8Mask0c<>(SB), RODATA|NOPTR, $32

DATA q6kx8MaskC0<>+0x00(SB)/8, $0xc0c0c0c0c0c0c0c0
DATA q6kx8MaskC0<>+0x08(SB)/8, $0xc0c0c0c0c0c0c0c0
DATA q6kx8MaskC0<>+0x10(SB)/8, $0xc0c0c0c0c0c0c0c0
DATA q6kx8MaskC0<>+0x18(SB)/8, $0xc0c0c0c0c0c0c0c0
GLOBL q6kx8MaskC0<>(SB), RODATA|NOPTR, $32

// Q6KX8_PIECES02 makes the 6-bit weights of pieces 0 and 2 of the sub-block
// at SI (Y4, Y5) from L0 and the high bits (Y6, loaded here).
#define Q6KX8_PIECES02 \
	VMOVDQU 64(SI), Y6 \
	VMOVDQU 0(SI), Y4 \
	VPSRLW $4, Y4, Y5 \
	VPAND Y15, Y4, Y4 \
	VPAND Y15, Y5, Y5 \
	VPAND q6kx8Mask03<>(SB), Y6, Y8 \
	VPSLLW $4, Y8, Y8 \
	VPOR Y8, Y4, Y4 \
	VPAND q4kx8Mask30<>(SB), Y6, Y8 \
	VPOR Y8, Y5, Y5

// Q6KX8_PIECES13 makes pieces 1 and 3 (Y4, Y5) from L1 and Y6.
#define Q6KX8_PIECES13 \
	VMOVDQU 32(SI), Y4 \
	VPSRLW $4, Y4, Y5 \
	VPAND Y15, Y4, Y4 \
	VPAND Y15, Y5, Y5 \
	VPAND q6kx8Mask0c<>(SB), Y6, Y8 \
	VPSLLW $2, Y8, Y8 \
	VPOR Y8, Y4, Y4 \
	VPAND q6kx8MaskC0<>(SB), Y6, Y8 \
	VPSRLW $2, Y8, Y8 \
	VPOR Y8, Y5, Y5

// Q6KX8_TOK adds a token's products with pieces Y4 and Y5 (activations at
// off0(P) and off1(P)), summed in 16 bits (at most 2 × 2 × 63 × 128 < 32768)
// and scaled by Y7, to its isum.
#define Q6KX8_TOK(off0, off1, P, ISUM) \
	VPBROADCASTD off0(P), Y9 \
	VPMADDUBSW Y9, Y4, Y9 \
	VPBROADCASTD off1(P), Y10 \
	VPMADDUBSW Y10, Y5, Y10 \
	VPADDW Y10, Y9, Y9 \
	VPMADDWD Y7, Y9, Y9 \
	VPADDD Y9, ISUM, ISUM

// Q6KX8_PAIRS readies the block's scales as pairs of words for the bsums
// (Y4..Y11: scales 2m and 2m+1 of each row in Y(4+m)) and d of its rows
// (Y14), from the group block at AX.
#define Q6KX8_PAIRS \
	VMOVDQU 16(AX), Y12 \
	VPSHUFB q6kx8PairShuf<>+0(SB), Y12, Y4 \
	VPSHUFB q6kx8PairShuf<>+32(SB), Y12, Y5 \
	VMOVDQU 48(AX), Y12 \
	VPSHUFB q6kx8PairShuf<>+0(SB), Y12, Y6 \
	VPSHUFB q6kx8PairShuf<>+32(SB), Y12, Y7 \
	VMOVDQU 80(AX), Y12 \
	VPSHUFB q6kx8PairShuf<>+0(SB), Y12, Y8 \
	VPSHUFB q6kx8PairShuf<>+32(SB), Y12, Y9 \
	VMOVDQU 112(AX), Y12 \
	VPSHUFB q6kx8PairShuf<>+0(SB), Y12, Y10 \
	VPSHUFB q6kx8PairShuf<>+32(SB), Y12, Y11 \
	VPSRAW $8, Y4, Y4 \
	VPSRAW $8, Y5, Y5 \
	VPSRAW $8, Y6, Y6 \
	VPSRAW $8, Y7, Y7 \
	VPSRAW $8, Y8, Y8 \
	VPSRAW $8, Y9, Y9 \
	VPSRAW $8, Y10, Y10 \
	VPSRAW $8, Y11, Y11 \
	VCVTPH2PS 0(AX), Y14

// Q6KX8_FLOAT takes the -32 of every weight off the token's isum (32 times
// the scaled bsums at 4(P), P having moved 256 bytes into the q8_K block)
// and adds d_a·(d·isum) for the 8 rows to its float accumulator at foff.
#define Q6KX8_FLOAT(P, ISUM, foff) \
	VPBROADCASTD 4(P), Y12 \
	VPMADDWD Y12, Y4, Y13 \
	VPBROADCASTD 8(P), Y12 \
	VPMADDWD Y12, Y5, Y12 \
	VPADDD Y12, Y13, Y13 \
	VPBROADCASTD 12(P), Y12 \
	VPMADDWD Y12, Y6, Y12 \
	VPADDD Y12, Y13, Y13 \
	VPBROADCASTD 16(P), Y12 \
	VPMADDWD Y12, Y7, Y12 \
	VPADDD Y12, Y13, Y13 \
	VPBROADCASTD 20(P), Y12 \
	VPMADDWD Y12, Y8, Y12 \
	VPADDD Y12, Y13, Y13 \
	VPBROADCASTD 24(P), Y12 \
	VPMADDWD Y12, Y9, Y12 \
	VPADDD Y12, Y13, Y13 \
	VPBROADCASTD 28(P), Y12 \
	VPMADDWD Y12, Y10, Y12 \
	VPADDD Y12, Y13, Y13 \
	VPBROADCASTD 32(P), Y12 \
	VPMADDWD Y12, Y11, Y12 \
	VPADDD Y12, Y13, Y13 \
	VPSLLD $5, Y13, Y13 \
	VPSUBD Y13, ISUM, ISUM \
	VCVTDQ2PS ISUM, ISUM \
	VMULPS Y14, ISUM, ISUM \
	VBROADCASTSS -256(P), Y12 \
	VMULPS Y12, ISUM, ISUM \
	VADDPS foff(SP), ISUM, ISUM \
	VMOVUPS ISUM, foff(SP)

// func q6Kx8AVX2x4(w, a []byte, astride, nb int, out *float32, ostride int)
//
// The 8 rows of one interleaved q6_K group times 4 tokens.
TEXT ·q6Kx8AVX2x4(SB), NOSPLIT, $256-80
	Q4KX8_SETUP

q6Kx8AVX2x4block:
	MOVQ SI, AX // the group block
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	LEAQ 16(AX), R9 // scales 0..3, then 4..7, ...
	ADDQ $144, SI // the quants
	MOVQ $4, DX

q6Kx8AVX2x4quarter:
	LEAQ q6kx8ScaleShuf<>(SB), R8
	MOVQ $4, BX

q6Kx8AVX2x4sub:
	VMOVDQU (R9), Y7
	VPSHUFB (R8), Y7, Y7
	VPSRAW $8, Y7, Y7 // the sub-block's scales
	Q6KX8_PIECES02
	Q6KX8_TOK(4, 12, DI, Y0)
	Q6KX8_TOK(4, 12, R10, Y1)
	Q6KX8_TOK(4, 12, R11, Y2)
	Q6KX8_TOK(4, 12, R12, Y3)
	Q6KX8_PIECES13
	Q6KX8_TOK(8, 16, DI, Y0)
	Q6KX8_TOK(8, 16, R10, Y1)
	Q6KX8_TOK(8, 16, R11, Y2)
	Q6KX8_TOK(8, 16, R12, Y3)
	ADDQ $96, SI
	ADDQ $16, DI
	ADDQ $16, R10
	ADDQ $16, R11
	ADDQ $16, R12
	ADDQ $32, R8
	DECQ BX
	JNZ q6Kx8AVX2x4sub
	ADDQ $32, R9
	DECQ DX
	JNZ q6Kx8AVX2x4quarter

	Q6KX8_PAIRS
	Q6KX8_FLOAT(DI, Y0, 128)
	Q6KX8_FLOAT(R10, Y1, 160)
	Q6KX8_FLOAT(R11, Y2, 192)
	Q6KX8_FLOAT(R12, Y3, 224)
	ADDQ $36, DI
	ADDQ $36, R10
	ADDQ $36, R11
	ADDQ $36, R12
	DECQ CX
	JNZ q6Kx8AVX2x4block

	MOVQ out+64(FP), AX
	MOVQ ostride+72(FP), BX
	VMOVUPS 128(SP), Y0
	VMOVUPS Y0, (AX)
	ADDQ BX, AX
	VMOVUPS 160(SP), Y0
	VMOVUPS Y0, (AX)
	ADDQ BX, AX
	VMOVUPS 192(SP), Y0
	VMOVUPS Y0, (AX)
	ADDQ BX, AX
	VMOVUPS 224(SP), Y0
	VMOVUPS Y0, (AX)
	VZEROUPPER
	RET


// func q6Kx8AVX2x3(w, a []byte, astride, nb int, out *float32, ostride int)
//
// The 8 rows of one interleaved q6_K group times 3 tokens.
TEXT ·q6Kx8AVX2x3(SB), NOSPLIT, $256-80
	Q4KX8_SETUP

q6Kx8AVX2x3block:
	MOVQ SI, AX // the group block
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	LEAQ 16(AX), R9 // scales 0..3, then 4..7, ...
	ADDQ $144, SI // the quants
	MOVQ $4, DX

q6Kx8AVX2x3quarter:
	LEAQ q6kx8ScaleShuf<>(SB), R8
	MOVQ $4, BX

q6Kx8AVX2x3sub:
	VMOVDQU (R9), Y7
	VPSHUFB (R8), Y7, Y7
	VPSRAW $8, Y7, Y7 // the sub-block's scales
	Q6KX8_PIECES02
	Q6KX8_TOK(4, 12, DI, Y0)
	Q6KX8_TOK(4, 12, R10, Y1)
	Q6KX8_TOK(4, 12, R11, Y2)
	Q6KX8_PIECES13
	Q6KX8_TOK(8, 16, DI, Y0)
	Q6KX8_TOK(8, 16, R10, Y1)
	Q6KX8_TOK(8, 16, R11, Y2)
	ADDQ $96, SI
	ADDQ $16, DI
	ADDQ $16, R10
	ADDQ $16, R11
	ADDQ $32, R8
	DECQ BX
	JNZ q6Kx8AVX2x3sub
	ADDQ $32, R9
	DECQ DX
	JNZ q6Kx8AVX2x3quarter

	Q6KX8_PAIRS
	Q6KX8_FLOAT(DI, Y0, 128)
	Q6KX8_FLOAT(R10, Y1, 160)
	Q6KX8_FLOAT(R11, Y2, 192)
	ADDQ $36, DI
	ADDQ $36, R10
	ADDQ $36, R11
	DECQ CX
	JNZ q6Kx8AVX2x3block

	MOVQ out+64(FP), AX
	MOVQ ostride+72(FP), BX
	VMOVUPS 128(SP), Y0
	VMOVUPS Y0, (AX)
	ADDQ BX, AX
	VMOVUPS 160(SP), Y0
	VMOVUPS Y0, (AX)
	ADDQ BX, AX
	VMOVUPS 192(SP), Y0
	VMOVUPS Y0, (AX)
	VZEROUPPER
	RET

// func q6Kx8AVX2x2(w, a []byte, astride, nb int, out *float32, ostride int)
//
// The 8 rows of one interleaved q6_K group times 2 tokens.
TEXT ·q6Kx8AVX2x2(SB), NOSPLIT, $256-80
	Q4KX8_SETUP

q6Kx8AVX2x2block:
	MOVQ SI, AX // the group block
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	LEAQ 16(AX), R9 // scales 0..3, then 4..7, ...
	ADDQ $144, SI // the quants
	MOVQ $4, DX

q6Kx8AVX2x2quarter:
	LEAQ q6kx8ScaleShuf<>(SB), R8
	MOVQ $4, BX

q6Kx8AVX2x2sub:
	VMOVDQU (R9), Y7
	VPSHUFB (R8), Y7, Y7
	VPSRAW $8, Y7, Y7 // the sub-block's scales
	Q6KX8_PIECES02
	Q6KX8_TOK(4, 12, DI, Y0)
	Q6KX8_TOK(4, 12, R10, Y1)
	Q6KX8_PIECES13
	Q6KX8_TOK(8, 16, DI, Y0)
	Q6KX8_TOK(8, 16, R10, Y1)
	ADDQ $96, SI
	ADDQ $16, DI
	ADDQ $16, R10
	ADDQ $32, R8
	DECQ BX
	JNZ q6Kx8AVX2x2sub
	ADDQ $32, R9
	DECQ DX
	JNZ q6Kx8AVX2x2quarter

	Q6KX8_PAIRS
	Q6KX8_FLOAT(DI, Y0, 128)
	Q6KX8_FLOAT(R10, Y1, 160)
	ADDQ $36, DI
	ADDQ $36, R10
	DECQ CX
	JNZ q6Kx8AVX2x2block

	MOVQ out+64(FP), AX
	MOVQ ostride+72(FP), BX
	VMOVUPS 128(SP), Y0
	VMOVUPS Y0, (AX)
	ADDQ BX, AX
	VMOVUPS 160(SP), Y0
	VMOVUPS Y0, (AX)
	VZEROUPPER
	RET


// func q6Kx8AVX2x1(w, a []byte, astride, nb int, out *float32, ostride int)
//
// The 8 rows of one interleaved q6_K group times 1 token.
TEXT ·q6Kx8AVX2x1(SB), NOSPLIT, $256-80
	Q4KX8_SETUP

q6Kx8AVX2x1block:
	MOVQ SI, AX // the group block
	VPXOR Y0, Y0, Y0
	LEAQ 16(AX), R9 // scales 0..3, then 4..7, ...
	ADDQ $144, SI // the quants
	MOVQ $4, DX

q6Kx8AVX2x1quarter:
	LEAQ q6kx8ScaleShuf<>(SB), R8
	MOVQ $4, BX

q6Kx8AVX2x1sub:
	VMOVDQU (R9), Y7
	VPSHUFB (R8), Y7, Y7
	VPSRAW $8, Y7, Y7 // the sub-block's scales
	Q6KX8_PIECES02
	Q6KX8_TOK(4, 12, DI, Y0)
	Q6KX8_PIECES13
	Q6KX8_TOK(8, 16, DI, Y0)
	ADDQ $96, SI
	ADDQ $16, DI
	ADDQ $32, R8
	DECQ BX
	JNZ q6Kx8AVX2x1sub
	ADDQ $32, R9
	DECQ DX
	JNZ q6Kx8AVX2x1quarter

	Q6KX8_PAIRS
	Q6KX8_FLOAT(DI, Y0, 128)
	ADDQ $36, DI
	DECQ CX
	JNZ q6Kx8AVX2x1block

	MOVQ out+64(FP), AX
	MOVQ ostride+72(FP), BX
	VMOVUPS 128(SP), Y0
	VMOVUPS Y0, (AX)
	VZEROUPPER
	RET

