//go:build gc && !purego

#include "textflag.h"

// Panel unpacking for the prefill GEMM (gemm_amd64.go). The quants of each
// of 16 rows are written four at a time (one dword) 64 bytes apart, so that
// the dwords of the 16 rows end side by side: VPSCATTERDD stores the 16
// dwords of one vector at indices 64 bytes apart.

// gemmIdx: byte offsets 64·i of 16 consecutive dwords; gemmIdxLo/Hi: those
// of the low and high nibbles of two 32-byte q4_K chunks (dwords 0..7 and
// 16..23, 8..15 and 24..31 of the element order).
DATA gemmIdx<>+0x00(SB)/8, $0x0000004000000000
DATA gemmIdx<>+0x08(SB)/8, $0x000000c000000080
DATA gemmIdx<>+0x10(SB)/8, $0x0000014000000100
DATA gemmIdx<>+0x18(SB)/8, $0x000001c000000180
DATA gemmIdx<>+0x20(SB)/8, $0x0000024000000200
DATA gemmIdx<>+0x28(SB)/8, $0x000002c000000280
DATA gemmIdx<>+0x30(SB)/8, $0x0000034000000300
DATA gemmIdx<>+0x38(SB)/8, $0x000003c000000380
GLOBL gemmIdx<>(SB), RODATA|NOPTR, $64

DATA gemmIdxLo<>+0x00(SB)/8, $0x0000004000000000
DATA gemmIdxLo<>+0x08(SB)/8, $0x000000c000000080
DATA gemmIdxLo<>+0x10(SB)/8, $0x0000014000000100
DATA gemmIdxLo<>+0x18(SB)/8, $0x000001c000000180
DATA gemmIdxLo<>+0x20(SB)/8, $0x0000044000000400
DATA gemmIdxLo<>+0x28(SB)/8, $0x000004c000000480
DATA gemmIdxLo<>+0x30(SB)/8, $0x0000054000000500
DATA gemmIdxLo<>+0x38(SB)/8, $0x000005c000000580
GLOBL gemmIdxLo<>(SB), RODATA|NOPTR, $64

DATA gemmIdxHi<>+0x00(SB)/8, $0x0000024000000200
DATA gemmIdxHi<>+0x08(SB)/8, $0x000002c000000280
DATA gemmIdxHi<>+0x10(SB)/8, $0x0000034000000300
DATA gemmIdxHi<>+0x18(SB)/8, $0x000003c000000380
DATA gemmIdxHi<>+0x20(SB)/8, $0x0000064000000600
DATA gemmIdxHi<>+0x28(SB)/8, $0x000006c000000680
DATA gemmIdxHi<>+0x30(SB)/8, $0x0000074000000700
DATA gemmIdxHi<>+0x38(SB)/8, $0x000007c000000780
GLOBL gemmIdxHi<>(SB), RODATA|NOPTR, $64

// gemmQHShift: right shifts (per qword) that bring the two qh bits of
// elements 0..31 | 32..63 (lo) and 64..95 | 96..127 (hi) of a q6_K half to
// bits 0-1 of each byte.
DATA gemmQHShift<>+0x00(SB)/8, $0
DATA gemmQHShift<>+0x08(SB)/8, $0
DATA gemmQHShift<>+0x10(SB)/8, $0
DATA gemmQHShift<>+0x18(SB)/8, $0
DATA gemmQHShift<>+0x20(SB)/8, $2
DATA gemmQHShift<>+0x28(SB)/8, $2
DATA gemmQHShift<>+0x30(SB)/8, $2
DATA gemmQHShift<>+0x38(SB)/8, $2
DATA gemmQHShift<>+0x40(SB)/8, $4
DATA gemmQHShift<>+0x48(SB)/8, $4
DATA gemmQHShift<>+0x50(SB)/8, $4
DATA gemmQHShift<>+0x58(SB)/8, $4
DATA gemmQHShift<>+0x60(SB)/8, $6
DATA gemmQHShift<>+0x68(SB)/8, $6
DATA gemmQHShift<>+0x70(SB)/8, $6
DATA gemmQHShift<>+0x78(SB)/8, $6
GLOBL gemmQHShift<>(SB), RODATA|NOPTR, $128

#define SCATTER(V, OFF, IDX) \
	KXNORW K1, K1, K1 \
	VPSCATTERDD V, K1, OFF(R9)(IDX*1)

// K4_SCALES writes the scales and mins of the q4_K/q5_K block at R8 (the
// 12 bytes at 4(R8), decoded as in matQ4KAVX512x4) and its d and dmin into
// the panel column at R9: each scale twice (its two 16-quant groups), the
// mins as word pairs (m, m). It needs Z27/Y28 = gemmIdx.
#define K4_SCALES \
	MOVL 4(R8), AX \
	MOVL 8(R8), BX \
	MOVL 12(R8), R10 \
	MOVL R10, R11 \
	SHRL $4, R11 \
	ANDL $0x0f0f0f0f, R11 \
	MOVL BX, R12 \
	SHRL $6, R12 \
	ANDL $0x03030303, R12 \
	SHLL $4, R12 \
	ORL R12, R11 \
	ANDL $0x0f0f0f0f, R10 \
	MOVL AX, R12 \
	SHRL $6, R12 \
	ANDL $0x03030303, R12 \
	SHLL $4, R12 \
	ORL R12, R10 \
	ANDL $0x3f3f3f3f, BX \
	ANDL $0x3f3f3f3f, AX \
	SHLQ $32, R10 \
	ORQ R10, AX \
	SHLQ $32, R11 \
	ORQ R11, BX \
	VMOVQ AX, X0 \
	VPUNPCKLBW X0, X0, X0 \
	VPMOVZXBD X0, Z0 \
	SCATTER(Z0, 4096, Z27) \
	VMOVQ BX, X1 \
	VPUNPCKLBW X1, X1, X1 \
	VPMOVZXBW X1, Y1 \
	KXNORW K1, K1, K1 \
	VPSCATTERDD Y1, K1, 5120(R9)(Y28*1) \
	VCVTPH2PS (R8), X2 \
	VMOVSS X2, 5632(R9) \
	VEXTRACTPS $1, X2, 5696(R9)

// func gemmUnpackQ4KAVX512(panel, w []byte, rb, nb int)
//
// All of a panel (gemmPackQ4KGo is the Go twin): the quants of a panel of 16 q4_K rows (rb bytes apart in w, nb blocks),
// as gemmPackQ4KGo writes them:
//
//	q := x[16+32*(s/2):]
//	panel[64*((32*s+l)/4)+4*r+l%4] = q[l] >> (4 * (s % 2)) & 0xf
TEXT ·gemmUnpackQ4KAVX512(SB), NOSPLIT, $0-64
	MOVQ panel_base+0(FP), DI
	MOVQ w_base+24(FP), SI
	MOVQ rb+48(FP), DX
	MOVQ nb+56(FP), CX
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z31
	VMOVDQU32 gemmIdxLo<>(SB), Z30
	VMOVDQU32 gemmIdxHi<>(SB), Z29
	VMOVDQU32 gemmIdx<>(SB), Z27
	VMOVDQU32 gemmIdx<>(SB), Y28

q4kblk:
	MOVQ SI, R8
	MOVQ DI, R9
	MOVQ $16, R13

q4krow:
	VMOVDQU64 16(R8), Z0
	VMOVDQU64 80(R8), Z1
	VPSRLW $4, Z0, Z2
	VPSRLW $4, Z1, Z3
	VPANDD Z31, Z0, Z0
	VPANDD Z31, Z1, Z1
	VPANDD Z31, Z2, Z2
	VPANDD Z31, Z3, Z3
	SCATTER(Z0, 0, Z30)
	SCATTER(Z2, 0, Z29)
	SCATTER(Z1, 2048, Z30)
	SCATTER(Z3, 2048, Z29)

	K4_SCALES
	ADDQ DX, R8
	ADDQ $4, R9
	DECQ R13
	JNZ q4krow

	ADDQ $144, SI
	ADDQ $5760, DI
	DECQ CX
	JNZ q4kblk
	VZEROUPPER
	RET

// func gemmUnpackQ6KAVX512(panel, w []byte, rb, nb int)
//
// All of a panel (gemmPackQ6KGo is the Go twin): the quants (0..63) of a panel of 16 q6_K rows, as gemmPackQ6KGo writes
// them (element 16g+j of row r at panel[64*((16g+j)/4)+4r+j%4]):
//
//	v := int32(ql[l]>>(4*(p/2))&0xf) | int32(qh[l]>>(2*p)&3)<<4
TEXT ·gemmUnpackQ6KAVX512(SB), NOSPLIT, $0-64
	MOVQ panel_base+0(FP), DI
	MOVQ w_base+24(FP), SI
	MOVQ rb+48(FP), DX
	MOVQ nb+56(FP), CX
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z31
	MOVL $0x03030303, AX
	VPBROADCASTD AX, Z28
	VMOVDQU32 gemmIdx<>(SB), Z30
	VMOVDQU64 gemmQHShift<>+0x00(SB), Z27
	VMOVDQU64 gemmQHShift<>+0x40(SB), Z26

q6kblk:
	MOVQ SI, R8
	MOVQ DI, R9
	MOVQ $16, BX

q6krow:
#define Q6K_HALF(QL, QH, OFF) \
	VMOVDQU64 QL(R8), Z0 \
	VBROADCASTI64X4 QH(R8), Z1 \
	VPSRLVQ Z27, Z1, Z2 \
	VPANDD Z28, Z2, Z2 \
	VPSLLW $4, Z2, Z2 \
	VPANDD Z31, Z0, Z4 \
	VPORD Z2, Z4, Z4 \
	VPSRLVQ Z26, Z1, Z3 \
	VPANDD Z28, Z3, Z3 \
	VPSLLW $4, Z3, Z3 \
	VPSRLW $4, Z0, Z5 \
	VPANDD Z31, Z5, Z5 \
	VPORD Z3, Z5, Z5 \
	SCATTER(Z4, OFF, Z30) \
	SCATTER(Z5, OFF+1024, Z30)

	Q6K_HALF(0, 128, 0)
	Q6K_HALF(64, 160, 2048)

	// Scales of the 16 groups, their pairs (-32·sc(2i), -32·sc(2i+1)) and d.
	VPMOVSXBD 192(R8), Z6
	SCATTER(Z6, 4096, Z30)
	VPMOVSXBW 192(R8), Y7
	VPSLLW $5, Y7, Y7
	VPXORD Y10, Y10, Y10
	VPSUBW Y7, Y10, Y7
	KXNORW K1, K1, K1
	VPSCATTERDD Y7, K1, 5120(R9)(Y30*1)
	MOVWLZX 208(R8), AX
	VMOVD AX, X8
	VCVTPH2PS X8, X8
	VMOVSS X8, 5632(R9)
	VMOVSS X8, 5696(R9)
	ADDQ DX, R8
	ADDQ $4, R9
	DECQ BX
	JNZ q6krow

	ADDQ $210, SI
	ADDQ $5760, DI
	DECQ CX
	JNZ q6kblk
	VZEROUPPER
	RET

// gemmQ5KShift: right shifts (per qword) that bring bit s of qh to bit 0
// for the four vectors of gemmUnpackQ5KAVX512: sub-blocks 0|2, 1|3, 4|6,
// 5|7 (lower | upper 32 bytes).
DATA gemmQ5KShift<>+0x00(SB)/8, $0
DATA gemmQ5KShift<>+0x08(SB)/8, $0
DATA gemmQ5KShift<>+0x10(SB)/8, $0
DATA gemmQ5KShift<>+0x18(SB)/8, $0
DATA gemmQ5KShift<>+0x20(SB)/8, $2
DATA gemmQ5KShift<>+0x28(SB)/8, $2
DATA gemmQ5KShift<>+0x30(SB)/8, $2
DATA gemmQ5KShift<>+0x38(SB)/8, $2
DATA gemmQ5KShift<>+0x40(SB)/8, $1
DATA gemmQ5KShift<>+0x48(SB)/8, $1
DATA gemmQ5KShift<>+0x50(SB)/8, $1
DATA gemmQ5KShift<>+0x58(SB)/8, $1
DATA gemmQ5KShift<>+0x60(SB)/8, $3
DATA gemmQ5KShift<>+0x68(SB)/8, $3
DATA gemmQ5KShift<>+0x70(SB)/8, $3
DATA gemmQ5KShift<>+0x78(SB)/8, $3
DATA gemmQ5KShift<>+0x80(SB)/8, $4
DATA gemmQ5KShift<>+0x88(SB)/8, $4
DATA gemmQ5KShift<>+0x90(SB)/8, $4
DATA gemmQ5KShift<>+0x98(SB)/8, $4
DATA gemmQ5KShift<>+0xa0(SB)/8, $6
DATA gemmQ5KShift<>+0xa8(SB)/8, $6
DATA gemmQ5KShift<>+0xb0(SB)/8, $6
DATA gemmQ5KShift<>+0xb8(SB)/8, $6
DATA gemmQ5KShift<>+0xc0(SB)/8, $5
DATA gemmQ5KShift<>+0xc8(SB)/8, $5
DATA gemmQ5KShift<>+0xd0(SB)/8, $5
DATA gemmQ5KShift<>+0xd8(SB)/8, $5
DATA gemmQ5KShift<>+0xe0(SB)/8, $7
DATA gemmQ5KShift<>+0xe8(SB)/8, $7
DATA gemmQ5KShift<>+0xf0(SB)/8, $7
DATA gemmQ5KShift<>+0xf8(SB)/8, $7
GLOBL gemmQ5KShift<>(SB), RODATA|NOPTR, $256

// Q5K_BIT ors the fifth bits (bit s of qh, broadcast in Z24, shifted by
// the counts at SHIFT) into the quants V: V |= (qh >> s & 1) << 4.
#define Q5K_BIT(SHIFT, V) \
	VPSRLVQ SHIFT, Z24, Z5 \
	VPANDD Z25, Z5, Z5 \
	VPSLLW $4, Z5, Z5 \
	VPORD Z5, V, V

// func gemmUnpackQ5KAVX512(panel, w []byte, rb, nb int)
//
// All of a panel of 16 q5_K rows (gemmPackQ5KGo is the Go twin): the
// quants of gemmUnpackQ4KAVX512 with their fifth bits, as dotQ5_K reads
// them:
//
//	v := int32(q[l]>>shift&0xf) | int32(x[16+l]>>s&1)<<4
TEXT ·gemmUnpackQ5KAVX512(SB), NOSPLIT, $0-64
	MOVQ panel_base+0(FP), DI
	MOVQ w_base+24(FP), SI
	MOVQ rb+48(FP), DX
	MOVQ nb+56(FP), CX
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z31
	MOVL $0x01010101, AX
	VPBROADCASTD AX, Z25
	VMOVDQU32 gemmIdxLo<>(SB), Z30
	VMOVDQU32 gemmIdxHi<>(SB), Z29
	VMOVDQU32 gemmIdx<>(SB), Z27
	VMOVDQU32 gemmIdx<>(SB), Y28
	VMOVDQU64 gemmQ5KShift<>+0x00(SB), Z20
	VMOVDQU64 gemmQ5KShift<>+0x40(SB), Z21
	VMOVDQU64 gemmQ5KShift<>+0x80(SB), Z22
	VMOVDQU64 gemmQ5KShift<>+0xc0(SB), Z23

q5kblk:
	MOVQ SI, R8
	MOVQ DI, R9
	MOVQ $16, R13

q5krow:
	VMOVDQU64 48(R8), Z0
	VMOVDQU64 112(R8), Z1
	VBROADCASTI64X4 16(R8), Z24
	VPSRLW $4, Z0, Z2
	VPSRLW $4, Z1, Z3
	VPANDD Z31, Z0, Z0
	VPANDD Z31, Z1, Z1
	VPANDD Z31, Z2, Z2
	VPANDD Z31, Z3, Z3
	Q5K_BIT(Z20, Z0)
	Q5K_BIT(Z21, Z2)
	Q5K_BIT(Z22, Z1)
	Q5K_BIT(Z23, Z3)
	SCATTER(Z0, 0, Z30)
	SCATTER(Z2, 0, Z29)
	SCATTER(Z1, 2048, Z30)
	SCATTER(Z3, 2048, Z29)
	K4_SCALES
	ADDQ DX, R8
	ADDQ $4, R9
	DECQ R13
	JNZ q5krow

	ADDQ $176, SI
	ADDQ $5760, DI
	DECQ CX
	JNZ q5kblk
	VZEROUPPER
	RET
