//go:build gc && !purego

#include "textflag.h"
#include "acc_amd64.h"

// func madQ8x32(acc *float32, blk *byte, s float32, nb int)
// For each Q8_0 block (d f16 | 32 int8): v = float32(q) * d, then
// acc = fma(v, s, acc), eight lanes at a time.
TEXT ·madQ8x32(SB), NOSPLIT, $0-32
	MOVQ acc+0(FP), DI
	MOVQ blk+8(FP), SI
	VBROADCASTSS s+16(FP), Y15
	MOVQ nb+24(FP), CX

block:
	VPBROADCASTW (SI), X0
	VCVTPH2PS X0, Y14
	VPMOVSXBD 2(SI), Y1
	VPMOVSXBD 10(SI), Y2
	VPMOVSXBD 18(SI), Y3
	VPMOVSXBD 26(SI), Y4
	VCVTDQ2PS Y1, Y1
	VCVTDQ2PS Y2, Y2
	VCVTDQ2PS Y3, Y3
	VCVTDQ2PS Y4, Y4
	VMULPS Y14, Y1, Y1
	VMULPS Y14, Y2, Y2
	VMULPS Y14, Y3, Y3
	VMULPS Y14, Y4, Y4
	VMOVUPS 0(DI), Y5
	VMOVUPS 32(DI), Y6
	VMOVUPS 64(DI), Y7
	VMOVUPS 96(DI), Y8
	VFMADD231PS Y15, Y1, Y5
	VFMADD231PS Y15, Y2, Y6
	VFMADD231PS Y15, Y3, Y7
	VFMADD231PS Y15, Y4, Y8
	VMOVUPS Y5, 0(DI)
	VMOVUPS Y6, 32(DI)
	VMOVUPS Y7, 64(DI)
	VMOVUPS Y8, 96(DI)
	ADDQ $34, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  block
	VZEROUPPER
	RET

// func madSeqQ8x64(acc *float32, v *byte, stride int, vs, ms *float32, np, hd int)
//
// MadSeqQ8_0's accumulator pass over np positions, with acc held in
// registers 64 floats (two Q8_0 blocks) at a time. As the Go loop
// (madSeqQ8Go):
//
//	for p := range np {
//		if ms[p] != 1 {
//			for i := range acc {
//				acc[i] *= ms[p]
//			}
//		}
//		MadQ8_0(acc, v[p*stride:], vs[p])
//	}
//
// hd is a positive multiple of 64; stride is in bytes. Value rows 8
// positions ahead are prefetched.
TEXT ·madSeqQ8x64(SB), NOSPLIT, $0-56
	MOVQ acc+0(FP), DI
	MOVQ v+8(FP), SI
	MOVQ stride+16(FP), R8
	MOVQ vs+24(FP), R9
	MOVQ ms+32(FP), R10
	MOVQ np+40(FP), R11
	MOVQ hd+48(FP), R12
	MOVQ R8, R13
	SHLQ $3, R13

madq8chunk:
	ACC64_LOAD
	MOVQ SI, BX
	XORQ CX, CX

madq8pos:
	PREFETCHT0 0(BX)(R13*1)
	PREFETCHT0 64(BX)(R13*1)
	MOVL (R10)(CX*4), AX
	CMPL AX, $0x3f800000
	JEQ madq8mad
	VBROADCASTSS (R10)(CX*4), Y8
	VMULPS Y8, Y0, Y0
	VMULPS Y8, Y1, Y1
	VMULPS Y8, Y2, Y2
	VMULPS Y8, Y3, Y3
	VMULPS Y8, Y4, Y4
	VMULPS Y8, Y5, Y5
	VMULPS Y8, Y6, Y6
	VMULPS Y8, Y7, Y7

madq8mad:
	VBROADCASTSS (R9)(CX*4), Y15
	VPBROADCASTW 0(BX), X8
	VCVTPH2PS X8, Y14
	VPMOVSXBD 2(BX), Y9
	VCVTDQ2PS Y9, Y9
	VMULPS Y14, Y9, Y9
	VFMADD231PS Y15, Y9, Y0
	VPMOVSXBD 10(BX), Y9
	VCVTDQ2PS Y9, Y9
	VMULPS Y14, Y9, Y9
	VFMADD231PS Y15, Y9, Y1
	VPMOVSXBD 18(BX), Y9
	VCVTDQ2PS Y9, Y9
	VMULPS Y14, Y9, Y9
	VFMADD231PS Y15, Y9, Y2
	VPMOVSXBD 26(BX), Y9
	VCVTDQ2PS Y9, Y9
	VMULPS Y14, Y9, Y9
	VFMADD231PS Y15, Y9, Y3
	VPBROADCASTW 34(BX), X8
	VCVTPH2PS X8, Y14
	VPMOVSXBD 36(BX), Y9
	VCVTDQ2PS Y9, Y9
	VMULPS Y14, Y9, Y9
	VFMADD231PS Y15, Y9, Y4
	VPMOVSXBD 44(BX), Y9
	VCVTDQ2PS Y9, Y9
	VMULPS Y14, Y9, Y9
	VFMADD231PS Y15, Y9, Y5
	VPMOVSXBD 52(BX), Y9
	VCVTDQ2PS Y9, Y9
	VMULPS Y14, Y9, Y9
	VFMADD231PS Y15, Y9, Y6
	VPMOVSXBD 60(BX), Y9
	VCVTDQ2PS Y9, Y9
	VMULPS Y14, Y9, Y9
	VFMADD231PS Y15, Y9, Y7
	ADDQ R8, BX
	INCQ CX
	CMPQ CX, R11
	JLT madq8pos

	ACC64_STORE
	ADDQ $256, DI
	ADDQ $68, SI
	SUBQ $64, R12
	JNZ madq8chunk
	VZEROUPPER
	RET
