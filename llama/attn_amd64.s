//go:build !purego

#include "textflag.h"

// func dotF16x64(k *uint16, q *float32, n int) float32
TEXT ·dotF16x64(SB), NOSPLIT, $0-28
	MOVQ k+0(FP), SI
	MOVQ q+8(FP), DI
	MOVQ n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7

loop:
	VCVTPH2PS 0(SI), Y8
	VFMADD231PS 0(DI), Y8, Y0
	VCVTPH2PS 16(SI), Y9
	VFMADD231PS 32(DI), Y9, Y1
	VCVTPH2PS 32(SI), Y10
	VFMADD231PS 64(DI), Y10, Y2
	VCVTPH2PS 48(SI), Y11
	VFMADD231PS 96(DI), Y11, Y3
	VCVTPH2PS 64(SI), Y8
	VFMADD231PS 128(DI), Y8, Y4
	VCVTPH2PS 80(SI), Y9
	VFMADD231PS 160(DI), Y9, Y5
	VCVTPH2PS 96(SI), Y10
	VFMADD231PS 192(DI), Y10, Y6
	VCVTPH2PS 112(SI), Y11
	VFMADD231PS 224(DI), Y11, Y7
	ADDQ $128, SI
	ADDQ $256, DI
	SUBQ $64, CX
	JNZ  loop

	// ggml: acc0 += acc2; acc1 += acc3; acc0 += acc1 (lanes 0-7 and 8-15).
	VADDPS Y4, Y0, Y0
	VADDPS Y6, Y2, Y2
	VADDPS Y2, Y0, Y0
	VADDPS Y5, Y1, Y1
	VADDPS Y7, Y3, Y3
	VADDPS Y3, Y1, Y1
	// _mm512_reduce_add_ps: halves, quarters, then pairs.
	VADDPS Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VPERMILPS $0x4E, X0, X1
	VADDPS X1, X0, X0
	VMOVSHDUP X0, X1
	VADDSS X1, X0, X0
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// func madF16x8(acc *float32, v *uint16, s float32, n int)
TEXT ·madF16x8(SB), NOSPLIT, $0-32
	MOVQ acc+0(FP), DI
	MOVQ v+8(FP), SI
	VBROADCASTSS s+16(FP), Y15
	MOVQ n+24(FP), CX

mad:
	VCVTPH2PS (SI), Y0
	VMOVUPS (DI), Y1
	VFMADD231PS Y15, Y0, Y1
	VCVTPS2PH $0, Y1, X2
	VCVTPH2PS X2, Y1
	VMOVUPS Y1, (DI)
	ADDQ $16, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ  mad
	VZEROUPPER
	RET

// func dotF32x8(a, b *float32, n int) float32
TEXT ·dotF32x8(SB), NOSPLIT, $0-28
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ n+16(FP), CX
	VXORPS Y0, Y0, Y0

dot32:
	VMOVUPS (SI), Y1
	VFMADD231PS (DI), Y1, Y0
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ  dot32
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VPERMILPS $0x4E, X0, X1
	VADDPS X1, X0, X0
	VMOVSHDUP X0, X1
	VADDSS X1, X0, X0
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// func axpyF32x8(y, x *float32, a float32, n int)
TEXT ·axpyF32x8(SB), NOSPLIT, $0-32
	MOVQ y+0(FP), DI
	MOVQ x+8(FP), SI
	VBROADCASTSS a+16(FP), Y15
	MOVQ n+24(FP), CX

axpy:
	VMOVUPS (DI), Y0
	VFMADD231PS (SI), Y15, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ  axpy
	VZEROUPPER
	RET

// HSUM8 reduces the eight lanes of Y as dotF32x8 does and stores the sum
// at DST. Clobbers X5 and X6.
#define HSUM8(Y, X, DST) \
	VEXTRACTF128 $1, Y, X5 \
	VADDPS X5, X, X5 \
	VPERMILPS $0x4E, X5, X6 \
	VADDPS X6, X5, X5 \
	VMOVSHDUP X5, X6 \
	VADDSS X6, X5, X5 \
	MOVSS X5, DST

// func dotsF32x4(k *float32, np int, q *float32, hd int, out *float32, ostride int)
//
// For each of np key rows (hd floats each, back to back) and each of four
// query rows (hd floats each, back to back): out[i*ostride/4 + p] =
// dotF32x8(k[p*hd:], q[i*hd:], hd). Each key row is loaded once for the
// four queries, whose four accumulators run side by side; each sum is
// formed and reduced exactly as dotF32x8 forms it. hd is a positive
// multiple of 8, np positive.
TEXT ·dotsF32x4(SB), NOSPLIT, $0-48
	MOVQ k+0(FP), SI
	MOVQ np+8(FP), R8
	MOVQ q+16(FP), DI
	MOVQ hd+24(FP), R9
	MOVQ out+32(FP), DX
	MOVQ ostride+40(FP), R10
	SHLQ $2, R9 // row bytes
	LEAQ (DI)(R9*1), R12
	LEAQ (DI)(R9*2), R13
	LEAQ (R12)(R9*2), BX

dotskey:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	XORQ AX, AX

dotsin:
	VMOVUPS (SI)(AX*1), Y4
	VFMADD231PS (DI)(AX*1), Y4, Y0
	VFMADD231PS (R12)(AX*1), Y4, Y1
	VFMADD231PS (R13)(AX*1), Y4, Y2
	VFMADD231PS (BX)(AX*1), Y4, Y3
	ADDQ $32, AX
	CMPQ AX, R9
	JLT  dotsin

	MOVQ DX, CX
	HSUM8(Y0, X0, (CX))
	ADDQ R10, CX
	HSUM8(Y1, X1, (CX))
	ADDQ R10, CX
	HSUM8(Y2, X2, (CX))
	ADDQ R10, CX
	HSUM8(Y3, X3, (CX))
	ADDQ R9, SI
	ADDQ $4, DX
	DECQ R8
	JNZ  dotskey
	VZEROUPPER
	RET

// func pvF32x64(out, v, w *float32, np, hd int)
//
// out[i] = fma(v[p*hd+i], w[p], out[i]) for p = 0, 1, ..., np-1 in that
// order, for each i < hd: np axpyF32x8 calls, but with 64 outputs at a
// time held in registers across all the rows. hd is a positive multiple
// of 64, np positive.
TEXT ·pvF32x64(SB), NOSPLIT, $0-40
	MOVQ out+0(FP), DI
	MOVQ v+8(FP), SI
	MOVQ w+16(FP), DX
	MOVQ np+24(FP), R8
	MOVQ hd+32(FP), R9
	SHLQ $2, R9 // row bytes
	XORQ CX, CX

pvchunk:
	VMOVUPS 0(DI)(CX*1), Y0
	VMOVUPS 32(DI)(CX*1), Y1
	VMOVUPS 64(DI)(CX*1), Y2
	VMOVUPS 96(DI)(CX*1), Y3
	VMOVUPS 128(DI)(CX*1), Y4
	VMOVUPS 160(DI)(CX*1), Y5
	VMOVUPS 192(DI)(CX*1), Y6
	VMOVUPS 224(DI)(CX*1), Y7
	LEAQ (SI)(CX*1), AX
	XORQ BX, BX

pvrow:
	VBROADCASTSS (DX)(BX*4), Y8
	VFMADD231PS 0(AX), Y8, Y0
	VFMADD231PS 32(AX), Y8, Y1
	VFMADD231PS 64(AX), Y8, Y2
	VFMADD231PS 96(AX), Y8, Y3
	VFMADD231PS 128(AX), Y8, Y4
	VFMADD231PS 160(AX), Y8, Y5
	VFMADD231PS 192(AX), Y8, Y6
	VFMADD231PS 224(AX), Y8, Y7
	ADDQ R9, AX
	INCQ BX
	CMPQ BX, R8
	JLT  pvrow

	VMOVUPS Y0, 0(DI)(CX*1)
	VMOVUPS Y1, 32(DI)(CX*1)
	VMOVUPS Y2, 64(DI)(CX*1)
	VMOVUPS Y3, 96(DI)(CX*1)
	VMOVUPS Y4, 128(DI)(CX*1)
	VMOVUPS Y5, 160(DI)(CX*1)
	VMOVUPS Y6, 192(DI)(CX*1)
	VMOVUPS Y7, 224(DI)(CX*1)
	ADDQ $256, CX
	CMPQ CX, R9
	JLT  pvchunk
	VZEROUPPER
	RET
