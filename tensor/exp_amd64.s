//go:build gc && !purego

#include "textflag.h"

// Constants of Expf (ops.go), each broadcast to eight float32 lanes.
DATA expConst<>+0x00(SB)/4, $0x4b400000 // r = 0x1.8p23
DATA expConst<>+0x04(SB)/4, $0x3fb8aa3b // 0x1.715476p+0 (log2 e)
DATA expConst<>+0x08(SB)/4, $0x3f317200 // 0x1.62e4p-1 (ln 2, high part)
DATA expConst<>+0x0c(SB)/4, $0x35bfbe8e // 0x1.7f7d1cp-20 (ln 2, low part)
DATA expConst<>+0x10(SB)/4, $0x3c072010 // 0x1.0e4020p-7
DATA expConst<>+0x14(SB)/4, $0x3d2b9f17 // 0x1.573e2ep-5
DATA expConst<>+0x18(SB)/4, $0x3e2aaf33 // 0x1.555e66p-3
DATA expConst<>+0x1c(SB)/4, $0x3efffedb // 0x1.fffdb6p-2
DATA expConst<>+0x20(SB)/4, $0x3f7ffff6 // 0x1.ffffecp-1
DATA expConst<>+0x24(SB)/4, $0x3f800000 // 1
DATA expConst<>+0x28(SB)/4, $0xc2fc0000 // -126: smallest n with 2^n a normal float32
DATA expConst<>+0x2c(SB)/4, $0x42fe0000 // 127: largest
DATA expConst<>+0x30(SB)/4, $0x0000007f // exponent bias
DATA expConst<>+0x34(SB)/4, $0x80000000 // sign bit
GLOBL expConst<>(SB), RODATA|NOPTR, $56

// LOADCONST broadcasts the constants used by EXP8 into Y8..Y15.
#define LOADCONST \
	VBROADCASTSS expConst<>+0x00(SB), Y8 \
	VBROADCASTSS expConst<>+0x04(SB), Y9 \
	VBROADCASTSS expConst<>+0x08(SB), Y10 \
	VBROADCASTSS expConst<>+0x0c(SB), Y11 \
	VBROADCASTSS expConst<>+0x24(SB), Y12 \
	VBROADCASTSS expConst<>+0x28(SB), Y13 \
	VBROADCASTSS expConst<>+0x2c(SB), Y14 \
	VBROADCASTSS expConst<>+0x34(SB), Y15

// EXP8 sets Y7 = Expf(Y1) lane by lane, operation for operation as the Go
// code (each fma32 a single-rounding VFMADD), and jumps to OUT if a lane's
// power of two 2^n is not a normal float32 (or the input is NaN): those
// vectors are left to the Go code. Clobbers AX and Y2..Y7. In order:
// z = x·log2e + r; n = z - r; check -126 <= n <= 127; b = x - n·ln2hi -
// n·ln2lo; u = b²; t1 = c4·b + c3; t2 = c2·b + c1; t3 = t1·u + t2;
// t4 = c0·b + 1; j = t3·u + t4; result j·2^n (2^n built from the bits).
#define EXP8(OUT) \
	VMOVAPS Y8, Y2 \
	VFMADD231PS Y9, Y1, Y2 \        // z = x·log2e + r
	VSUBPS Y8, Y2, Y2 \             // n = z - r
	VCMPPS $0x1d, Y13, Y2, Y3 \     // n >= -126 (false for NaN)
	VCMPPS $0x12, Y14, Y2, Y4 \     // n <= 127
	VANDPS Y4, Y3, Y3 \
	VMOVMSKPS Y3, AX \
	CMPL AX, $0xff \
	JNE OUT \
	VMOVAPS Y1, Y3 \
	VFNMADD231PS Y10, Y2, Y3 \      // b = x - n·ln2hi
	VFNMADD231PS Y11, Y2, Y3 \      // b -= n·ln2lo
	VMULPS Y3, Y3, Y4 \             // u = b²
	VBROADCASTSS expConst<>+0x14(SB), Y5 \
	VBROADCASTSS expConst<>+0x10(SB), Y6 \
	VFMADD231PS Y6, Y3, Y5 \        // t1 = c4·b + c3
	VBROADCASTSS expConst<>+0x1c(SB), Y6 \
	VBROADCASTSS expConst<>+0x18(SB), Y7 \
	VFMADD231PS Y7, Y3, Y6 \        // t2 = c2·b + c1
	VFMADD231PS Y5, Y4, Y6 \        // t3 = t1·u + t2
	VBROADCASTSS expConst<>+0x20(SB), Y5 \
	VMOVAPS Y12, Y7 \
	VFMADD231PS Y5, Y3, Y7 \        // t4 = c0·b + 1
	VFMADD231PS Y6, Y4, Y7 \        // j = t3·u + t4
	VCVTPS2DQ Y2, Y2 \              // n is a whole number: exact
	VPBROADCASTD expConst<>+0x30(SB), Y5 \
	VPADDD Y5, Y2, Y2 \
	VPSLLD $23, Y2, Y2 \            // 2^n
	VMULPS Y2, Y7, Y7

// func swigluAVX2(dst, gate, up *float32, n int) int
//
// dst[i] = float32(g/(1+Expf(-g))) * up[i] for i in [0, n), n a multiple of
// 8, eight at a time; it stops at the first group of eight with a lane that
// EXP8 leaves to Go and returns how many elements it wrote.
TEXT ·swigluAVX2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ gate+8(FP), SI
	MOVQ up+16(FP), DX
	MOVQ n+24(FP), CX
	XORQ BX, BX
	LOADCONST

swiloop:
	CMPQ BX, CX
	JGE swidone
	VMOVUPS (SI)(BX*4), Y0
	VXORPS Y15, Y0, Y1 // x = -g
	EXP8(swidone)
	VADDPS Y12, Y7, Y7     // 1 + e
	VDIVPS Y7, Y0, Y0      // g / (1 + e)
	VMULPS (DX)(BX*4), Y0, Y0
	VMOVUPS Y0, (DI)(BX*4)
	ADDQ $8, BX
	JMP swiloop

swidone:
	VZEROUPPER
	MOVQ BX, ret+32(FP)
	RET

// func expShiftAVX2(x *float32, m float32, n int) int
//
// x[i] = Expf(x[i] - m) for i in [0, n), n a multiple of 8, eight at a
// time; it stops like swigluAVX2 and returns how many elements it wrote.
TEXT ·expShiftAVX2(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), DI
	VBROADCASTSS m+8(FP), Y0
	MOVQ n+16(FP), CX
	XORQ BX, BX
	LOADCONST

exploop:
	CMPQ BX, CX
	JGE expdone
	VMOVUPS (DI)(BX*4), Y1
	VSUBPS Y0, Y1, Y1 // x - m
	EXP8(expdone)
	VMOVUPS Y7, (DI)(BX*4)
	ADDQ $8, BX
	JMP exploop

expdone:
	VZEROUPPER
	MOVQ BX, ret+24(FP)
	RET
