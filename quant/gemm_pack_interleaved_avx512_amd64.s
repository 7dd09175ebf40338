//go:build gc && !purego

#include "textflag.h"

// Panel unpacking for the prefill GEMM from interleaved weights in groups
// of 16 rows (gemm_interleaved_amd64.go; interleave.go has the layouts,
// gemm_amd64.go the panel's): a 64-byte piece of a group holds 4 quants of
// each of the panel's 16 rows, as a panel line does.

// ilvByteK (k = 0..3, 16 bytes each, one 128-bit lane): VPSHUFB controls
// that keep byte k of each dword, zero-extended to the dword.
DATA ilvByteK<>+0x00(SB)/8, $0x8080800480808000
DATA ilvByteK<>+0x08(SB)/8, $0x8080800c80808008
DATA ilvByteK<>+0x10(SB)/8, $0x8080800580808001
DATA ilvByteK<>+0x18(SB)/8, $0x8080800d80808009
DATA ilvByteK<>+0x20(SB)/8, $0x8080800680808002
DATA ilvByteK<>+0x28(SB)/8, $0x8080800e8080800a
DATA ilvByteK<>+0x30(SB)/8, $0x8080800780808003
DATA ilvByteK<>+0x38(SB)/8, $0x8080800f8080800b
GLOBL ilvByteK<>(SB), RODATA|NOPTR, $64

// ilvPairK (k = 0..3): controls that put byte k of each dword in both its
// words, zero-extended (the (m, m) pairs of a q4_K min).
DATA ilvPairK<>+0x00(SB)/8, $0x8004800480008000
DATA ilvPairK<>+0x08(SB)/8, $0x800c800c80088008
DATA ilvPairK<>+0x10(SB)/8, $0x8005800580018001
DATA ilvPairK<>+0x18(SB)/8, $0x800d800d80098009
DATA ilvPairK<>+0x20(SB)/8, $0x8006800680028002
DATA ilvPairK<>+0x28(SB)/8, $0x800e800e800a800a
DATA ilvPairK<>+0x30(SB)/8, $0x8007800780038003
DATA ilvPairK<>+0x38(SB)/8, $0x800f800f800b800b
GLOBL ilvPairK<>(SB), RODATA|NOPTR, $64

// ilvHiPair (k = 0, 2): controls that put bytes k and k+1 of each dword in
// the high bytes of its two words (VPSRAW then sign-extends them).
DATA ilvHiPair<>+0x00(SB)/8, $0x0580048001800080
DATA ilvHiPair<>+0x08(SB)/8, $0x0d800c8009800880
DATA ilvHiPair<>+0x10(SB)/8, $0x0780068003800280
DATA ilvHiPair<>+0x18(SB)/8, $0x0f800e800b800a80
GLOBL ilvHiPair<>(SB), RODATA|NOPTR, $32

// ILV_Q4_PIECE writes piece i of the sub-block at R8 (quants 4i..4i+3 of
// the 16 rows in the low nibbles, 16 further on in the high ones) to panel
// lines i and 4+i from R9.
#define ILV_Q4_PIECE(i) \
	VMOVDQU64 (64*i)(R8), Z0 \
	VPSRLW $4, Z0, Z1 \
	VPANDD Z31, Z0, Z0 \
	VPANDD Z31, Z1, Z1 \
	VMOVDQU64 Z0, (64*i)(R9) \
	VMOVDQU64 Z1, (256+64*i)(R9)

// func gemmUnpackQ4KIlvAVX512(panel, w []byte, nb int)
//
// gemmPackQ4KIlvGo is the Go twin.
TEXT ·gemmUnpackQ4KIlvAVX512(SB), NOSPLIT, $0-56
	MOVQ panel_base+0(FP), DI
	MOVQ w_base+24(FP), SI
	MOVQ nb+48(FP), CX
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z31
	MOVL $0x3f3f3f3f, AX
	VPBROADCASTD AX, Z30
	MOVL $0x30303030, AX
	VPBROADCASTD AX, Z29
	VBROADCASTI32X4 ilvByteK<>+0x00(SB), Z20
	VBROADCASTI32X4 ilvByteK<>+0x10(SB), Z21
	VBROADCASTI32X4 ilvByteK<>+0x20(SB), Z22
	VBROADCASTI32X4 ilvByteK<>+0x30(SB), Z23
	VBROADCASTI32X4 ilvPairK<>+0x00(SB), Z24
	VBROADCASTI32X4 ilvPairK<>+0x10(SB), Z25
	VBROADCASTI32X4 ilvPairK<>+0x20(SB), Z26
	VBROADCASTI32X4 ilvPairK<>+0x30(SB), Z27

q4ilvblk:
	LEAQ 256(SI), R8
	MOVQ DI, R9
	MOVQ $8, BX

q4ilvsub:
	ILV_Q4_PIECE(0)
	ILV_Q4_PIECE(1)
	ILV_Q4_PIECE(2)
	ILV_Q4_PIECE(3)
	ADDQ $256, R8
	ADDQ $512, R9
	DECQ BX
	JNZ q4ilvsub

	// The scales: planes A (scale bytes 0..3 of each row), B (4..7), C
	// (8..11) decoded as scaleMinK4 does: sc 0..3 = A&63, m 0..3 = B&63,
	// sc 4..7 = C&15 | A>>6<<4, m 4..7 = C>>4 | B>>6<<4.
	VMOVDQU64 64(SI), Z2
	VMOVDQU64 128(SI), Z3
	VMOVDQU64 192(SI), Z4
	VPANDD Z30, Z2, Z5 // sc 0..3
	VPANDD Z30, Z3, Z6 // m 0..3
	VPSRLW $2, Z2, Z7
	VPANDD Z29, Z7, Z7
	VPANDD Z31, Z4, Z8
	VPORD Z8, Z7, Z7 // sc 4..7
	VPSRLW $2, Z3, Z8
	VPANDD Z29, Z8, Z8
	VPSRLW $4, Z4, Z9
	VPANDD Z31, Z9, Z9
	VPORD Z9, Z8, Z8 // m 4..7

#define ILV_Q4_SCALE(S, M, CTL, PCTL, s) \
	VPSHUFB CTL, S, Z10 \
	VMOVDQU64 Z10, (4096+128*s)(DI) \
	VMOVDQU64 Z10, (4096+128*s+64)(DI) \
	VPSHUFB PCTL, M, Z11 \
	VMOVDQU64 Z11, (5120+64*s)(DI)

	ILV_Q4_SCALE(Z5, Z6, Z20, Z24, 0)
	ILV_Q4_SCALE(Z5, Z6, Z21, Z25, 1)
	ILV_Q4_SCALE(Z5, Z6, Z22, Z26, 2)
	ILV_Q4_SCALE(Z5, Z6, Z23, Z27, 3)
	ILV_Q4_SCALE(Z7, Z8, Z20, Z24, 4)
	ILV_Q4_SCALE(Z7, Z8, Z21, Z25, 5)
	ILV_Q4_SCALE(Z7, Z8, Z22, Z26, 6)
	ILV_Q4_SCALE(Z7, Z8, Z23, Z27, 7)

	// d and dmin of the 16 rows.
	VCVTPH2PS 0(SI), Z12
	VMOVUPS Z12, 5632(DI)
	VCVTPH2PS 32(SI), Z13
	VMOVUPS Z13, 5696(DI)

	ADDQ $2304, SI
	ADDQ $5760, DI
	DECQ CX
	JNZ q4ilvblk
	VZEROUPPER
	RET

// func gemmUnpackQ6KIlvAVX512(panel, w []byte, nb int)
//
// gemmPackQ6KIlvGo is the Go twin: sub-block g's pieces L0, L1 and H give
// panel lines 4g..4g+3 as
//
//	L0&15 | (H&3)<<4, L1&15 | (H>>2&3)<<4, L0>>4 | (H>>4&3)<<4, L1>>4 | (H>>6)<<4
TEXT ·gemmUnpackQ6KIlvAVX512(SB), NOSPLIT, $0-56
	MOVQ panel_base+0(FP), DI
	MOVQ w_base+24(FP), SI
	MOVQ nb+48(FP), CX
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z31
	MOVL $0x03030303, AX
	VPBROADCASTD AX, Z30
	MOVL $0x0c0c0c0c, AX
	VPBROADCASTD AX, Z29
	MOVL $0x30303030, AX
	VPBROADCASTD AX, Z28
	MOVL $0xc0c0c0c0, AX
	VPBROADCASTD AX, Z27
	VBROADCASTI32X4 ilvHiPair<>+0x00(SB), Z26
	VBROADCASTI32X4 ilvHiPair<>+0x10(SB), Z25
	VPXORD Z24, Z24, Z24

q6ilvblk:
	LEAQ 288(SI), R8
	MOVQ DI, R9
	MOVQ $16, BX

q6ilvsub:
	VMOVDQU64 0(R8), Z0 // L0
	VMOVDQU64 64(R8), Z1 // L1
	VMOVDQU64 128(R8), Z2 // H
	VPANDD Z30, Z2, Z3
	VPSLLW $4, Z3, Z3
	VPANDD Z31, Z0, Z4
	VPORD Z3, Z4, Z4
	VMOVDQU64 Z4, 0(R9)
	VPANDD Z29, Z2, Z3
	VPSLLW $2, Z3, Z3
	VPANDD Z31, Z1, Z4
	VPORD Z3, Z4, Z4
	VMOVDQU64 Z4, 64(R9)
	VPANDD Z28, Z2, Z3
	VPSRLW $4, Z0, Z4
	VPANDD Z31, Z4, Z4
	VPORD Z3, Z4, Z4
	VMOVDQU64 Z4, 128(R9)
	VPANDD Z27, Z2, Z3
	VPSRLW $2, Z3, Z3
	VPSRLW $4, Z1, Z4
	VPANDD Z31, Z4, Z4
	VPORD Z3, Z4, Z4
	VMOVDQU64 Z4, 192(R9)
	ADDQ $192, R8
	ADDQ $256, R9
	DECQ BX
	JNZ q6ilvsub

	// Scales: plane t holds scales 4t..4t+3 of each row (a dword per row).
	// Each scale, sign-extended, for its 16-quant group; the pairs
	// (-32·sc(2i), -32·sc(2i+1)) as words.
#define ILV_Q6_SCALES(t) \
	VMOVDQU64 (32+64*t)(SI), Z5 \
	VPSLLD $24, Z5, Z6 \
	VPSRAD $24, Z6, Z6 \
	VMOVDQU64 Z6, (4096+256*t)(DI) \
	VPSLLD $16, Z5, Z6 \
	VPSRAD $24, Z6, Z6 \
	VMOVDQU64 Z6, (4096+256*t+64)(DI) \
	VPSLLD $8, Z5, Z6 \
	VPSRAD $24, Z6, Z6 \
	VMOVDQU64 Z6, (4096+256*t+128)(DI) \
	VPSRAD $24, Z5, Z6 \
	VMOVDQU64 Z6, (4096+256*t+192)(DI) \
	VPSHUFB Z26, Z5, Z6 \
	VPSRAW $3, Z6, Z6 \
	VPSUBW Z6, Z24, Z6 \
	VMOVDQU64 Z6, (5120+128*t)(DI) \
	VPSHUFB Z25, Z5, Z6 \
	VPSRAW $3, Z6, Z6 \
	VPSUBW Z6, Z24, Z6 \
	VMOVDQU64 Z6, (5120+128*t+64)(DI)

	ILV_Q6_SCALES(0)
	ILV_Q6_SCALES(1)
	ILV_Q6_SCALES(2)
	ILV_Q6_SCALES(3)

	// d of the 16 rows, as d and dmin.
	VCVTPH2PS 0(SI), Z12
	VMOVUPS Z12, 5632(DI)
	VMOVUPS Z12, 5696(DI)

	ADDQ $3360, SI
	ADDQ $5760, DI
	DECQ CX
	JNZ q6ilvblk
	VZEROUPPER
	RET
