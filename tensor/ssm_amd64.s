//go:build gc && !purego

#include "textflag.h"

// func ssmScanAVX2(y, s, x, B, C *float32, rows, n int, dA, dt float32)
//
// For each channel (row of the state): Y14 = x[i]·dt broadcast, then per
// 32 state entries, four times: Y8 = B·xdt; Y8 = s·dA + Y8 (fused); store
// Y8 to s; acc += Y8·C (fused), the accumulators Y0..Y3 standing for lanes
// 0-7, 8-15, 16-23, 24-31. Reduced as reduce32: (Y0+Y2) + (Y1+Y3), the
// high 128 bits onto the low, two VHADDPS.
TEXT ·ssmScanAVX2(SB), NOSPLIT, $0-64
	MOVQ y+0(FP), DI
	MOVQ s+8(FP), SI
	MOVQ x+16(FP), R8
	MOVQ B+24(FP), R9
	MOVQ C+32(FP), R10
	MOVQ rows+40(FP), R11
	MOVQ n+48(FP), R12
	VBROADCASTSS dA+56(FP), Y15
	VMOVSS dt+60(FP), X13

row:
	VMULSS (R8), X13, X14 // xdt = x[i]·dt
	VBROADCASTSS X14, Y14
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ R9, AX  // B
	MOVQ R10, BX // C
	MOVQ R12, CX

chunk:
	VMULPS (AX), Y14, Y8
	VFMADD231PS (SI), Y15, Y8
	VMOVUPS Y8, (SI)
	VFMADD231PS (BX), Y8, Y0
	VMULPS 32(AX), Y14, Y9
	VFMADD231PS 32(SI), Y15, Y9
	VMOVUPS Y9, 32(SI)
	VFMADD231PS 32(BX), Y9, Y1
	VMULPS 64(AX), Y14, Y10
	VFMADD231PS 64(SI), Y15, Y10
	VMOVUPS Y10, 64(SI)
	VFMADD231PS 64(BX), Y10, Y2
	VMULPS 96(AX), Y14, Y11
	VFMADD231PS 96(SI), Y15, Y11
	VMOVUPS Y11, 96(SI)
	VFMADD231PS 96(BX), Y11, Y3
	ADDQ $128, AX
	ADDQ $128, BX
	ADDQ $128, SI
	SUBQ $32, CX
	JNZ chunk

	VADDPS Y2, Y0, Y0
	VADDPS Y3, Y1, Y1
	VADDPS Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VHADDPS X0, X0, X0
	VHADDPS X0, X0, X0
	VMOVSS X0, (DI)
	ADDQ $4, DI
	ADDQ $4, R8
	DECQ R11
	JNZ row
	VZEROUPPER
	RET
