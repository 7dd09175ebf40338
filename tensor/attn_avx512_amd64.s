//go:build gc && !purego

#include "textflag.h"

// dots4x4Perm orders the sums of two queries' four keys as the reduction
// leaves them ([k0 k2 | k1 k3] per query, two queries per lane) into
// [q0: k0 k1 k2 k3 | q1: k0 k1 k2 k3].
DATA dots4x4Perm<>+0x00(SB)/4, $0
DATA dots4x4Perm<>+0x04(SB)/4, $4
DATA dots4x4Perm<>+0x08(SB)/4, $1
DATA dots4x4Perm<>+0x0c(SB)/4, $5
DATA dots4x4Perm<>+0x10(SB)/4, $2
DATA dots4x4Perm<>+0x14(SB)/4, $6
DATA dots4x4Perm<>+0x18(SB)/4, $3
DATA dots4x4Perm<>+0x1c(SB)/4, $7
GLOBL dots4x4Perm<>(SB), RODATA|NOPTR, $32

// DOTS_QUERY reduces the accumulators A, B, C, D of one query's four keys
// (eight lanes each) as HSUM8 reduces one, four at a time: T holds
// [A: l0+l2, l1+l3 | C: l0+l2, l1+l3 ‖ B: … | D: …] with l = lo + hi.
#define DOTS_QUERY(A, B, C, D, T) \
	VSHUFF64X2 $0, B, A, Y24 \
	VSHUFF64X2 $3, B, A, Y25 \
	VADDPS Y25, Y24, Y24 \
	VSHUFF64X2 $0, D, C, Y25 \
	VSHUFF64X2 $3, D, C, Y26 \
	VADDPS Y26, Y25, Y25 \
	VSHUFPS $0x44, Y25, Y24, Y26 \
	VSHUFPS $0xee, Y25, Y24, Y27 \
	VADDPS Y27, Y26, T

// DOTS_STORE finishes two queries' reductions (T0, T1 from DOTS_QUERY) and
// stores their four sums each at (R) and (R)(R10*1).
#define DOTS_STORE(T0, T1, R) \
	VSHUFPS $0x88, T1, T0, Y24 \
	VSHUFPS $0xdd, T1, T0, Y25 \
	VADDPS Y25, Y24, Y24 \
	VPERMPS Y24, Y23, Y24 \
	VMOVUPS X24, (R) \
	VEXTRACTF32X4 $1, Y24, (R)(R10*1)

// func dotsF32x4x8AVX512(k *float32, np int, q *float32, hd int, out *float32, ostride int)
//
// dotsF32x4x8 for np a positive multiple of 4: four key rows at a time
// meet the four queries in 16 accumulators (keys and queries loaded once
// per 8 columns for all 16 products), and the 16 sums are reduced together
// with the pairwise tree HSUM8 uses for one: the same bits as dotF32x8 for
// each key and query. ostride is in bytes.
TEXT ·dotsF32x4x8AVX512(SB), NOSPLIT, $0-48
	MOVQ k+0(FP), SI
	MOVQ np+8(FP), R8
	SHRQ $2, R8
	MOVQ q+16(FP), DI
	MOVQ hd+24(FP), R9
	MOVQ out+32(FP), DX
	MOVQ ostride+40(FP), R10
	SHLQ $2, R9 // row bytes
	LEAQ (DI)(R9*1), R12
	LEAQ (DI)(R9*2), R13
	LEAQ (R12)(R9*2), BX
	VMOVDQU32 dots4x4Perm<>(SB), Y23

dots4key:
	LEAQ (SI)(R9*1), R11
	LEAQ (SI)(R9*2), R14
	LEAQ (R11)(R9*2), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	VXORPS Y12, Y12, Y12
	VXORPS Y13, Y13, Y13
	VXORPS Y14, Y14, Y14
	VXORPS Y15, Y15, Y15
	XORQ AX, AX

dots4in:
	// Accumulator 4i+j: query i, key j.
	VMOVUPS (DI)(AX*1), Y16
	VMOVUPS (R12)(AX*1), Y17
	VMOVUPS (R13)(AX*1), Y18
	VMOVUPS (BX)(AX*1), Y19
	VMOVUPS (SI)(AX*1), Y20
	VFMADD231PS Y20, Y16, Y0
	VFMADD231PS Y20, Y17, Y4
	VFMADD231PS Y20, Y18, Y8
	VFMADD231PS Y20, Y19, Y12
	VMOVUPS (R11)(AX*1), Y21
	VFMADD231PS Y21, Y16, Y1
	VFMADD231PS Y21, Y17, Y5
	VFMADD231PS Y21, Y18, Y9
	VFMADD231PS Y21, Y19, Y13
	VMOVUPS (R14)(AX*1), Y22
	VFMADD231PS Y22, Y16, Y2
	VFMADD231PS Y22, Y17, Y6
	VFMADD231PS Y22, Y18, Y10
	VFMADD231PS Y22, Y19, Y14
	VMOVUPS (CX)(AX*1), Y20
	VFMADD231PS Y20, Y16, Y3
	VFMADD231PS Y20, Y17, Y7
	VFMADD231PS Y20, Y18, Y11
	VFMADD231PS Y20, Y19, Y15
	ADDQ $32, AX
	CMPQ AX, R9
	JLT  dots4in

	DOTS_QUERY(Y0, Y1, Y2, Y3, Y28)
	DOTS_QUERY(Y4, Y5, Y6, Y7, Y29)
	DOTS_QUERY(Y8, Y9, Y10, Y11, Y30)
	DOTS_QUERY(Y12, Y13, Y14, Y15, Y31)
	DOTS_STORE(Y28, Y29, DX)
	LEAQ (DX)(R10*2), AX
	DOTS_STORE(Y30, Y31, AX)
	LEAQ (SI)(R9*4), SI
	ADDQ $16, DX
	DECQ R8
	JNZ  dots4key
	VZEROUPPER
	RET

// func pvF32x128AVX512(out, v, w *float32, np, hd int)
//
// pvF32x64 with 128 outputs at a time in eight 512-bit registers, so one
// multiply-add serves 16 outputs: each output is the same fused chain over
// the rows in order, so the same bits. hd is a positive multiple of 128,
// np positive.
TEXT ·pvF32x128AVX512(SB), NOSPLIT, $0-40
	MOVQ out+0(FP), DI
	MOVQ v+8(FP), SI
	MOVQ w+16(FP), DX
	MOVQ np+24(FP), R8
	MOVQ hd+32(FP), R9
	SHLQ $2, R9 // row bytes
	XORQ CX, CX

pv128chunk:
	VMOVUPS 0(DI)(CX*1), Z0
	VMOVUPS 64(DI)(CX*1), Z1
	VMOVUPS 128(DI)(CX*1), Z2
	VMOVUPS 192(DI)(CX*1), Z3
	VMOVUPS 256(DI)(CX*1), Z4
	VMOVUPS 320(DI)(CX*1), Z5
	VMOVUPS 384(DI)(CX*1), Z6
	VMOVUPS 448(DI)(CX*1), Z7
	LEAQ (SI)(CX*1), AX
	XORQ BX, BX

pv128row:
	VBROADCASTSS (DX)(BX*4), Z8
	VFMADD231PS 0(AX), Z8, Z0
	VFMADD231PS 64(AX), Z8, Z1
	VFMADD231PS 128(AX), Z8, Z2
	VFMADD231PS 192(AX), Z8, Z3
	VFMADD231PS 256(AX), Z8, Z4
	VFMADD231PS 320(AX), Z8, Z5
	VFMADD231PS 384(AX), Z8, Z6
	VFMADD231PS 448(AX), Z8, Z7
	ADDQ R9, AX
	INCQ BX
	CMPQ BX, R8
	JLT  pv128row

	VMOVUPS Z0, 0(DI)(CX*1)
	VMOVUPS Z1, 64(DI)(CX*1)
	VMOVUPS Z2, 128(DI)(CX*1)
	VMOVUPS Z3, 192(DI)(CX*1)
	VMOVUPS Z4, 256(DI)(CX*1)
	VMOVUPS Z5, 320(DI)(CX*1)
	VMOVUPS Z6, 384(DI)(CX*1)
	VMOVUPS Z7, 448(DI)(CX*1)
	ADDQ $512, CX
	CMPQ CX, R9
	JLT  pv128chunk
	VZEROUPPER
	RET
