//go:build gc && !purego

#include "textflag.h"

// DELTA_REDUCE sums the accumulators A0-A3 (a 32-value chunk's lanes 0-7,
// 8-15, 16-23, 24-31) into the low lane of XA0 (A0's X register) as
// ggml_vec_dot_f32's AVX2 build does: (acc0+acc2) + (acc1+acc3), the
// 128-bit halves added, two horizontal adds. XA1 is A1's X register.
#define DELTA_REDUCE(A0, A1, A2, A3, XA0, XA1) \
	VADDPS A2, A0, A0 \
	VADDPS A3, A1, A1 \
	VADDPS A1, A0, A0 \
	VEXTRACTF128 $1, A0, XA1 \
	VADDPS XA1, XA0, XA0 \
	VHADDPS XA0, XA0, XA0 \
	VHADDPS XA0, XA0, XA0

// SCALEDOT scales 32 values of the column at COL+AX by Y15, stores them
// and adds their products with k (R9+AX) to A0-A3.
#define SCALEDOT(COL, A0, A1, A2, A3) \
	VMULPS (COL)(AX*1), Y15, Y8 \
	VMULPS 32(COL)(AX*1), Y15, Y9 \
	VMULPS 64(COL)(AX*1), Y15, Y10 \
	VMULPS 96(COL)(AX*1), Y15, Y11 \
	VMOVUPS Y8, (COL)(AX*1) \
	VMOVUPS Y9, 32(COL)(AX*1) \
	VMOVUPS Y10, 64(COL)(AX*1) \
	VMOVUPS Y11, 96(COL)(AX*1) \
	VFMADD231PS (R9)(AX*1), Y8, A0 \
	VFMADD231PS 32(R9)(AX*1), Y9, A1 \
	VFMADD231PS 64(R9)(AX*1), Y10, A2 \
	VFMADD231PS 96(R9)(AX*1), Y11, A3

// UPDATEDOT adds k·D to 32 values of the column at COL+AX, stores them and
// adds their products with q (R8+AX) to A0-A3.
#define UPDATEDOT(COL, D, A0, A1, A2, A3) \
	VMOVUPS (COL)(AX*1), Y8 \
	VMOVUPS 32(COL)(AX*1), Y9 \
	VMOVUPS 64(COL)(AX*1), Y10 \
	VMOVUPS 96(COL)(AX*1), Y11 \
	VFMADD231PS (R9)(AX*1), D, Y8 \
	VFMADD231PS 32(R9)(AX*1), D, Y9 \
	VFMADD231PS 64(R9)(AX*1), D, Y10 \
	VFMADD231PS 96(R9)(AX*1), D, Y11 \
	VMOVUPS Y8, (COL)(AX*1) \
	VMOVUPS Y9, 32(COL)(AX*1) \
	VMOVUPS Y10, 64(COL)(AX*1) \
	VMOVUPS Y11, 96(COL)(AX*1) \
	VFMADD231PS (R8)(AX*1), Y8, A0 \
	VFMADD231PS 32(R8)(AX*1), Y9, A1 \
	VFMADD231PS 64(R8)(AX*1), Y10, A2 \
	VFMADD231PS 96(R8)(AX*1), Y11, A3

#define ZERO8 \
	VXORPS Y0, Y0, Y0 \
	VXORPS Y1, Y1, Y1 \
	VXORPS Y2, Y2, Y2 \
	VXORPS Y3, Y3, Y3 \
	VXORPS Y4, Y4, Y4 \
	VXORPS Y5, Y5, Y5 \
	VXORPS Y6, Y6, Y6 \
	VXORPS Y7, Y7, Y7

// func deltaRuleAVX2(s, q, k, v, out *float32, n int, decay, beta, scale float32)
//
// Two columns at a time (DI and SI = DI + n floats), their dependency
// chains side by side: scale each by decay and dot it with k (one pass),
// then d = (v[j] - dot)*beta, add k*d to it and dot it with q (a second
// pass), out[j] = dot*scale. n is a positive multiple of 32.
TEXT ·deltaRuleAVX2(SB), NOSPLIT, $0-60
	MOVQ s+0(FP), DI
	MOVQ q+8(FP), R8
	MOVQ k+16(FP), R9
	MOVQ v+24(FP), R10
	MOVQ out+32(FP), R11
	MOVQ n+40(FP), CX
	VBROADCASTSS decay+48(FP), Y15
	VMOVSS beta+52(FP), X14
	MOVQ CX, BX
	SHLQ $2, BX // column bytes
	MOVQ CX, R12
	SHRQ $1, R12 // column pairs left

pair:
	LEAQ (DI)(BX*1), SI
	ZERO8
	XORQ AX, AX

scaledot:
	SCALEDOT(DI, Y0, Y1, Y2, Y3)
	SCALEDOT(SI, Y4, Y5, Y6, Y7)
	ADDQ $128, AX
	CMPQ AX, BX
	JNE  scaledot

	DELTA_REDUCE(Y0, Y1, Y2, Y3, X0, X1)
	DELTA_REDUCE(Y4, Y5, Y6, Y7, X4, X5)
	VMOVSS (R10), X12
	VSUBSS X0, X12, X12
	VMULSS X14, X12, X12
	VBROADCASTSS X12, Y12
	VMOVSS 4(R10), X13
	VSUBSS X4, X13, X13
	VMULSS X14, X13, X13
	VBROADCASTSS X13, Y13
	ZERO8
	XORQ AX, AX

updatedot:
	UPDATEDOT(DI, Y12, Y0, Y1, Y2, Y3)
	UPDATEDOT(SI, Y13, Y4, Y5, Y6, Y7)
	ADDQ $128, AX
	CMPQ AX, BX
	JNE  updatedot

	DELTA_REDUCE(Y0, Y1, Y2, Y3, X0, X1)
	DELTA_REDUCE(Y4, Y5, Y6, Y7, X4, X5)
	VMULSS scale+56(FP), X0, X0
	VMULSS scale+56(FP), X4, X4
	VMOVSS X0, (R11)
	VMOVSS X4, 4(R11)

	LEAQ (SI)(BX*1), DI
	ADDQ $8, R10
	ADDQ $8, R11
	DECQ R12
	JNZ  pair
	VZEROUPPER
	RET

// The AVX-512 kernel: a 16-lane register holds two of ggml's 8-lane
// accumulators (values i..i+15 of each 32: acc0 and acc1; i+16..i+31:
// acc2 and acc3), so adding the two registers is (acc0+acc2 | acc1+acc3),
// and the rest of the reduction is the AVX2 kernel's.
#define DELTA_REDUCE512(ZA, ZB, YA, YB, XA, XB) \
	VADDPS ZB, ZA, ZA \
	VEXTRACTF64X4 $1, ZA, YB \
	VADDPS YB, YA, YA \
	VEXTRACTF128 $1, YA, XB \
	VADDPS XB, XA, XA \
	VHADDPS XA, XA, XA \
	VHADDPS XA, XA, XA

#define SCALEDOT512(COL, ZA, ZB) \
	VMULPS (COL)(AX*1), Z15, Z8 \
	VMULPS 64(COL)(AX*1), Z15, Z9 \
	VMOVUPS Z8, (COL)(AX*1) \
	VMOVUPS Z9, 64(COL)(AX*1) \
	VFMADD231PS (R9)(AX*1), Z8, ZA \
	VFMADD231PS 64(R9)(AX*1), Z9, ZB

#define UPDATEDOT512(COL, D, ZA, ZB) \
	VMOVUPS (COL)(AX*1), Z8 \
	VMOVUPS 64(COL)(AX*1), Z9 \
	VFMADD231PS (R9)(AX*1), D, Z8 \
	VFMADD231PS 64(R9)(AX*1), D, Z9 \
	VMOVUPS Z8, (COL)(AX*1) \
	VMOVUPS Z9, 64(COL)(AX*1) \
	VFMADD231PS (R8)(AX*1), Z8, ZA \
	VFMADD231PS 64(R8)(AX*1), Z9, ZB

#define ZERO4Z \
	VPXORD Z0, Z0, Z0 \
	VPXORD Z1, Z1, Z1 \
	VPXORD Z2, Z2, Z2 \
	VPXORD Z3, Z3, Z3

// func deltaRuleAVX512(s, q, k, v, out *float32, n int, decay, beta, scale float32)
//
// deltaRuleAVX2 in 16-lane registers, bit for bit.
TEXT ·deltaRuleAVX512(SB), NOSPLIT, $0-60
	MOVQ s+0(FP), DI
	MOVQ q+8(FP), R8
	MOVQ k+16(FP), R9
	MOVQ v+24(FP), R10
	MOVQ out+32(FP), R11
	MOVQ n+40(FP), CX
	VBROADCASTSS decay+48(FP), Z15
	VMOVSS beta+52(FP), X14
	MOVQ CX, BX
	SHLQ $2, BX
	MOVQ CX, R12
	SHRQ $1, R12

pair512:
	LEAQ (DI)(BX*1), SI
	ZERO4Z
	XORQ AX, AX

scaledot512:
	SCALEDOT512(DI, Z0, Z1)
	SCALEDOT512(SI, Z2, Z3)
	ADDQ $128, AX
	CMPQ AX, BX
	JNE  scaledot512

	DELTA_REDUCE512(Z0, Z1, Y0, Y1, X0, X1)
	DELTA_REDUCE512(Z2, Z3, Y2, Y3, X2, X3)
	VMOVSS (R10), X12
	VSUBSS X0, X12, X12
	VMULSS X14, X12, X12
	VBROADCASTSS X12, Z12
	VMOVSS 4(R10), X13
	VSUBSS X2, X13, X13
	VMULSS X14, X13, X13
	VBROADCASTSS X13, Z13
	ZERO4Z
	XORQ AX, AX

updatedot512:
	UPDATEDOT512(DI, Z12, Z0, Z1)
	UPDATEDOT512(SI, Z13, Z2, Z3)
	ADDQ $128, AX
	CMPQ AX, BX
	JNE  updatedot512

	DELTA_REDUCE512(Z0, Z1, Y0, Y1, X0, X1)
	DELTA_REDUCE512(Z2, Z3, Y2, Y3, X2, X3)
	VMULSS scale+56(FP), X0, X0
	VMULSS scale+56(FP), X2, X2
	VMOVSS X0, (R11)
	VMOVSS X2, 4(R11)

	LEAQ (SI)(BX*1), DI
	ADDQ $8, R10
	ADDQ $8, R11
	DECQ R12
	JNZ  pair512
	VZEROUPPER
	RET
