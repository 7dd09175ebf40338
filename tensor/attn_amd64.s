//go:build gc && !purego

#include "textflag.h"
#include "acc_amd64.h"

// The f16·f32 dot product of dotF16x64 and dotsF16x64 in three steps:
// F16DOT_ZERO clears the eight 8-lane accumulators Y0-Y7 (standing for
// the 64 lanes of ggml's AVX-512 kernel), F16DOT_STEP64 adds 64 products of
// the float16 keys at SI and the floats at DI and advances both, and
// F16DOT_REDUCE sums the lanes into X0 in ggml's order (acc0 += acc2;
// acc1 += acc3; acc0 += acc1 over lanes 0-7 and 8-15, then
// _mm512_reduce_add_ps: halves, quarters, pairs).
#define F16DOT_ZERO \
	VXORPS Y0, Y0, Y0 \
	VXORPS Y1, Y1, Y1 \
	VXORPS Y2, Y2, Y2 \
	VXORPS Y3, Y3, Y3 \
	VXORPS Y4, Y4, Y4 \
	VXORPS Y5, Y5, Y5 \
	VXORPS Y6, Y6, Y6 \
	VXORPS Y7, Y7, Y7

#define F16DOT_STEP64 \
	VCVTPH2PS 0(SI), Y8 \
	VFMADD231PS 0(DI), Y8, Y0 \
	VCVTPH2PS 16(SI), Y9 \
	VFMADD231PS 32(DI), Y9, Y1 \
	VCVTPH2PS 32(SI), Y10 \
	VFMADD231PS 64(DI), Y10, Y2 \
	VCVTPH2PS 48(SI), Y11 \
	VFMADD231PS 96(DI), Y11, Y3 \
	VCVTPH2PS 64(SI), Y8 \
	VFMADD231PS 128(DI), Y8, Y4 \
	VCVTPH2PS 80(SI), Y9 \
	VFMADD231PS 160(DI), Y9, Y5 \
	VCVTPH2PS 96(SI), Y10 \
	VFMADD231PS 192(DI), Y10, Y6 \
	VCVTPH2PS 112(SI), Y11 \
	VFMADD231PS 224(DI), Y11, Y7 \
	ADDQ $128, SI \
	ADDQ $256, DI

#define F16DOT_REDUCE \
	VADDPS Y4, Y0, Y0 \
	VADDPS Y6, Y2, Y2 \
	VADDPS Y2, Y0, Y0 \
	VADDPS Y5, Y1, Y1 \
	VADDPS Y7, Y3, Y3 \
	VADDPS Y3, Y1, Y1 \
	VADDPS Y1, Y0, Y0 \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPS X1, X0, X0 \
	VPERMILPS $0x4E, X0, X1 \
	VADDPS X1, X0, X0 \
	VMOVSHDUP X0, X1 \
	VADDSS X1, X0, X0


// func dotF16x64(k *uint16, q *float32, n int) float32
TEXT ·dotF16x64(SB), NOSPLIT, $0-28
	MOVQ k+0(FP), SI
	MOVQ q+8(FP), DI
	MOVQ n+16(FP), CX
	F16DOT_ZERO

loop:
	F16DOT_STEP64
	SUBQ $64, CX
	JNZ  loop

	F16DOT_REDUCE
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

// func dotsF32x4x8(k *float32, np int, q *float32, hd int, out *float32, ostride int)
//
// For each of np key rows (hd floats each, back to back) and each of four
// query rows (hd floats each, back to back): out[i*ostride/4 + p] =
// dotF32x8(k[p*hd:], q[i*hd:], hd). Each key row is loaded once for the
// four queries, whose four accumulators run side by side; each sum is
// formed and reduced exactly as dotF32x8 forms it. hd is a positive
// multiple of 8, np positive.
TEXT ·dotsF32x4x8(SB), NOSPLIT, $0-48
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

// func madSeqF16x64(acc *float32, v *uint16, stride int, vs, ms *float32, np, hd int)
//
// MadSeqF16's accumulator pass over np positions, with acc held in
// registers 64 floats at a time instead of being loaded and stored for every
// position. As the Go loop (madSeqF16Go):
//
//	for p := range np {
//		if ms[p] != 1 {
//			for i, a := range acc {
//				acc[i] = RoundF16(a * ms[p])
//			}
//		}
//		MadF16(acc, v[p*stride:p*stride+hd], vs[p])
//	}
//
// hd is a positive multiple of 64; stride is in float16 elements. Value
// rows 8 positions ahead are prefetched.
TEXT ·madSeqF16x64(SB), NOSPLIT, $0-56
	MOVQ acc+0(FP), DI
	MOVQ v+8(FP), SI
	MOVQ stride+16(FP), R8
	SHLQ $1, R8
	MOVQ vs+24(FP), R9
	MOVQ ms+32(FP), R10
	MOVQ np+40(FP), R11
	MOVQ hd+48(FP), R12
	MOVL $0x3f800000, AX
	VMOVD AX, X15
	MOVQ R8, R13
	SHLQ $3, R13 // prefetch 8 rows ahead

madseqchunk:
	ACC64_LOAD
	MOVQ SI, BX
	XORQ CX, CX

madseqpos:
	PREFETCHT0 0(BX)(R13*1)
	PREFETCHT0 64(BX)(R13*1)
	PREFETCHT0 128(BX)(R13*1)
	PREFETCHT0 192(BX)(R13*1)
	// VEX encodings, not MOVSS/UCOMISS: legacy-SSE instructions in this
	// loop, which keeps the upper halves of Y0-Y7 live, made it 16 times
	// slower on the project's Zen 3 VM (BenchmarkAttnKernels/MadSeqF16).
	VMOVSS (R10)(CX*4), X8
	VUCOMISS X15, X8
	JNE madseqscale
	JPS madseqscale
	JMP madseqmad

madseqscale:
	VBROADCASTSS X8, Y8
	VMULPS Y8, Y0, Y0
	VCVTPS2PH $0, Y0, X10
	VCVTPH2PS X10, Y0
	VMULPS Y8, Y1, Y1
	VCVTPS2PH $0, Y1, X10
	VCVTPH2PS X10, Y1
	VMULPS Y8, Y2, Y2
	VCVTPS2PH $0, Y2, X10
	VCVTPH2PS X10, Y2
	VMULPS Y8, Y3, Y3
	VCVTPS2PH $0, Y3, X10
	VCVTPH2PS X10, Y3
	VMULPS Y8, Y4, Y4
	VCVTPS2PH $0, Y4, X10
	VCVTPH2PS X10, Y4
	VMULPS Y8, Y5, Y5
	VCVTPS2PH $0, Y5, X10
	VCVTPH2PS X10, Y5
	VMULPS Y8, Y6, Y6
	VCVTPS2PH $0, Y6, X10
	VCVTPH2PS X10, Y6
	VMULPS Y8, Y7, Y7
	VCVTPS2PH $0, Y7, X10
	VCVTPH2PS X10, Y7

madseqmad:
	VBROADCASTSS (R9)(CX*4), Y9
	VCVTPH2PS 0(BX), Y10
	VFMADD231PS Y9, Y10, Y0
	VCVTPS2PH $0, Y0, X11
	VCVTPH2PS X11, Y0
	VCVTPH2PS 16(BX), Y10
	VFMADD231PS Y9, Y10, Y1
	VCVTPS2PH $0, Y1, X11
	VCVTPH2PS X11, Y1
	VCVTPH2PS 32(BX), Y10
	VFMADD231PS Y9, Y10, Y2
	VCVTPS2PH $0, Y2, X11
	VCVTPH2PS X11, Y2
	VCVTPH2PS 48(BX), Y10
	VFMADD231PS Y9, Y10, Y3
	VCVTPS2PH $0, Y3, X11
	VCVTPH2PS X11, Y3
	VCVTPH2PS 64(BX), Y10
	VFMADD231PS Y9, Y10, Y4
	VCVTPS2PH $0, Y4, X11
	VCVTPH2PS X11, Y4
	VCVTPH2PS 80(BX), Y10
	VFMADD231PS Y9, Y10, Y5
	VCVTPS2PH $0, Y5, X11
	VCVTPH2PS X11, Y5
	VCVTPH2PS 96(BX), Y10
	VFMADD231PS Y9, Y10, Y6
	VCVTPS2PH $0, Y6, X11
	VCVTPH2PS X11, Y6
	VCVTPH2PS 112(BX), Y10
	VFMADD231PS Y9, Y10, Y7
	VCVTPS2PH $0, Y7, X11
	VCVTPH2PS X11, Y7
	ADDQ R8, BX
	INCQ CX
	CMPQ CX, R11
	JLT madseqpos

	ACC64_STORE
	ADDQ $256, DI
	ADDQ $128, SI
	SUBQ $64, R12
	JNZ madseqchunk
	VZEROUPPER
	RET

// func dotsF16x64(k *uint16, stride, np int, q *float32, n int, scale float32, out *float32)
//
// np calls of dotF16x64 on key rows stride float16 elements apart, each
// result times scale, stored to out[0:np], as the Go loop
//
//	for p := range np {
//		out[p] = DotF16(k[p*stride:p*stride+n], q) * scale
//	}
//
// with the same accumulation and reduction order as dotF16x64, so the bits
// are the same. Rows 8 positions ahead are prefetched (the rows of one head
// are stride apart, too far apart for the hardware to see one stream).
TEXT ·dotsF16x64(SB), NOSPLIT, $0-56
	MOVQ k+0(FP), R8
	MOVQ stride+8(FP), R9
	SHLQ $1, R9
	MOVQ np+16(FP), R10
	MOVQ q+24(FP), R11
	MOVQ n+32(FP), R12
	VBROADCASTSS scale+40(FP), X12
	MOVQ out+48(FP), R13
	MOVQ R9, R14
	SHLQ $3, R14 // 8 rows ahead

dotsrow:
	PREFETCHT0 0(R8)(R14*1)
	PREFETCHT0 64(R8)(R14*1)
	PREFETCHT0 128(R8)(R14*1)
	PREFETCHT0 192(R8)(R14*1)
	MOVQ R8, SI
	MOVQ R11, DI
	MOVQ R12, CX
	F16DOT_ZERO

dotsloop:
	F16DOT_STEP64
	SUBQ $64, CX
	JNZ  dotsloop

	F16DOT_REDUCE
	VMULSS X12, X0, X0
	MOVSS X0, (R13)
	ADDQ $4, R13
	ADDQ R9, R8
	DECQ R10
	JNZ dotsrow
	VZEROUPPER
	RET
