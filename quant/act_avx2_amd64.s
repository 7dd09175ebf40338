//go:build gc && !purego

#include "textflag.h"

DATA q8kPackPerm<>+0x00(SB)/4, $0
DATA q8kPackPerm<>+0x04(SB)/4, $4
DATA q8kPackPerm<>+0x08(SB)/4, $1
DATA q8kPackPerm<>+0x0c(SB)/4, $5
DATA q8kPackPerm<>+0x10(SB)/4, $2
DATA q8kPackPerm<>+0x14(SB)/4, $6
DATA q8kPackPerm<>+0x18(SB)/4, $3
DATA q8kPackPerm<>+0x1c(SB)/4, $7
GLOBL q8kPackPerm<>(SB), RODATA|NOPTR, $32

// func quantQ8KAVX2(x []float32, dst []byte, nb int)
//
// Quantizes nb blocks of 256 activations to q8_K, bit for bit as the Go
// twin actQ8_K (see quantQ8KAVX512 for the loop it implements). 32 values
// at a time are scaled, rounded (VCVTPS2DQ: half to even), clamped to 127,
// cut to their low byte and packed (VPACKUSDW, VPACKUSWB, then VPERMD to
// undo the per-lane order); each 32 bytes give two bsums through VPSADBW.
TEXT ·quantQ8KAVX2(SB), NOSPLIT, $0-56
	MOVQ x_base+0(FP), SI
	MOVQ dst_base+24(FP), DI
	MOVQ nb+48(FP), CX
	MOVL $0x7fffffff, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15 // |x| mask
	MOVL $127, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14
	MOVL $0x80808080, AX
	VMOVD AX, X13
	VPBROADCASTD X13, Y13
	VMOVDQU q8kPackPerm<>(SB), Y12
	MOVL $0xff, AX
	VMOVD AX, X11
	VPBROADCASTD X11, Y11

q8k2loop:
	VANDPS 0(SI), Y15, Y0
	VANDPS 32(SI), Y15, Y1
	VANDPS 64(SI), Y15, Y2
	VANDPS 96(SI), Y15, Y3
	MOVQ $128, R8
q8k2max:
	VANDPS 0(SI)(R8*1), Y15, Y4
	VMAXPS Y4, Y0, Y0
	VANDPS 32(SI)(R8*1), Y15, Y5
	VMAXPS Y5, Y1, Y1
	VANDPS 64(SI)(R8*1), Y15, Y6
	VMAXPS Y6, Y2, Y2
	VANDPS 96(SI)(R8*1), Y15, Y7
	VMAXPS Y7, Y3, Y3
	ADDQ $128, R8
	CMPQ R8, $1024
	JNE q8k2max
	VMAXPS Y1, Y0, Y0
	VMAXPS Y3, Y2, Y2
	VMAXPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VMAXPS X1, X0, X0
	VMOVHLPS X0, X0, X1
	VMAXPS X1, X0, X0
	VMOVSHDUP X0, X1
	VMAXSS X1, X0, X0 // amax
	VXORPS X1, X1, X1
	VUCOMISS X1, X0
	JEQ q8k2zero

	// The first element whose magnitude is amax gives the signed max.
	VBROADCASTSS X0, Y4
	XORQ R8, R8
q8k2find:
	VANDPS (SI)(R8*4), Y15, Y1
	VCMPPS $0, Y4, Y1, Y1
	VMOVMSKPS Y1, AX
	TESTL AX, AX
	JNZ q8k2found
	ADDQ $8, R8
	CMPQ R8, $256
	JNE q8k2find
	XORQ R8, R8 // not found (NaN): use element 0
	MOVL $1, AX
q8k2found:
	BSFL AX, AX
	ADDQ AX, R8
	VMOVSS (SI)(R8*4), X2 // max, with its sign
	MOVL $0xc2fe0000, AX  // -127.0
	VMOVD AX, X3
	VDIVSS X2, X3, X3     // iscale = -127/max
	MOVL $0x3f800000, AX  // 1.0
	VMOVD AX, X5
	VDIVSS X3, X5, X5     // d = 1/iscale
	VMOVSS X5, (DI)
	VBROADCASTSS X3, Y3

	XORQ R8, R8 // byte offset in x
	XORQ R9, R9 // byte offset in qs
	XORQ R10, R10 // byte offset in bsums
q8k2q:
	VMULPS 0(SI)(R8*1), Y3, Y4
	VMULPS 32(SI)(R8*1), Y3, Y5
	VMULPS 64(SI)(R8*1), Y3, Y6
	VMULPS 96(SI)(R8*1), Y3, Y7
	VCVTPS2DQ Y4, Y4
	VCVTPS2DQ Y5, Y5
	VCVTPS2DQ Y6, Y6
	VCVTPS2DQ Y7, Y7
	VPMINSD Y14, Y4, Y4
	VPMINSD Y14, Y5, Y5
	VPMINSD Y14, Y6, Y6
	VPMINSD Y14, Y7, Y7
	VPAND Y11, Y4, Y4 // keep the low byte, as a store to int8 does
	VPAND Y11, Y5, Y5
	VPAND Y11, Y6, Y6
	VPAND Y11, Y7, Y7
	VPACKUSDW Y5, Y4, Y4
	VPACKUSDW Y7, Y6, Y6
	VPACKUSWB Y6, Y4, Y4
	VPERMD Y4, Y12, Y4
	VMOVDQU Y4, 4(DI)(R9*1)
	// Two bsums: VPSADBW of the bytes biased by 128, 8 at a time.
	VPXOR Y13, Y4, Y4
	VPXOR Y5, Y5, Y5
	VPSADBW Y5, Y4, Y4
	VPSHUFD $0x4e, Y4, Y5
	VPADDQ Y5, Y4, Y4
	VMOVD X4, AX
	SUBL $2048, AX
	MOVW AX, 260(DI)(R10*1)
	VEXTRACTI128 $1, Y4, X4
	VMOVD X4, AX
	SUBL $2048, AX
	MOVW AX, 262(DI)(R10*1)
	ADDQ $128, R8
	ADDQ $32, R9
	ADDQ $4, R10
	CMPQ R9, $256
	JNE q8k2q
	JMP q8k2next

q8k2zero:
	VXORPS Y0, Y0, Y0
	XORQ R8, R8
q8k2zl:
	VMOVDQU Y0, (DI)(R8*1)
	ADDQ $32, R8
	CMPQ R8, $288
	JNE q8k2zl
	MOVL $0, 288(DI)

q8k2next:
	ADDQ $1024, SI
	ADDQ $292, DI
	DECQ CX
	JNZ q8k2loop
	VZEROUPPER
	RET

// func quantQ8_0AVX2(x []float32, dst []byte, nb int)
//
// Quantizes nb blocks of 32 activations to q8_0, bit for bit as the Go twin
// actQ8_0 (see quantQ8_0AVX512), the way ggml's AVX2 quantize_row_q8_0
// does it: VCVTPS2DQ (half to even), then saturating packs and VPERMD.
TEXT ·quantQ8_0AVX2(SB), NOSPLIT, $0-56
	MOVQ x_base+0(FP), SI
	MOVQ dst_base+24(FP), DI
	MOVQ nb+48(FP), CX
	MOVL $0x7fffffff, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	MOVL $0x42fe0000, AX // 127.0
	VMOVD AX, X14
	VXORPS X13, X13, X13
	VMOVDQU q8kPackPerm<>(SB), Y12

q802qloop:
	VANDPS 0(SI), Y15, Y0
	VANDPS 32(SI), Y15, Y1
	VANDPS 64(SI), Y15, Y2
	VANDPS 96(SI), Y15, Y3
	VMAXPS Y1, Y0, Y0
	VMAXPS Y3, Y2, Y2
	VMAXPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VMAXPS X1, X0, X0
	VMOVHLPS X0, X0, X1
	VMAXPS X1, X0, X0
	VMOVSHDUP X0, X1
	VMAXSS X1, X0, X0   // amax
	VDIVSS X14, X0, X2  // d = amax/127
	VCVTPS2PH $0, X2, X2
	VPEXTRW $0, X2, AX
	MOVW AX, (DI)
	VXORPS X3, X3, X3
	VUCOMISS X13, X0
	JEQ q802qzero
	VDIVSS X0, X14, X3  // id = 127/amax
q802qzero:
	VBROADCASTSS X3, Y3
	VMULPS 0(SI), Y3, Y4
	VMULPS 32(SI), Y3, Y5
	VMULPS 64(SI), Y3, Y6
	VMULPS 96(SI), Y3, Y7
	VCVTPS2DQ Y4, Y4
	VCVTPS2DQ Y5, Y5
	VCVTPS2DQ Y6, Y6
	VCVTPS2DQ Y7, Y7
	VPACKSSDW Y5, Y4, Y4
	VPACKSSDW Y7, Y6, Y6
	VPACKSSWB Y6, Y4, Y4
	VPERMD Y4, Y12, Y4
	VMOVDQU Y4, 2(DI)
	ADDQ $128, SI
	ADDQ $34, DI
	DECQ CX
	JNZ q802qloop
	VZEROUPPER
	RET

// func toF16AVX2(x []float32, dst []byte, n int)
//
// dst[2i:2i+2] = the float16 bits of x[i] rounded to nearest even
// (VCVTPS2PH, F16C) for i < n, n a positive multiple of 8: halfBits's bits,
// but for the payload of a NaN, which stays a NaN.
TEXT ·toF16AVX2(SB), NOSPLIT, $0-56
	MOVQ x_base+0(FP), SI
	MOVQ dst_base+24(FP), DI
	MOVQ n+48(FP), CX
	SHRQ $3, CX
tof16loop:
	VMOVUPS (SI), Y0
	VCVTPS2PH $0, Y0, X1
	VMOVDQU X1, (DI)
	ADDQ $32, SI
	ADDQ $16, DI
	DECQ CX
	JNZ tof16loop
	VZEROUPPER
	RET
