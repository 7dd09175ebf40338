//go:build gc && !purego

#include "textflag.h"

// func quantQ8KAVX512(x []float32, dst []byte, nb int)
//
// Quantizes nb blocks of 256 activations to q8_K, bit for bit as the Go
// twin actQ8_K (ggml's quantize_row_q8_K_ref):
//
//	for _, v := range x {
//		if av := float32(math.Abs(float64(v))); av > amax {
//			amax, mx = av, v
//		}
//	}
//	iscale := -127 / mx
//	q := min(127, int32(math.RoundToEven(float64(iscale*x[i]))))
//	bsums[j] = Σ q[16j:16j+16]
//	d = 1 / iscale
//
// The inputs must be finite (a NaN gives an unspecified block, never a
// hang). VCVTPS2DQ rounds half to even under the default MXCSR, as
// nearest_int does. The bsums are added from the stored bytes with VPSADBW
// (biased by 128 to make them unsigned).
TEXT ·quantQ8KAVX512(SB), NOSPLIT, $0-56
	MOVQ x_base+0(FP), SI
	MOVQ dst_base+24(FP), DI
	MOVQ nb+48(FP), CX
	MOVL $0x7fffffff, AX
	VPBROADCASTD AX, Z31 // |x| mask
	MOVL $127, AX
	VPBROADCASTD AX, Z30
	MOVL $0x80808080, AX
	VPBROADCASTD AX, Z29
	MOVL $0x00010001, AX
	VPBROADCASTD AX, Z28
	MOVL $2048, AX
	VPBROADCASTD AX, Z27
	VPXORD Z26, Z26, Z26

q8kloop:
	// amax over the 256 values, in four running maxima.
	VANDPS 0(SI), Z31, Z0
	VANDPS 64(SI), Z31, Z1
	VANDPS 128(SI), Z31, Z2
	VANDPS 192(SI), Z31, Z3
	MOVQ $256, R8
q8kmax:
	VANDPS 0(SI)(R8*1), Z31, Z4
	VMAXPS Z4, Z0, Z0
	VANDPS 64(SI)(R8*1), Z31, Z5
	VMAXPS Z5, Z1, Z1
	VANDPS 128(SI)(R8*1), Z31, Z6
	VMAXPS Z6, Z2, Z2
	VANDPS 192(SI)(R8*1), Z31, Z7
	VMAXPS Z7, Z3, Z3
	ADDQ $256, R8
	CMPQ R8, $1024
	JNE q8kmax
	VMAXPS Z1, Z0, Z0
	VMAXPS Z3, Z2, Z2
	VMAXPS Z2, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	VMAXPS Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VMAXPS X1, X0, X0
	VMOVHLPS X0, X0, X1
	VMAXPS X1, X0, X0
	VMOVSHDUP X0, X1
	VMAXSS X1, X0, X0 // amax
	VXORPS X1, X1, X1
	VUCOMISS X1, X0
	JEQ q8kzero

	// The first element whose magnitude is amax gives the signed max.
	VBROADCASTSS X0, Z4
	XORQ R8, R8
q8kfind:
	VANDPS (SI)(R8*4), Z31, Z1
	VCMPPS $0, Z4, Z1, K1
	KMOVW K1, AX
	TESTL AX, AX
	JNZ q8kfound
	ADDQ $16, R8
	CMPQ R8, $256
	JNE q8kfind
	XORQ R8, R8 // not found (NaN): use element 0
	MOVL $1, AX
q8kfound:
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
	VBROADCASTSS X3, Z3

	// q = min(127, round(iscale·x)), 16 at a time.
	XORQ R8, R8
	XORQ R9, R9
q8kq:
	VMULPS (SI)(R8*4), Z3, Z1
	VCVTPS2DQ Z1, Z1
	VPMINSD Z30, Z1, Z1
	VPMOVDB Z1, 4(DI)(R9*1)
	ADDQ $16, R8
	ADDQ $16, R9
	CMPQ R9, $256
	JNE q8kq

	// bsums: Σ of each 16 quants = VPSADBW over the bytes biased by 128.
	VPXORD 4(DI), Z29, Z10
	VPSADBW Z26, Z10, Z10
	VPMOVQW Z10, X10
	VPXORD 68(DI), Z29, Z11
	VPSADBW Z26, Z11, Z11
	VPMOVQW Z11, X11
	VPXORD 132(DI), Z29, Z12
	VPSADBW Z26, Z12, Z12
	VPMOVQW Z12, X12
	VPXORD 196(DI), Z29, Z13
	VPSADBW Z26, Z13, Z13
	VPMOVQW Z13, X13
	VINSERTI32X4 $1, X11, Z10, Z10
	VINSERTI32X4 $2, X12, Z10, Z10
	VINSERTI32X4 $3, X13, Z10, Z10
	VPMADDWD Z28, Z10, Z10 // pairs of 8-byte sums
	VPSUBD Z27, Z10, Z10   // minus 16·128
	VPMOVDW Z10, 260(DI)
	JMP q8knext

q8kzero:
	VMOVDQU64 Z26, 0(DI)
	VMOVDQU64 Z26, 64(DI)
	VMOVDQU64 Z26, 128(DI)
	VMOVDQU64 Z26, 192(DI)
	VMOVDQU64 Y26, 256(DI)
	MOVL $0, 288(DI)

q8knext:
	ADDQ $1024, SI
	ADDQ $292, DI
	DECQ CX
	JNZ q8kloop
	VZEROUPPER
	RET

// func quantQ8_0AVX512(x []float32, dst []byte, nb int)
//
// Quantizes nb blocks of 32 activations to q8_0, bit for bit as the Go twin
// actQ8_0 (ggml's x86 quantize_row_q8_0):
//
//	amax := max |x|
//	d := amax / 127 // stored as f16
//	id := 127 / amax // 0 if amax == 0
//	qs[j] = cvtToInt8(math.RoundToEven(float64(float32(x[j] * id))))
//
// VCVTPS2DQ rounds half to even; VPMOVSDB saturates, so an Inf or NaN
// product (a block of tiny subnormals) gives -128 as ggml's packs do.
TEXT ·quantQ8_0AVX512(SB), NOSPLIT, $0-56
	MOVQ x_base+0(FP), SI
	MOVQ dst_base+24(FP), DI
	MOVQ nb+48(FP), CX
	MOVL $0x7fffffff, AX
	VPBROADCASTD AX, Z31
	MOVL $0x42fe0000, AX // 127.0
	VMOVD AX, X30
	VXORPS X29, X29, X29

q80qloop:
	VANDPS 0(SI), Z31, Z0
	VANDPS 64(SI), Z31, Z1
	VMAXPS Z1, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	VMAXPS Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VMAXPS X1, X0, X0
	VMOVHLPS X0, X0, X1
	VMAXPS X1, X0, X0
	VMOVSHDUP X0, X1
	VMAXSS X1, X0, X0   // amax
	VDIVSS X30, X0, X2  // d = amax/127
	VCVTPS2PH $0, X2, X2 // round to nearest even
	VPEXTRW $0, X2, AX
	MOVW AX, (DI)
	VXORPS X3, X3, X3
	VUCOMISS X29, X0
	JEQ q80qzero
	VDIVSS X0, X30, X3  // id = 127/amax
q80qzero:
	VBROADCASTSS X3, Z3
	VMULPS 0(SI), Z3, Z4
	VMULPS 64(SI), Z3, Z5
	VCVTPS2DQ Z4, Z4
	VCVTPS2DQ Z5, Z5
	VPMOVSDB Z4, 2(DI)
	VPMOVSDB Z5, 18(DI)
	ADDQ $128, SI
	ADDQ $34, DI
	DECQ CX
	JNZ q80qloop
	VZEROUPPER
	RET
