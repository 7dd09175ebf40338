//go:build gc && !purego

#include "textflag.h"

// DELTA_REDUCE sums the accumulators Y0-Y3 (the 32-value chunks' lanes
// 0-7, 8-15, 16-23, 24-31) into X0 as ggml_vec_dot_f32's AVX2 build does:
// (acc0+acc2) + (acc1+acc3), the 128-bit halves added, two horizontal
// adds. Clobbers Y1-Y3.
#define DELTA_REDUCE \
	VADDPS Y2, Y0, Y0 \
	VADDPS Y3, Y1, Y1 \
	VADDPS Y1, Y0, Y0 \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPS X1, X0, X0 \
	VHADDPS X0, X0, X0 \
	VHADDPS X0, X0, X0

#define DELTA_ZERO \
	VXORPS Y0, Y0, Y0 \
	VXORPS Y1, Y1, Y1 \
	VXORPS Y2, Y2, Y2 \
	VXORPS Y3, Y3, Y3

// func deltaRuleAVX2(s, q, k, v, out *float32, n int, decay, beta, scale float32)
//
// For each column j of the state (n floats at s + j*n*4): scale it by
// decay and dot it with k (one pass), then d = (v[j] - dot)*beta, add
// k*d to it and dot it with q (a second pass), out[j] = dot*scale.
TEXT ·deltaRuleAVX2(SB), NOSPLIT, $0-60
	MOVQ s+0(FP), DI
	MOVQ q+8(FP), R8
	MOVQ k+16(FP), R9
	MOVQ v+24(FP), R10
	MOVQ out+32(FP), R11
	MOVQ n+40(FP), CX
	VBROADCASTSS decay+48(FP), Y15
	VMOVSS beta+52(FP), X14
	VMOVSS scale+56(FP), X13
	MOVQ CX, BX
	SHLQ $2, BX // column bytes
	MOVQ CX, R12 // columns left

column:
	DELTA_ZERO
	XORQ AX, AX

scaledot:
	VMULPS (DI)(AX*1), Y15, Y4
	VMULPS 32(DI)(AX*1), Y15, Y5
	VMULPS 64(DI)(AX*1), Y15, Y6
	VMULPS 96(DI)(AX*1), Y15, Y7
	VMOVUPS Y4, (DI)(AX*1)
	VMOVUPS Y5, 32(DI)(AX*1)
	VMOVUPS Y6, 64(DI)(AX*1)
	VMOVUPS Y7, 96(DI)(AX*1)
	VFMADD231PS (R9)(AX*1), Y4, Y0
	VFMADD231PS 32(R9)(AX*1), Y5, Y1
	VFMADD231PS 64(R9)(AX*1), Y6, Y2
	VFMADD231PS 96(R9)(AX*1), Y7, Y3
	ADDQ $128, AX
	CMPQ AX, BX
	JNE  scaledot

	DELTA_REDUCE
	VMOVSS (R10), X8
	VSUBSS X0, X8, X8
	VMULSS X14, X8, X8
	VBROADCASTSS X8, Y12
	DELTA_ZERO
	XORQ AX, AX

updatedot:
	VMOVUPS (DI)(AX*1), Y4
	VMOVUPS 32(DI)(AX*1), Y5
	VMOVUPS 64(DI)(AX*1), Y6
	VMOVUPS 96(DI)(AX*1), Y7
	VFMADD231PS (R9)(AX*1), Y12, Y4
	VFMADD231PS 32(R9)(AX*1), Y12, Y5
	VFMADD231PS 64(R9)(AX*1), Y12, Y6
	VFMADD231PS 96(R9)(AX*1), Y12, Y7
	VMOVUPS Y4, (DI)(AX*1)
	VMOVUPS Y5, 32(DI)(AX*1)
	VMOVUPS Y6, 64(DI)(AX*1)
	VMOVUPS Y7, 96(DI)(AX*1)
	VFMADD231PS (R8)(AX*1), Y4, Y0
	VFMADD231PS 32(R8)(AX*1), Y5, Y1
	VFMADD231PS 64(R8)(AX*1), Y6, Y2
	VFMADD231PS 96(R8)(AX*1), Y7, Y3
	ADDQ $128, AX
	CMPQ AX, BX
	JNE  updatedot

	DELTA_REDUCE
	VMULSS X13, X0, X0
	VMOVSS X0, (R11)

	ADDQ BX, DI
	ADDQ $4, R10
	ADDQ $4, R11
	DECQ R12
	JNZ  column
	VZEROUPPER
	RET
