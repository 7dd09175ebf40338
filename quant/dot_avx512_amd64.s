//go:build gc && !purego

#include "textflag.h"

// AVX-512 kernels (F, BW, VL, VNNI). VPDPBUSD multiplies unsigned weight
// bytes by signed activation bytes and adds groups of four into int32 lanes;
// VPDPWSSD then multiplies those lanes (which fit in 16 bits) by the
// sub-block scales. Every integer sum is exact; per block, the int32 lanes
// are converted to float32 and accumulated with FMA against d_w·d_a.

// q4_K and q5_K (mvQ4KAVX512, mvQ4KAVX512GFNI, mvQ5KAVX512 and the x4
// kernels): constants of the scale and min shuffles. The 12 scale bytes are
// unpacked (Q4K_SCALES) into 16 bytes [sc0-3 mn0-3 sc4-7 mn4-7];
// q4kMinCtl spreads the mins into the words m0 m0 m1 m1 ... m7 m7 that meet
// bsums[0..15] in VPMADDWD; q4kPack01 and q4kPack23 give the word scales of
// the packed sub-block sums (see mvQ4KAVX512).
DATA q4kMinCtl<>+0x00(SB)/8, $0x8005800580048004
DATA q4kMinCtl<>+0x08(SB)/8, $0x8007800780068006
DATA q4kMinCtl<>+0x10(SB)/8, $0x800d800d800c800c
DATA q4kMinCtl<>+0x18(SB)/8, $0x800f800f800e800e
GLOBL q4kMinCtl<>(SB), RODATA|NOPTR, $32
DATA q4kPack01<>+0x00(SB)/8, $0x8000800080008000
DATA q4kPack01<>+0x08(SB)/8, $0x8002800280028002
DATA q4kPack01<>+0x10(SB)/8, $0x8000800080008000
DATA q4kPack01<>+0x18(SB)/8, $0x8002800280028002
DATA q4kPack01<>+0x20(SB)/8, $0x8001800180018001
DATA q4kPack01<>+0x28(SB)/8, $0x8003800380038003
DATA q4kPack01<>+0x30(SB)/8, $0x8001800180018001
DATA q4kPack01<>+0x38(SB)/8, $0x8003800380038003
GLOBL q4kPack01<>(SB), RODATA|NOPTR, $64
DATA q4kPack23<>+0x00(SB)/8, $0x8008800880088008
DATA q4kPack23<>+0x08(SB)/8, $0x800a800a800a800a
DATA q4kPack23<>+0x10(SB)/8, $0x8008800880088008
DATA q4kPack23<>+0x18(SB)/8, $0x800a800a800a800a
DATA q4kPack23<>+0x20(SB)/8, $0x8009800980098009
DATA q4kPack23<>+0x28(SB)/8, $0x800b800b800b800b
DATA q4kPack23<>+0x30(SB)/8, $0x8009800980098009
DATA q4kPack23<>+0x38(SB)/8, $0x800b800b800b800b
GLOBL q4kPack23<>(SB), RODATA|NOPTR, $64

// Unpacks the 12 scale bytes of the q4_K block at SI into 16 bytes at
// sm-24(SP): [sc0-3 mn0-3 sc4-7 mn4-7]. R14 = 0x3f3f..., R15 = 0x3030...;
// it overwrites AX, BX, DX and R9.
#define Q4K_SCALES \
	MOVQ 4(SI), AX \
	MOVL 12(SI), DX \
	MOVQ AX, BX \
	ANDQ R14, BX \
	SHRQ $2, AX \
	ANDQ R15, AX \
	MOVL DX, R9 \
	ANDL $0x0f0f0f0f, DX \
	ANDL $0xf0f0f0f0, R9 \
	SHLQ $28, R9 \
	ORQ R9, DX \
	ORQ DX, AX \
	MOVQ BX, sm-24(SP) \
	MOVQ AX, smh-16(SP)

// The per-block steps the q4_K and q5_K kernels share (after Q4K_SCALES has
// been defined). Q4K_BLOCK_SCALES leaves the scale and min bytes in every
// 128-bit lane of Z1, adds dmin·d_a·Σ m_k·(bsums[2k]+bsums[2k+1]) into Y29
// and stores d·d_a and dmin·d_a at dd-32(SP) (Y24 = q4kMinCtl).
#define Q4K_BLOCK_SCALES \
	Q4K_SCALES \
	VPBROADCASTQ sm-24(SP), Z1 \
	VPBROADCASTQ smh-16(SP), Z5 \
	VPUNPCKLQDQ Z5, Z1, Z1 \
	VPSHUFB Y24, Y1, Y2 \
	VPMADDWD 260(DI), Y2, Y3 \
	VCVTDQ2PS Y3, Y3 \
	VCVTPH2PS (SI), X4 \
	VMULPS.BCST (DI), X4, X4 \
	VMOVQ X4, dd-32(SP) \
	VFMADD231PS.BCST dmin-28(SP), Y3, Y29

// Q4K_SCALE_PAIR packs the int32 sums of two chunks (S0, S1) into words and
// multiplies them by their word scales (shuffle control CTL over Z1) into
// Z12: MUL is VPMADDWD for the first pair of a block, VPDPWSSD for the
// second.
#define Q4K_SCALE_PAIR(S0, S1, CTL, MUL) \
	VPACKSSDW S1, S0, S0 \
	VPSHUFB CTL, Z1, Z11 \
	MUL Z11, S0, Z12

// Q4K_BLOCK_SUM adds d·d_a times the block's integer sums into Z30.
#define Q4K_BLOCK_SUM \
	VCVTDQ2PS Z12, Z12 \
	VFMADD231PS.BCST dd-32(SP), Z12, Z30

// Q4K_X4_SCALES is the 4-token kernels' version: mins as word pairs in Y2,
// the word scales of chunks 0-1 and 2-3 in Z12 and Z13 (Z20, Z21 =
// q4kPack01, q4kPack23).
#define Q4K_X4_SCALES \
	Q4K_SCALES \
	VPBROADCASTQ sm-24(SP), Z1 \
	VPBROADCASTQ smh-16(SP), Z5 \
	VPUNPCKLQDQ Z5, Z1, Z1 \
	VPSHUFB Y24, Y1, Y2 \
	VPSHUFB Z20, Z1, Z12 \
	VPSHUFB Z21, Z1, Z13

// func mvQ4KAVX512(w, a []byte, nb, nrows int, out []float32) float32
//
// For nrows consecutive weight rows of nb blocks each, out[r] is the dot
// product of row r with the activations a.
// The q4_K · q8_K dot product of nb blocks, as the Go twin dotQ4_K:
//
//	for s := 0; s < 8; s++ {
//		sc, m := scaleMinK4(s, x[4:16])
//		msum += int32(m) * (q8KBsum(y, 2*s) + q8KBsum(y, 2*s+1))
//		q := x[16+32*(s/2):]
//		shift := 4 * (s % 2)
//		var d int32
//		for l := 0; l < 32; l++ {
//			d += int32(q[l]>>shift&0xf) * int32(int8(y[4+32*s+l]))
//		}
//		isum += int32(sc) * d
//	}
//	dy := q8KScale(y)
//	sum += f16(x)*dy*float32(isum) - f16(x[2:])*dy*float32(msum)
//
// One 32-byte chunk of qs holds sub-blocks 2j (low nibbles) and 2j+1 (high
// nibbles); it is widened to 64 nibble bytes [low | high] (a masked shift of
// the upper half and an AND) that line up with the 64 activation bytes of
// those two sub-blocks, so one VPDPBUSD covers both. The int32 sums of two
// chunks (each at most 4·15·128, so they fit in 16 bits) are packed into
// words with VPACKSSDW, and one VPMADDWD against word scales multiplies four
// sub-blocks at once. The scales and mins are unpacked with 64-bit scalar
// operations (Q4K_SCALES).
TEXT ·mvQ4KAVX512(SB), NOSPLIT, $32-92
	MOVQ w_base+0(FP), SI
	MOVQ out_base+64(FP), R13
	MOVQ out_len+72(FP), AX
	TESTQ AX, AX
	JNZ q4kOutOK
	LEAQ scratch-8(SP), R13
q4kOutOK:
	MOVQ nrows+56(FP), R12
	MOVQ $0x3f3f3f3f3f3f3f3f, R14
	MOVQ $0x3030303030303030, R15
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z31
	MOVL $0xffff0000, AX
	KMOVD AX, K1 // the upper 16 words: the high nibbles
	VMOVDQU64 q4kMinCtl<>(SB), Y24
	VMOVDQU64 q4kPack01<>(SB), Z26
	VMOVDQU64 q4kPack23<>(SB), Z27

q4krow:
	MOVQ a_base+24(FP), DI
	MOVQ nb+48(FP), CX
	VPXORD Z30, Z30, Z30
	VPXORD Y29, Y29, Y29

q4kloop:
	Q4K_BLOCK_SCALES

	VBROADCASTI64X4 16(SI), Z8
	VPSRLW $4, Z8, K1, Z8
	VPANDD Z31, Z8, Z8
	VPXORD Z10, Z10, Z10
	VPDPBUSD 4(DI), Z8, Z10
	VBROADCASTI64X4 48(SI), Z14
	VPSRLW $4, Z14, K1, Z14
	VPANDD Z31, Z14, Z14
	VPXORD Z16, Z16, Z16
	VPDPBUSD 68(DI), Z14, Z16
	Q4K_SCALE_PAIR(Z10, Z16, Z26, VPMADDWD)

	VBROADCASTI64X4 80(SI), Z8
	VPSRLW $4, Z8, K1, Z8
	VPANDD Z31, Z8, Z8
	VPXORD Z17, Z17, Z17
	VPDPBUSD 132(DI), Z8, Z17
	VBROADCASTI64X4 112(SI), Z14
	VPSRLW $4, Z14, K1, Z14
	VPANDD Z31, Z14, Z14
	VPXORD Z16, Z16, Z16
	VPDPBUSD 196(DI), Z14, Z16
	Q4K_SCALE_PAIR(Z17, Z16, Z27, VPDPWSSD)

	Q4K_BLOCK_SUM

	ADDQ $144, SI
	ADDQ $292, DI
	DECQ CX
	JNZ q4kloop

	VEXTRACTF64X4 $1, Z30, Y0
	VADDPS Y30, Y0, Y0
	VSUBPS Y29, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMOVHLPS X0, X0, X1
	VADDPS X1, X0, X0
	VMOVSHDUP X0, X1
	VADDSS X1, X0, X0
	MOVSS X0, (R13)
	ADDQ $4, R13
	DECQ R12
	JNZ q4krow
	VZEROUPPER
	MOVSS X0, ret+88(FP)
	RET

// q4kNibbles: VGF2P8AFFINEQB bit matrices that take the low nibble of each
// byte in the lower 256 bits and the high nibble in the upper 256 bits.
DATA q4kNibbles<>+0x00(SB)/8, $0x0102040800000000
DATA q4kNibbles<>+0x08(SB)/8, $0x0102040800000000
DATA q4kNibbles<>+0x10(SB)/8, $0x0102040800000000
DATA q4kNibbles<>+0x18(SB)/8, $0x0102040800000000
DATA q4kNibbles<>+0x20(SB)/8, $0x1020408000000000
DATA q4kNibbles<>+0x28(SB)/8, $0x1020408000000000
DATA q4kNibbles<>+0x30(SB)/8, $0x1020408000000000
DATA q4kNibbles<>+0x38(SB)/8, $0x1020408000000000
GLOBL q4kNibbles<>(SB), RODATA|NOPTR, $64



// func mvQ4KAVX512GFNI(w, a []byte, nb, nrows int, out []float32) float32
//
// mvQ4KAVX512 for CPUs with GFNI: one VGF2P8AFFINEQB (bit matrices
// q4kNibbles) takes the low nibbles of a broadcast 32-byte chunk into the
// lower and the high nibbles into the upper half, instead of a masked shift
// and an AND. It computes, as mvQ4KAVX512 and the Go twin dotQ4_K:
//
//	for s := 0; s < 8; s++ {
//		sc, m := scaleMinK4(s, x[4:16])
//		msum += int32(m) * (q8KBsum(y, 2*s) + q8KBsum(y, 2*s+1))
//		q := x[16+32*(s/2):]
//		shift := 4 * (s % 2)
//		var d int32
//		for l := 0; l < 32; l++ {
//			d += int32(q[l]>>shift&0xf) * int32(int8(y[4+32*s+l]))
//		}
//		isum += int32(sc) * d
//	}
//	dy := q8KScale(y)
//	sum += f16(x)*dy*float32(isum) - f16(x[2:])*dy*float32(msum)
TEXT ·mvQ4KAVX512GFNI(SB), NOSPLIT, $32-92
	MOVQ w_base+0(FP), SI
	MOVQ out_base+64(FP), R13
	MOVQ out_len+72(FP), AX
	TESTQ AX, AX
	JNZ q4kgOutOK
	LEAQ scratch-8(SP), R13
q4kgOutOK:
	MOVQ nrows+56(FP), R12
	MOVQ $0x3f3f3f3f3f3f3f3f, R14
	MOVQ $0x3030303030303030, R15
	VMOVDQU64 q4kNibbles<>(SB), Z28
	VMOVDQU64 q4kMinCtl<>(SB), Y24
	VMOVDQU64 q4kPack01<>(SB), Z26
	VMOVDQU64 q4kPack23<>(SB), Z27

q4kgrow:
	MOVQ a_base+24(FP), DI
	MOVQ nb+48(FP), CX
	VPXORD Z30, Z30, Z30
	VPXORD Y29, Y29, Y29

q4kgloop:
	Q4K_BLOCK_SCALES

	VBROADCASTI64X4 16(SI), Z8
	VGF2P8AFFINEQB $0, Z28, Z8, Z8
	VPXORD Z10, Z10, Z10
	VPDPBUSD 4(DI), Z8, Z10
	VBROADCASTI64X4 48(SI), Z14
	VGF2P8AFFINEQB $0, Z28, Z14, Z14
	VPXORD Z16, Z16, Z16
	VPDPBUSD 68(DI), Z14, Z16
	Q4K_SCALE_PAIR(Z10, Z16, Z26, VPMADDWD)

	VBROADCASTI64X4 80(SI), Z8
	VGF2P8AFFINEQB $0, Z28, Z8, Z8
	VPXORD Z17, Z17, Z17
	VPDPBUSD 132(DI), Z8, Z17
	VBROADCASTI64X4 112(SI), Z14
	VGF2P8AFFINEQB $0, Z28, Z14, Z14
	VPXORD Z16, Z16, Z16
	VPDPBUSD 196(DI), Z14, Z16
	Q4K_SCALE_PAIR(Z17, Z16, Z27, VPDPWSSD)

	Q4K_BLOCK_SUM

	ADDQ $144, SI
	ADDQ $292, DI
	DECQ CX
	JNZ q4kgloop

	VEXTRACTF64X4 $1, Z30, Y0
	VADDPS Y30, Y0, Y0
	VSUBPS Y29, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMOVHLPS X0, X0, X1
	VADDPS X1, X0, X0
	VMOVSHDUP X0, X1
	VADDSS X1, X0, X0
	MOVSS X0, (R13)
	ADDQ $4, R13
	DECQ R12
	JNZ q4kgrow
	VZEROUPPER
	MOVSS X0, ret+88(FP)
	RET

// q6_K constants: 0x30 masks the two top bits in place; the shift counts
// move qh bits 0-1 (left half: 32 elements 0..31) or 2-3 (right half:
// elements 32..63) to bits 4-5, and bits 4-5 / 6-7 for elements 64..127.

DATA q6kShlCnt<>+0x00(SB)/8, $0x0004000400040004
DATA q6kShlCnt<>+0x08(SB)/8, $0x0004000400040004
DATA q6kShlCnt<>+0x10(SB)/8, $0x0004000400040004
DATA q6kShlCnt<>+0x18(SB)/8, $0x0004000400040004
DATA q6kShlCnt<>+0x20(SB)/8, $0x0002000200020002
DATA q6kShlCnt<>+0x28(SB)/8, $0x0002000200020002
DATA q6kShlCnt<>+0x30(SB)/8, $0x0002000200020002
DATA q6kShlCnt<>+0x38(SB)/8, $0x0002000200020002
GLOBL q6kShlCnt<>(SB), RODATA|NOPTR, $64

DATA q6kShrCnt<>+0x00(SB)/8, $0x0000000000000000
DATA q6kShrCnt<>+0x08(SB)/8, $0x0000000000000000
DATA q6kShrCnt<>+0x10(SB)/8, $0x0000000000000000
DATA q6kShrCnt<>+0x18(SB)/8, $0x0000000000000000
DATA q6kShrCnt<>+0x20(SB)/8, $0x0002000200020002
DATA q6kShrCnt<>+0x28(SB)/8, $0x0002000200020002
DATA q6kShrCnt<>+0x30(SB)/8, $0x0002000200020002
DATA q6kShrCnt<>+0x38(SB)/8, $0x0002000200020002
GLOBL q6kShrCnt<>(SB), RODATA|NOPTR, $64


// q6kScaleIdx: VPERMW indexes for chunk c (64 bytes each): int32 lane i of
// the chunk gets scale word 4c + i/4 in its low half and word 16 (zero) in
// its high half.

DATA q6kScaleIdx<>+0x00(SB)/8, $0x0010000000100000
DATA q6kScaleIdx<>+0x08(SB)/8, $0x0010000000100000
DATA q6kScaleIdx<>+0x10(SB)/8, $0x0010000100100001
DATA q6kScaleIdx<>+0x18(SB)/8, $0x0010000100100001
DATA q6kScaleIdx<>+0x20(SB)/8, $0x0010000200100002
DATA q6kScaleIdx<>+0x28(SB)/8, $0x0010000200100002
DATA q6kScaleIdx<>+0x30(SB)/8, $0x0010000300100003
DATA q6kScaleIdx<>+0x38(SB)/8, $0x0010000300100003
DATA q6kScaleIdx<>+0x40(SB)/8, $0x0010000400100004
DATA q6kScaleIdx<>+0x48(SB)/8, $0x0010000400100004
DATA q6kScaleIdx<>+0x50(SB)/8, $0x0010000500100005
DATA q6kScaleIdx<>+0x58(SB)/8, $0x0010000500100005
DATA q6kScaleIdx<>+0x60(SB)/8, $0x0010000600100006
DATA q6kScaleIdx<>+0x68(SB)/8, $0x0010000600100006
DATA q6kScaleIdx<>+0x70(SB)/8, $0x0010000700100007
DATA q6kScaleIdx<>+0x78(SB)/8, $0x0010000700100007
DATA q6kScaleIdx<>+0x80(SB)/8, $0x0010000800100008
DATA q6kScaleIdx<>+0x88(SB)/8, $0x0010000800100008
DATA q6kScaleIdx<>+0x90(SB)/8, $0x0010000900100009
DATA q6kScaleIdx<>+0x98(SB)/8, $0x0010000900100009
DATA q6kScaleIdx<>+0xa0(SB)/8, $0x0010000a0010000a
DATA q6kScaleIdx<>+0xa8(SB)/8, $0x0010000a0010000a
DATA q6kScaleIdx<>+0xb0(SB)/8, $0x0010000b0010000b
DATA q6kScaleIdx<>+0xb8(SB)/8, $0x0010000b0010000b
DATA q6kScaleIdx<>+0xc0(SB)/8, $0x0010000c0010000c
DATA q6kScaleIdx<>+0xc8(SB)/8, $0x0010000c0010000c
DATA q6kScaleIdx<>+0xd0(SB)/8, $0x0010000d0010000d
DATA q6kScaleIdx<>+0xd8(SB)/8, $0x0010000d0010000d
DATA q6kScaleIdx<>+0xe0(SB)/8, $0x0010000e0010000e
DATA q6kScaleIdx<>+0xe8(SB)/8, $0x0010000e0010000e
DATA q6kScaleIdx<>+0xf0(SB)/8, $0x0010000f0010000f
DATA q6kScaleIdx<>+0xf8(SB)/8, $0x0010000f0010000f
GLOBL q6kScaleIdx<>(SB), RODATA|NOPTR, $256

// func mvQ6KAVX512(w, a []byte, nb, nrows int, out []float32) float32
//
// For nrows consecutive weight rows of nb blocks each, out[r] is the dot
// product of row r with the activations a.
// The q6_K · q8_K dot product of nb blocks, as the Go twin dotQ6_K:
//
//	for g := 0; g < 16; g++ {
//		hh, p := g/8, g%8/2
//		ql := x[64*hh+32*(p%2):]
//		qh := x[128+32*hh:]
//		var s int32
//		for l := 16 * (g % 2); l < 16*(g%2)+16; l++ {
//			v := int32(ql[l]>>(4*(p/2))&0xf) | int32(qh[l]>>(2*p)&3)<<4
//			s += (v - 32) * int32(int8(y[4+16*g+l%16]))
//		}
//		isum += int32(int8(x[192+g])) * s
//	}
//	sum += f16(x[208:]) * q8KScale(y) * float32(isum)
//
// The quants are used unsigned (0..63) and the -32 is applied once per
// block as -32·Σ scale_g·bsums_g.
TEXT ·mvQ6KAVX512(SB), NOSPLIT, $8-92
	MOVQ w_base+0(FP), SI
	MOVQ out_base+64(FP), R13
	MOVQ out_len+72(FP), AX
	TESTQ AX, AX
	JNZ mvQ6KAVX512OutOK
	LEAQ scratch-8(SP), R13 // no out (one row): store to the frame
mvQ6KAVX512OutOK:
	MOVQ nrows+56(FP), R12
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z31
	MOVL $0x30303030, AX
	VPBROADCASTD AX, Z30
	VMOVDQU64 q6kShlCnt<>(SB), Z29
	VMOVDQU64 q6kShrCnt<>(SB), Z28
	VMOVDQU64 q6kPackIdx<>+0x00(SB), Z24
	VMOVDQU64 q6kPackIdx<>+0x40(SB), Z25

q6krow:
	MOVQ a_base+24(FP), DI
	MOVQ nb+48(FP), CX
	VPXORD Z23, Z23, Z23

q6kloop:
	VPMOVSXBW 192(SI), Y1   // 16 scales as words; words 16..31 zero
	VPMADDWD 260(DI), Y1, Y3
	VPSLLD $5, Y3, Y3
	VPXORD Z21, Z21, Z21
	VPSUBD Z3, Z21, Z22     // start at -32·Σ scale·bsum

	// Half 0: elements 0..127.
	VMOVDQU64 0(SI), Z8
	VBROADCASTI64X4 128(SI), Z9
	VPSLLVW Z29, Z9, Z10
	VPANDD Z30, Z10, Z10
	VPANDD Z31, Z8, Z12
	VPORD Z10, Z12, Z12
	VPSRLVW Z28, Z9, Z11
	VPANDD Z30, Z11, Z11
	VPSRLW $4, Z8, Z13
	VPANDD Z31, Z13, Z13
	VPORD Z11, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPDPBUSD 4(DI), Z12, Z14
	VPXORD Z15, Z15, Z15
	VPDPBUSD 68(DI), Z13, Z15
	VPACKSSDW Z15, Z14, Z14
	VPERMW Z1, Z24, Z16
	VPDPWSSD Z16, Z14, Z22

	// Half 1: elements 128..255.
	VMOVDQU64 64(SI), Z8
	VBROADCASTI64X4 160(SI), Z9
	VPSLLVW Z29, Z9, Z10
	VPANDD Z30, Z10, Z10
	VPANDD Z31, Z8, Z12
	VPORD Z10, Z12, Z12
	VPSRLVW Z28, Z9, Z11
	VPANDD Z30, Z11, Z11
	VPSRLW $4, Z8, Z13
	VPANDD Z31, Z13, Z13
	VPORD Z11, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPDPBUSD 132(DI), Z12, Z14
	VPXORD Z15, Z15, Z15
	VPDPBUSD 196(DI), Z13, Z15
	VPACKSSDW Z15, Z14, Z14
	VPERMW Z1, Z25, Z16
	VPDPWSSD Z16, Z14, Z21

	VPADDD Z21, Z22, Z22
	VCVTDQ2PS Z22, Z22
	MOVWLZX 208(SI), AX
	VMOVD AX, X4
	VCVTPH2PS X4, X4
	VMULSS (DI), X4, X4
	VBROADCASTSS X4, Z4
	VFMADD231PS Z4, Z22, Z23

	ADDQ $210, SI
	ADDQ $292, DI
	DECQ CX
	JNZ q6kloop

q6kdone:
	VEXTRACTF64X4 $1, Z23, Y0
	VADDPS Y23, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMOVHLPS X0, X0, X1
	VADDPS X1, X0, X0
	VMOVSHDUP X0, X1
	VADDSS X1, X0, X0
	MOVSS X0, (R13)
	ADDQ $4, R13
	DECQ R12
	JNZ q6krow
	VZEROUPPER
	MOVSS X0, ret+88(FP) // the last row's result
	RET

// q6kHighBits: VGF2P8AFFINEQB bit matrices that move two bits of each qh
// byte to bits 4-5 (the rest zero): at offset 0 bits 0-1 for the lower 32
// bytes and bits 2-3 for the upper ones, at offset 64 bits 4-5 and 6-7 (as
// the shifts and masks of mvQ6KAVX512).
DATA q6kHighBits<>+0x00(SB)/8, $0x01020000
DATA q6kHighBits<>+0x08(SB)/8, $0x01020000
DATA q6kHighBits<>+0x10(SB)/8, $0x01020000
DATA q6kHighBits<>+0x18(SB)/8, $0x01020000
DATA q6kHighBits<>+0x20(SB)/8, $0x04080000
DATA q6kHighBits<>+0x28(SB)/8, $0x04080000
DATA q6kHighBits<>+0x30(SB)/8, $0x04080000
DATA q6kHighBits<>+0x38(SB)/8, $0x04080000
DATA q6kHighBits<>+0x40(SB)/8, $0x10200000
DATA q6kHighBits<>+0x48(SB)/8, $0x10200000
DATA q6kHighBits<>+0x50(SB)/8, $0x10200000
DATA q6kHighBits<>+0x58(SB)/8, $0x10200000
DATA q6kHighBits<>+0x60(SB)/8, $0x40800000
DATA q6kHighBits<>+0x68(SB)/8, $0x40800000
DATA q6kHighBits<>+0x70(SB)/8, $0x40800000
DATA q6kHighBits<>+0x78(SB)/8, $0x40800000
GLOBL q6kHighBits<>(SB), RODATA|NOPTR, $128

// q6kPackIdx: VPERMW indexes for the packed sums of half h (64 bytes
// each): VPACKSSDW puts int32 lanes 4q..4q+3 of the two chunks of half h in
// words 8q..8q+3 and 8q+4..8q+7, so word w takes scale 8h + 4·(w%8/4) + w/8.
DATA q6kPackIdx<>+0x00(SB)/8, $0x0000000000000000
DATA q6kPackIdx<>+0x08(SB)/8, $0x0004000400040004
DATA q6kPackIdx<>+0x10(SB)/8, $0x0001000100010001
DATA q6kPackIdx<>+0x18(SB)/8, $0x0005000500050005
DATA q6kPackIdx<>+0x20(SB)/8, $0x0002000200020002
DATA q6kPackIdx<>+0x28(SB)/8, $0x0006000600060006
DATA q6kPackIdx<>+0x30(SB)/8, $0x0003000300030003
DATA q6kPackIdx<>+0x38(SB)/8, $0x0007000700070007
DATA q6kPackIdx<>+0x40(SB)/8, $0x0008000800080008
DATA q6kPackIdx<>+0x48(SB)/8, $0x000c000c000c000c
DATA q6kPackIdx<>+0x50(SB)/8, $0x0009000900090009
DATA q6kPackIdx<>+0x58(SB)/8, $0x000d000d000d000d
DATA q6kPackIdx<>+0x60(SB)/8, $0x000a000a000a000a
DATA q6kPackIdx<>+0x68(SB)/8, $0x000e000e000e000e
DATA q6kPackIdx<>+0x70(SB)/8, $0x000b000b000b000b
DATA q6kPackIdx<>+0x78(SB)/8, $0x000f000f000f000f
GLOBL q6kPackIdx<>(SB), RODATA|NOPTR, $128

// func mvQ6KAVX512GFNI(w, a []byte, nb, nrows int, out []float32) float32
//
// mvQ6KAVX512 for CPUs with GFNI: VGF2P8AFFINEQB moves the qh bit pairs
// and the high ql nibbles into place and VPTERNLOGD merges the low ones (5
// instructions per 128 quants instead of 9). It computes, as mvQ6KAVX512 and
// the Go twin dotQ6_K:
//
//	for g := 0; g < 16; g++ {
//		hh, p := g/8, g%8/2
//		ql := x[64*hh+32*(p%2):]
//		qh := x[128+32*hh:]
//		var s int32
//		for l := 16 * (g % 2); l < 16*(g%2)+16; l++ {
//			v := int32(ql[l]>>(4*(p/2))&0xf) | int32(qh[l]>>(2*p)&3)<<4
//			s += (v - 32) * int32(int8(y[4+16*g+l%16]))
//		}
//		isum += int32(int8(x[192+g])) * s
//	}
//	sum += f16(x[208:]) * q8KScale(y) * float32(isum)
TEXT ·mvQ6KAVX512GFNI(SB), NOSPLIT, $8-92
	MOVQ w_base+0(FP), SI
	MOVQ out_base+64(FP), R13
	MOVQ out_len+72(FP), AX
	TESTQ AX, AX
	JNZ mvQ6KGFNIOutOK
	LEAQ scratch-8(SP), R13 // no out (one row): store to the frame
mvQ6KGFNIOutOK:
	MOVQ nrows+56(FP), R12
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z31
	VMOVDQU64 q6kHighBits<>+0x00(SB), Z29
	VMOVDQU64 q6kHighBits<>+0x40(SB), Z28
	MOVQ $0x1020408000000000, AX
	VPBROADCASTQ AX, Z30 // VGF2P8AFFINEQB: the high nibble
	VMOVDQU64 q6kPackIdx<>+0x00(SB), Z24
	VMOVDQU64 q6kPackIdx<>+0x40(SB), Z25

q6kgrow:
	MOVQ a_base+24(FP), DI
	MOVQ nb+48(FP), CX
	VPXORD Z23, Z23, Z23

q6kgloop:
	VPMOVSXBW 192(SI), Y1   // 16 scales as words; words 16..31 zero
	VPMADDWD 260(DI), Y1, Y3
	VPSLLD $5, Y3, Y3
	VPXORD Z21, Z21, Z21
	VPSUBD Z3, Z21, Z22     // start at -32·Σ scale·bsum

	// Half 0: elements 0..127.
	VMOVDQU64 0(SI), Z8
	VBROADCASTI64X4 128(SI), Z9
	VGF2P8AFFINEQB $0, Z29, Z9, Z12
	VPTERNLOGD $0xf8, Z31, Z8, Z12 // | ql & 0x0f
	VGF2P8AFFINEQB $0, Z28, Z9, Z11
	VGF2P8AFFINEQB $0, Z30, Z8, Z13
	VPORD Z11, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPDPBUSD 4(DI), Z12, Z14
	VPXORD Z15, Z15, Z15
	VPDPBUSD 68(DI), Z13, Z15
	VPACKSSDW Z15, Z14, Z14
	VPERMW Z1, Z24, Z16
	VPDPWSSD Z16, Z14, Z22

	// Half 1: elements 128..255.
	VMOVDQU64 64(SI), Z8
	VBROADCASTI64X4 160(SI), Z9
	VGF2P8AFFINEQB $0, Z29, Z9, Z12
	VPTERNLOGD $0xf8, Z31, Z8, Z12 // | ql & 0x0f
	VGF2P8AFFINEQB $0, Z28, Z9, Z11
	VGF2P8AFFINEQB $0, Z30, Z8, Z13
	VPORD Z11, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPDPBUSD 132(DI), Z12, Z14
	VPXORD Z15, Z15, Z15
	VPDPBUSD 196(DI), Z13, Z15
	VPACKSSDW Z15, Z14, Z14
	VPERMW Z1, Z25, Z16
	VPDPWSSD Z16, Z14, Z21

	VPADDD Z21, Z22, Z22
	VCVTDQ2PS Z22, Z22
	MOVWLZX 208(SI), AX
	VMOVD AX, X4
	VCVTPH2PS X4, X4
	VMULSS (DI), X4, X4
	VBROADCASTSS X4, Z4
	VFMADD231PS Z4, Z22, Z23

	ADDQ $210, SI
	ADDQ $292, DI
	DECQ CX
	JNZ q6kgloop

q6kgdone:
	VEXTRACTF64X4 $1, Z23, Y0
	VADDPS Y23, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMOVHLPS X0, X0, X1
	VADDPS X1, X0, X0
	VMOVSHDUP X0, X1
	VADDSS X1, X0, X0
	MOVSS X0, (R13)
	ADDQ $4, R13
	DECQ R12
	JNZ q6kgrow
	VZEROUPPER
	MOVSS X0, ret+88(FP) // the last row's result
	RET

// func matQ4KAVX512x4(w, a []byte, astride, nb int, out *float32, ostride int)
//
// One q4_K weight row of nb blocks times four q8_K activation rows (astride
// bytes apart) into four floats ostride bytes apart from out:
// out[t] = dotQ4_K(w, a[t*astride:]). Each weight block is
// unpacked once (nibbles, scales, mins, d, dmin) and then meets the four
// tokens' blocks, which is what makes a batched prefill cheaper per token
// than decode. Per token it computes what mvQ4KAVX512 does, with the same
// packing of two chunks' sums into words before the scales (Q4K_TOKEN).
TEXT ·matQ4KAVX512x4(SB), NOSPLIT, $32-80
	MOVQ w_base+0(FP), SI
	MOVQ a_base+24(FP), DI
	MOVQ astride+48(FP), R13
	MOVQ nb+56(FP), CX
	LEAQ (DI)(R13*1), R10
	LEAQ (DI)(R13*2), R11
	LEAQ (R10)(R13*2), R12
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z31
	MOVQ $0x3f3f3f3f3f3f3f3f, R14
	MOVQ $0x3030303030303030, R15
	VMOVDQU64 q4kPack01<>(SB), Z20
	VMOVDQU64 q4kPack23<>(SB), Z21
	VMOVDQU64 q4kMinCtl<>(SB), Y24
	VPXORD Z25, Z25, Z25
	VPXORD Z26, Z26, Z26
	VPXORD Z27, Z27, Z27
	VPXORD Z28, Z28, Z28
	VPXORD Y14, Y14, Y14 // the min terms of the four tokens
	VPXORD Y15, Y15, Y15
	VPXORD Y22, Y22, Y22
	VPXORD Y23, Y23, Y23
	TESTQ CX, CX
	JEQ q4kx4done

q4kx4loop:
	Q4K_X4_SCALES
	VCVTPH2PS (SI), X4  // d, dmin

	// The four chunks of nibbles.
	VMOVDQU 16(SI), Y8
	VPSRLW $4, Y8, Y0
	VINSERTI64X4 $1, Y0, Z8, Z8
	VPANDD Z31, Z8, Z8
	VMOVDQU 48(SI), Y9
	VPSRLW $4, Y9, Y0
	VINSERTI64X4 $1, Y0, Z9, Z9
	VPANDD Z31, Z9, Z9
	VMOVDQU 80(SI), Y10
	VPSRLW $4, Y10, Y0
	VINSERTI64X4 $1, Y0, Z10, Z10
	VPANDD Z31, Z10, Z10
	VMOVDQU 112(SI), Y11
	VPSRLW $4, Y11, Y0
	VINSERTI64X4 $1, Y0, Z11, Z11
	VPANDD Z31, Z11, Z11

#define Q4K_TOKEN(A, ACC, MACC) \
	VPXORD Z16, Z16, Z16 \
	VPDPBUSD 4(A), Z8, Z16 \
	VPXORD Z17, Z17, Z17 \
	VPDPBUSD 68(A), Z9, Z17 \
	VPACKSSDW Z17, Z16, Z16 \
	VPMADDWD Z12, Z16, Z18 \
	VPXORD Z16, Z16, Z16 \
	VPDPBUSD 132(A), Z10, Z16 \
	VPXORD Z17, Z17, Z17 \
	VPDPBUSD 196(A), Z11, Z17 \
	VPACKSSDW Z17, Z16, Z16 \
	VPDPWSSD Z13, Z16, Z18 \
	VCVTDQ2PS Z18, Z17 \
	VPMADDWD 260(A), Y2, Y3 \
	VCVTDQ2PS Y3, Y3 \
	VBROADCASTSS (A), X5 \
	VMULPS X5, X4, X5 \
	VBROADCASTSS X5, Z6 \
	VMOVSHDUP X5, X7 \
	VBROADCASTSS X7, Z7 \
	VFMADD231PS Z6, Z17, ACC \
	VFMADD231PS Y7, Y3, MACC

	Q4K_TOKEN(DI, Z25, Y14)
	Q4K_TOKEN(R10, Z26, Y15)
	Q4K_TOKEN(R11, Z27, Y22)
	Q4K_TOKEN(R12, Z28, Y23)

	ADDQ $144, SI
	ADDQ $292, DI
	ADDQ $292, R10
	ADDQ $292, R11
	ADDQ $292, R12
	DECQ CX
	JNZ q4kx4loop

q4kx4done:
	MOVQ out+64(FP), AX
	MOVQ ostride+72(FP), BX

// HSUM_Y0_STORE adds the eight lanes of Y0 as the mv kernels do and
// stores the sum at (AX), then moves AX on by BX.
#define HSUM_Y0_STORE \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPS X1, X0, X0 \
	VMOVHLPS X0, X0, X1 \
	VADDPS X1, X0, X0 \
	VMOVSHDUP X0, X1 \
	VADDSS X1, X0, X0 \
	MOVSS X0, (AX) \
	ADDQ BX, AX

// HSUM_STORE stores the sum of the 16 lanes of ZACC (upper half plus
// lower half, then HSUM_Y0_STORE).
#define HSUM_STORE(ZACC, YACC) \
	VEXTRACTF64X4 $1, ZACC, Y0 \
	VADDPS YACC, Y0, Y0 \
	HSUM_Y0_STORE

// HSUM_SUB_STORE is HSUM_STORE with the min terms YMIN subtracted from the
// eight lanes first, as the mv kernels finish (so the x4 kernels give each
// token MatVec's bits).
#define HSUM_SUB_STORE(ZACC, YACC, YMIN) \
	VEXTRACTF64X4 $1, ZACC, Y0 \
	VADDPS YACC, Y0, Y0 \
	VSUBPS YMIN, Y0, Y0 \
	HSUM_Y0_STORE

	HSUM_SUB_STORE(Z25, Y25, Y14)
	HSUM_SUB_STORE(Z26, Y26, Y15)
	HSUM_SUB_STORE(Z27, Y27, Y22)
	HSUM_SUB_STORE(Z28, Y28, Y23)
	VZEROUPPER
	RET

// func matQ6KAVX512x4(w, a []byte, astride, nb int, out *float32, ostride int)
//
// One q6_K weight row of nb blocks times four q8_K activation rows (astride
// bytes apart) into four floats ostride bytes apart from out:
// out[t] = dotQ6_K(w, a[t*astride:]). Each weight block is
// unpacked once and meets the four tokens' blocks; per token it computes
// what mvQ6KAVX512 does.
TEXT ·matQ6KAVX512x4(SB), NOSPLIT, $0-80
	MOVQ w_base+0(FP), SI
	MOVQ a_base+24(FP), DI
	MOVQ astride+48(FP), R13
	MOVQ nb+56(FP), CX
	LEAQ (DI)(R13*1), R10
	LEAQ (DI)(R13*2), R11
	LEAQ (R10)(R13*2), R12
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z31
	MOVL $0x30303030, AX
	VPBROADCASTD AX, Z30
	VMOVDQU64 q6kShlCnt<>(SB), Z29
	VMOVDQU64 q6kShrCnt<>(SB), Z28
	VMOVDQU64 q6kPackIdx<>+0x00(SB), Z24
	VMOVDQU64 q6kPackIdx<>+0x40(SB), Z25
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21

q6kx4loop:
	VPMOVSXBW 192(SI), Y1 // 16 scales as words; words 16..31 zero
	VPERMW Z1, Z24, Z12 // word scales of the packed sums of half 0
	VPERMW Z1, Z25, Z13 // and of half 1
	MOVWLZX 208(SI), AX
	VMOVD AX, X4
	VCVTPH2PS X4, X4      // d

#define Q6K_UNPACK(qloff, qhoff, LO, HI) \
	VMOVDQU64 qloff(SI), Z0 \
	VBROADCASTI64X4 qhoff(SI), Z2 \
	VPSLLVW Z29, Z2, Z3 \
	VPANDD Z30, Z3, Z3 \
	VPANDD Z31, Z0, LO \
	VPORD Z3, LO, LO \
	VPSRLVW Z28, Z2, Z3 \
	VPANDD Z30, Z3, Z3 \
	VPSRLW $4, Z0, HI \
	VPANDD Z31, HI, HI \
	VPORD Z3, HI, HI

	Q6K_UNPACK(0, 128, Z8, Z9)
	Q6K_UNPACK(64, 160, Z10, Z11)

#define Q6K_TOKEN(A, ACC) \
	VPMADDWD 260(A), Y1, Y3 \
	VPSLLD $5, Y3, Y3 \
	VPXORD Z17, Z17, Z17 \
	VPSUBD Z3, Z17, Z17 \
	VPXORD Z16, Z16, Z16 \
	VPDPBUSD 4(A), Z8, Z16 \
	VPXORD Z14, Z14, Z14 \
	VPDPBUSD 68(A), Z9, Z14 \
	VPACKSSDW Z14, Z16, Z16 \
	VPDPWSSD Z12, Z16, Z17 \
	VPXORD Z16, Z16, Z16 \
	VPDPBUSD 132(A), Z10, Z16 \
	VPXORD Z14, Z14, Z14 \
	VPDPBUSD 196(A), Z11, Z14 \
	VPACKSSDW Z14, Z16, Z16 \
	VPDPWSSD Z13, Z16, Z17 \
	VCVTDQ2PS Z17, Z17 \
	VMULSS (A), X4, X5 \
	VBROADCASTSS X5, Z6 \
	VFMADD231PS Z6, Z17, ACC

	Q6K_TOKEN(DI, Z18)
	Q6K_TOKEN(R10, Z19)
	Q6K_TOKEN(R11, Z20)
	Q6K_TOKEN(R12, Z21)

	ADDQ $210, SI
	ADDQ $292, DI
	ADDQ $292, R10
	ADDQ $292, R11
	ADDQ $292, R12
	DECQ CX
	JNZ q6kx4loop

	MOVQ out+64(FP), AX
	MOVQ ostride+72(FP), BX
	HSUM_STORE(Z18, Y18)
	HSUM_STORE(Z19, Y19)
	HSUM_STORE(Z20, Y20)
	HSUM_STORE(Z21, Y21)
	VZEROUPPER
	RET

// q5kBits: for chunk c (64 bytes), bit 2c of qh in the lower 32 bytes and
// bit 2c+1 in the upper 32 (the fifth bits of sub-blocks 2c and 2c+1).
DATA q5kBits<>+0x00(SB)/8, $0x0101010101010101
DATA q5kBits<>+0x08(SB)/8, $0x0101010101010101
DATA q5kBits<>+0x10(SB)/8, $0x0101010101010101
DATA q5kBits<>+0x18(SB)/8, $0x0101010101010101
DATA q5kBits<>+0x20(SB)/8, $0x0202020202020202
DATA q5kBits<>+0x28(SB)/8, $0x0202020202020202
DATA q5kBits<>+0x30(SB)/8, $0x0202020202020202
DATA q5kBits<>+0x38(SB)/8, $0x0202020202020202
DATA q5kBits<>+0x40(SB)/8, $0x0404040404040404
DATA q5kBits<>+0x48(SB)/8, $0x0404040404040404
DATA q5kBits<>+0x50(SB)/8, $0x0404040404040404
DATA q5kBits<>+0x58(SB)/8, $0x0404040404040404
DATA q5kBits<>+0x60(SB)/8, $0x0808080808080808
DATA q5kBits<>+0x68(SB)/8, $0x0808080808080808
DATA q5kBits<>+0x70(SB)/8, $0x0808080808080808
DATA q5kBits<>+0x78(SB)/8, $0x0808080808080808
DATA q5kBits<>+0x80(SB)/8, $0x1010101010101010
DATA q5kBits<>+0x88(SB)/8, $0x1010101010101010
DATA q5kBits<>+0x90(SB)/8, $0x1010101010101010
DATA q5kBits<>+0x98(SB)/8, $0x1010101010101010
DATA q5kBits<>+0xa0(SB)/8, $0x2020202020202020
DATA q5kBits<>+0xa8(SB)/8, $0x2020202020202020
DATA q5kBits<>+0xb0(SB)/8, $0x2020202020202020
DATA q5kBits<>+0xb8(SB)/8, $0x2020202020202020
DATA q5kBits<>+0xc0(SB)/8, $0x4040404040404040
DATA q5kBits<>+0xc8(SB)/8, $0x4040404040404040
DATA q5kBits<>+0xd0(SB)/8, $0x4040404040404040
DATA q5kBits<>+0xd8(SB)/8, $0x4040404040404040
DATA q5kBits<>+0xe0(SB)/8, $0x8080808080808080
DATA q5kBits<>+0xe8(SB)/8, $0x8080808080808080
DATA q5kBits<>+0xf0(SB)/8, $0x8080808080808080
DATA q5kBits<>+0xf8(SB)/8, $0x8080808080808080
GLOBL q5kBits<>(SB), RODATA|NOPTR, $256

// func mvQ5KAVX512(w, a []byte, nb, nrows int, out []float32) float32
//
// For nrows consecutive weight rows of nb blocks each, out[r] is the dot
// product of row r with the activations a. The q5_K · q8_K dot product, as
// the Go twin dotQ5_K:
//
//	for s := 0; s < 8; s++ {
//		sc, m := scaleMinK4(s, x[4:16])
//		msum += int32(m) * (q8KBsum(y, 2*s) + q8KBsum(y, 2*s+1))
//		q := x[48+32*(s/2):]
//		shift := 4 * (s % 2)
//		var d int32
//		for l := 0; l < 32; l++ {
//			v := int32(q[l]>>shift&0xf) | int32(x[16+l]>>s&1)<<4
//			d += v * int32(int8(y[4+32*s+l]))
//		}
//		isum += int32(sc) * d
//	}
//	dy := q8KScale(y)
//	sum += f16(x)*dy*float32(isum) - f16(x[2:])*dy*float32(msum)
//
// It is mvQ4KAVX512 with the fifth bits added: VPTESTMB picks the bytes of
// qh whose bit s is set, and those quants get 16. The packed word sums stay
// exact: four products of quants up to 31 are at most 4·31·128 in size.
TEXT ·mvQ5KAVX512(SB), NOSPLIT, $32-92
	MOVQ w_base+0(FP), SI
	MOVQ out_base+64(FP), R13
	MOVQ out_len+72(FP), AX
	TESTQ AX, AX
	JNZ mvQ5KAVX512OutOK
	LEAQ scratch-8(SP), R13 // no out (one row): store to the frame
mvQ5KAVX512OutOK:
	MOVQ nrows+56(FP), R12
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z31
	MOVQ $0x3f3f3f3f3f3f3f3f, R14
	MOVQ $0x3030303030303030, R15
	VMOVDQU64 q4kPack01<>(SB), Z20
	VMOVDQU64 q4kPack23<>(SB), Z21
	VMOVDQU64 q4kMinCtl<>(SB), Y24
	MOVL $0xffff0000, AX
	KMOVD AX, K1 // the upper 16 words: the high nibbles
	MOVL $0x10101010, AX
	VPBROADCASTD AX, Z19 // the fifth bit
	VMOVDQU64 q5kBits<>+0x00(SB), Z25
	VMOVDQU64 q5kBits<>+0x40(SB), Z26
	VMOVDQU64 q5kBits<>+0x80(SB), Z27
	VMOVDQU64 q5kBits<>+0xc0(SB), Z28

q5krow:
	MOVQ a_base+24(FP), DI
	MOVQ nb+48(FP), CX
	VPXORD Z30, Z30, Z30 // Σ d·isum lanes
	VPXORD Z29, Z29, Z29 // Σ dmin·msum lanes (low 8)

q5kloop:
	Q4K_BLOCK_SCALES

	VBROADCASTI64X4 16(SI), Z9 // qh in both halves

	// Chunk 0: sub-blocks 0, 1.
	VBROADCASTI64X4 48(SI), Z8
	VPSRLW $4, Z8, K1, Z8
	VPANDD Z31, Z8, Z8
	VPTESTMB Z25, Z9, K2
	VPADDB Z19, Z8, K2, Z8
	VPXORD Z10, Z10, Z10
	VPDPBUSD 4(DI), Z8, Z10

	// Chunk 1: sub-blocks 2, 3.
	VBROADCASTI64X4 80(SI), Z14
	VPSRLW $4, Z14, K1, Z14
	VPANDD Z31, Z14, Z14
	VPTESTMB Z26, Z9, K2
	VPADDB Z19, Z14, K2, Z14
	VPXORD Z16, Z16, Z16
	VPDPBUSD 68(DI), Z14, Z16
	Q4K_SCALE_PAIR(Z10, Z16, Z20, VPMADDWD)

	// Chunk 2: sub-blocks 4, 5.
	VBROADCASTI64X4 112(SI), Z8
	VPSRLW $4, Z8, K1, Z8
	VPANDD Z31, Z8, Z8
	VPTESTMB Z27, Z9, K2
	VPADDB Z19, Z8, K2, Z8
	VPXORD Z17, Z17, Z17
	VPDPBUSD 132(DI), Z8, Z17

	// Chunk 3: sub-blocks 6, 7.
	VBROADCASTI64X4 144(SI), Z14
	VPSRLW $4, Z14, K1, Z14
	VPANDD Z31, Z14, Z14
	VPTESTMB Z28, Z9, K2
	VPADDB Z19, Z14, K2, Z14
	VPXORD Z16, Z16, Z16
	VPDPBUSD 196(DI), Z14, Z16
	Q4K_SCALE_PAIR(Z17, Z16, Z21, VPDPWSSD)

	Q4K_BLOCK_SUM

	ADDQ $176, SI
	ADDQ $292, DI
	DECQ CX
	JNZ q5kloop

q5kdone:
	VEXTRACTF64X4 $1, Z30, Y0
	VADDPS Y30, Y0, Y0
	VSUBPS Y29, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMOVHLPS X0, X0, X1
	VADDPS X1, X0, X0
	VMOVSHDUP X0, X1
	VADDSS X1, X0, X0
	MOVSS X0, (R13)
	ADDQ $4, R13
	DECQ R12
	JNZ q5krow
	VZEROUPPER
	MOVSS X0, ret+88(FP) // the last row's result
	RET

// func mvF16AVX512(w, a []byte, nb, nrows int, out []float32) float32
//
// For nrows rows of nb·32 f16 weights, out[r] is the dot product with nb·32
// f16 activations, as the Go twin dotF16:
//
//	for i := 0; i < n; i++ {
//		sum += f16(w[2*i:]) * f16(a[2*i:])
//	}
//
// Both are widened exactly with VCVTPH2PS; every product is exact in
// float32 and is summed with FMA in four accumulators of 16 lanes.
TEXT ·mvF16AVX512(SB), NOSPLIT, $8-92
	MOVQ w_base+0(FP), SI
	MOVQ out_base+64(FP), R13
	MOVQ out_len+72(FP), AX
	TESTQ AX, AX
	JNZ mvF16AVX512OutOK
	LEAQ scratch-8(SP), R13 // no out (one row): store to the frame
mvF16AVX512OutOK:
	MOVQ nrows+56(FP), R12

f16row:
	MOVQ a_base+24(FP), DI
	MOVQ nb+48(FP), CX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	SHRQ $1, CX
	JEQ f16tail

f16loop:
	VCVTPH2PS 0(SI), Z2
	VCVTPH2PS 0(DI), Z3
	VFMADD231PS Z3, Z2, Z0
	VCVTPH2PS 32(SI), Z4
	VCVTPH2PS 32(DI), Z5
	VFMADD231PS Z5, Z4, Z1
	VCVTPH2PS 64(SI), Z2
	VCVTPH2PS 64(DI), Z3
	VFMADD231PS Z3, Z2, Z6
	VCVTPH2PS 96(SI), Z4
	VCVTPH2PS 96(DI), Z5
	VFMADD231PS Z5, Z4, Z7
	ADDQ $128, SI
	ADDQ $128, DI
	DECQ CX
	JNZ f16loop

f16tail:
	MOVQ nb+48(FP), CX
	ANDQ $1, CX
	JEQ f16sum
	VCVTPH2PS 0(SI), Z2
	VCVTPH2PS 0(DI), Z3
	VFMADD231PS Z3, Z2, Z0
	VCVTPH2PS 32(SI), Z4
	VCVTPH2PS 32(DI), Z5
	VFMADD231PS Z5, Z4, Z1
	ADDQ $64, SI

f16sum:
	VADDPS Z6, Z0, Z0
	VADDPS Z7, Z1, Z1
	VADDPS Z1, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMOVHLPS X0, X0, X1
	VADDPS X1, X0, X0
	VMOVSHDUP X0, X1
	VADDSS X1, X0, X0
	MOVSS X0, (R13)
	ADDQ $4, R13
	DECQ R12
	JNZ f16row
	VZEROUPPER
	MOVSS X0, ret+88(FP) // the last row's result
	RET

// The four-token wide kernels (matF16F32AVX512x4, matBF16F32AVX512x4):
// Z16-Z19 hold 64 widened weights; WIDE_FMA adds their products with one
// token's float32 activations at A into its accumulators, WIDE_FMA_TAIL the
// first 32 (an odd last block); WIDE_SUM reduces a token's accumulators in
// mvF16AVX512's order and stores the sum at OUT.
#define WIDE_FMA(A, C0, C1, C2, C3) \
	VFMADD231PS 0(A), Z16, C0 \
	VFMADD231PS 64(A), Z17, C1 \
	VFMADD231PS 128(A), Z18, C2 \
	VFMADD231PS 192(A), Z19, C3

#define WIDE_FMA_TAIL(A, C0, C1) \
	VFMADD231PS 0(A), Z16, C0 \
	VFMADD231PS 64(A), Z17, C1

#define WIDE_SUM(C0, C1, C2, C3, Y0, Y1, X0, X1, OUT) \
	VADDPS C2, C0, C0 \
	VADDPS C3, C1, C1 \
	VADDPS C1, C0, C0 \
	VEXTRACTF64X4 $1, C0, Y1 \
	VADDPS Y1, Y0, Y0 \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPS X1, X0, X0 \
	VMOVHLPS X0, X0, X1 \
	VADDPS X1, X0, X0 \
	VMOVSHDUP X0, X1 \
	VADDSS X1, X0, X0 \
	VMOVSS X0, OUT

// func matF16F32AVX512x4(w []byte, a []float32, astride, nb int, out *float32, ostride int)
//
// One row of nb·32 f16 weights times four rows of activations already
// widened to float32 (cvtF16F32AVX512), astride bytes apart: out,
// out+ostride, out+2·ostride and out+3·ostride (bytes) receive the four dot
// products. Each weight vector is widened once for the four tokens; each
// token sums in its own four accumulators in mvF16AVX512's order and
// reduces as it does (the products are the same, f16 widening exactly), so
// a token's result has mvF16AVX512's bits whatever shares its pass.
TEXT ·matF16F32AVX512x4(SB), NOSPLIT, $0-80
	MOVQ w_base+0(FP), SI
	MOVQ a_base+24(FP), DI
	MOVQ astride+48(FP), R13
	MOVQ nb+56(FP), CX
	MOVQ out+64(FP), R8
	MOVQ ostride+72(FP), R9
	LEAQ (DI)(R13*1), R10
	LEAQ (DI)(R13*2), R11
	LEAQ (R10)(R13*2), R12
	LEAQ (R8)(R9*2), R14
	ADDQ R9, R14
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	MOVQ CX, DX
	SHRQ $1, DX
	JEQ f16f32tail

f16f32loop:
	VCVTPH2PS 0(SI), Z16
	VCVTPH2PS 32(SI), Z17
	VCVTPH2PS 64(SI), Z18
	VCVTPH2PS 96(SI), Z19
	WIDE_FMA(DI, Z0, Z1, Z2, Z3)
	WIDE_FMA(R10, Z4, Z5, Z6, Z7)
	WIDE_FMA(R11, Z8, Z9, Z10, Z11)
	WIDE_FMA(R12, Z12, Z13, Z14, Z15)
	ADDQ $128, SI
	ADDQ $256, DI
	ADDQ $256, R10
	ADDQ $256, R11
	ADDQ $256, R12
	DECQ DX
	JNZ f16f32loop

f16f32tail:
	ANDQ $1, CX
	JEQ f16f32sum
	VCVTPH2PS 0(SI), Z16
	VCVTPH2PS 32(SI), Z17
	WIDE_FMA_TAIL(DI, Z0, Z1)
	WIDE_FMA_TAIL(R10, Z4, Z5)
	WIDE_FMA_TAIL(R11, Z8, Z9)
	WIDE_FMA_TAIL(R12, Z12, Z13)

f16f32sum:
	WIDE_SUM(Z0, Z1, Z2, Z3, Y0, Y1, X0, X1, (R8))
	WIDE_SUM(Z4, Z5, Z6, Z7, Y4, Y5, X4, X5, (R8)(R9*1))
	WIDE_SUM(Z8, Z9, Z10, Z11, Y8, Y9, X8, X9, (R8)(R9*2))
	WIDE_SUM(Z12, Z13, Z14, Z15, Y12, Y13, X12, X13, (R14))
	VZEROUPPER
	RET

// func matBF16F32AVX512x4(w []byte, a []float32, astride, nb int, out *float32, ostride int)
//
// matF16F32AVX512x4 for bf16 weights (widened by a 16-bit shift, exactly)
// and bf16 activations already widened to float32 (cvtBF16F32AVX512): the
// products and sums of mvBF16AVX512, in its accumulators and order, so its
// bits.
TEXT ·matBF16F32AVX512x4(SB), NOSPLIT, $0-80
	MOVQ w_base+0(FP), SI
	MOVQ a_base+24(FP), DI
	MOVQ astride+48(FP), R13
	MOVQ nb+56(FP), CX
	MOVQ out+64(FP), R8
	MOVQ ostride+72(FP), R9
	LEAQ (DI)(R13*1), R10
	LEAQ (DI)(R13*2), R11
	LEAQ (R10)(R13*2), R12
	LEAQ (R8)(R9*2), R14
	ADDQ R9, R14
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	MOVQ CX, DX
	SHRQ $1, DX
	JEQ bf16f32tail

bf16f32loop:
	VPMOVZXWD 0(SI), Z16
	VPSLLD $16, Z16, Z16
	VPMOVZXWD 32(SI), Z17
	VPSLLD $16, Z17, Z17
	VPMOVZXWD 64(SI), Z18
	VPSLLD $16, Z18, Z18
	VPMOVZXWD 96(SI), Z19
	VPSLLD $16, Z19, Z19
	WIDE_FMA(DI, Z0, Z1, Z2, Z3)
	WIDE_FMA(R10, Z4, Z5, Z6, Z7)
	WIDE_FMA(R11, Z8, Z9, Z10, Z11)
	WIDE_FMA(R12, Z12, Z13, Z14, Z15)
	ADDQ $128, SI
	ADDQ $256, DI
	ADDQ $256, R10
	ADDQ $256, R11
	ADDQ $256, R12
	DECQ DX
	JNZ bf16f32loop

bf16f32tail:
	ANDQ $1, CX
	JEQ bf16f32sum
	VPMOVZXWD 0(SI), Z16
	VPSLLD $16, Z16, Z16
	VPMOVZXWD 32(SI), Z17
	VPSLLD $16, Z17, Z17
	WIDE_FMA_TAIL(DI, Z0, Z1)
	WIDE_FMA_TAIL(R10, Z4, Z5)
	WIDE_FMA_TAIL(R11, Z8, Z9)
	WIDE_FMA_TAIL(R12, Z12, Z13)

bf16f32sum:
	WIDE_SUM(Z0, Z1, Z2, Z3, Y0, Y1, X0, X1, (R8))
	WIDE_SUM(Z4, Z5, Z6, Z7, Y4, Y5, X4, X5, (R8)(R9*1))
	WIDE_SUM(Z8, Z9, Z10, Z11, Y8, Y9, X8, X9, (R8)(R9*2))
	WIDE_SUM(Z12, Z13, Z14, Z15, Y12, Y13, X12, X13, (R14))
	VZEROUPPER
	RET

// func cvtBF16F32AVX512(src []byte, dst []float32, n16 int)
//
// dst[i] = the bf16 at src[2i:], for n16·16 values, widened exactly.
TEXT ·cvtBF16F32AVX512(SB), NOSPLIT, $0-56
	MOVQ src_base+0(FP), SI
	MOVQ dst_base+24(FP), DI
	MOVQ n16+48(FP), CX
	TESTQ CX, CX
	JEQ cvtbdone
cvtbloop:
	VPMOVZXWD 0(SI), Z0
	VPSLLD $16, Z0, Z0
	VMOVUPS Z0, 0(DI)
	ADDQ $32, SI
	ADDQ $64, DI
	DECQ CX
	JNZ cvtbloop
cvtbdone:
	VZEROUPPER
	RET

// func cvtF16F32AVX512(src []byte, dst []float32, n16 int)
//
// dst[i] = the f16 at src[2i:], for n16·16 values, widened exactly.
TEXT ·cvtF16F32AVX512(SB), NOSPLIT, $0-56
	MOVQ src_base+0(FP), SI
	MOVQ dst_base+24(FP), DI
	MOVQ n16+48(FP), CX
	TESTQ CX, CX
	JEQ cvtdone
cvtloop:
	VCVTPH2PS 0(SI), Z0
	VMOVUPS Z0, 0(DI)
	ADDQ $32, SI
	ADDQ $64, DI
	DECQ CX
	JNZ cvtloop
cvtdone:
	VZEROUPPER
	RET

// func mvBF16AVX512(w, a []byte, nb, nrows int, out []float32) float32
//
// For nrows rows of nb·32 bf16 weights, out[r] is the dot product with
// nb·32 bf16 activations, as the Go twin dotBF16:
//
//	for i := 0; i < n; i++ {
//		x := math.Float32frombits(uint32(binary.LittleEndian.Uint16(w[2*i:])) << 16)
//		y := math.Float32frombits(uint32(binary.LittleEndian.Uint16(a[2*i:])) << 16)
//		sum += x * y
//	}
//
// A bf16 widens to float32 by a 16-bit shift (VPMOVZXWD, VPSLLD); every
// product is exact in float32 and is summed with FMA.
TEXT ·mvBF16AVX512(SB), NOSPLIT, $8-92
	MOVQ w_base+0(FP), SI
	MOVQ out_base+64(FP), R13
	MOVQ out_len+72(FP), AX
	TESTQ AX, AX
	JNZ mvBF16AVX512OutOK
	LEAQ scratch-8(SP), R13 // no out (one row): store to the frame
mvBF16AVX512OutOK:
	MOVQ nrows+56(FP), R12

bf16row:
	MOVQ a_base+24(FP), DI
	MOVQ nb+48(FP), CX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	SHRQ $1, CX
	JEQ bf16tail

#define BF16_16(off, ACC) \
	VPMOVZXWD off(SI), Z2 \
	VPSLLD $16, Z2, Z2 \
	VPMOVZXWD off(DI), Z3 \
	VPSLLD $16, Z3, Z3 \
	VFMADD231PS Z3, Z2, ACC

bf16loop:
	BF16_16(0, Z0)
	BF16_16(32, Z1)
	BF16_16(64, Z6)
	BF16_16(96, Z7)
	ADDQ $128, SI
	ADDQ $128, DI
	DECQ CX
	JNZ bf16loop

bf16tail:
	MOVQ nb+48(FP), CX
	ANDQ $1, CX
	JEQ bf16sum
	BF16_16(0, Z0)
	BF16_16(32, Z1)
	ADDQ $64, SI

bf16sum:
	VADDPS Z6, Z0, Z0
	VADDPS Z7, Z1, Z1
	VADDPS Z1, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMOVHLPS X0, X0, X1
	VADDPS X1, X0, X0
	VMOVSHDUP X0, X1
	VADDSS X1, X0, X0
	MOVSS X0, (R13)
	ADDQ $4, R13
	DECQ R12
	JNZ bf16row
	VZEROUPPER
	MOVSS X0, ret+88(FP) // the last row's result
	RET

// func mvF32AVX512(w, a []byte, nb, nrows int, out []float32) float32
//
// For nrows rows of nb·32 f32 weights, out[r] is the dot product with nb·32
// f32 activations, as the Go twin dotF32:
//
//	for i := 0; i < n; i++ {
//		sum += x[i] * y[i]
//	}
//
// summed with FMA in two accumulators of 16 lanes.
TEXT ·mvF32AVX512(SB), NOSPLIT, $8-92
	MOVQ w_base+0(FP), SI
	MOVQ out_base+64(FP), R13
	MOVQ out_len+72(FP), AX
	TESTQ AX, AX
	JNZ f32OutOK
	LEAQ scratch-8(SP), R13 // no out (one row): store to the frame
f32OutOK:
	MOVQ nrows+56(FP), R12

f32row:
	MOVQ a_base+24(FP), DI
	MOVQ nb+48(FP), CX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1

f32loop:
	VMOVUPS 0(SI), Z2
	VFMADD231PS 0(DI), Z2, Z0
	VMOVUPS 64(SI), Z3
	VFMADD231PS 64(DI), Z3, Z1
	ADDQ $128, SI
	ADDQ $128, DI
	DECQ CX
	JNZ f32loop

	VADDPS Z1, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMOVHLPS X0, X0, X1
	VADDPS X1, X0, X0
	VMOVSHDUP X0, X1
	VADDSS X1, X0, X0
	MOVSS X0, (R13)
	ADDQ $4, R13
	DECQ R12
	JNZ f32row
	VZEROUPPER
	MOVSS X0, ret+88(FP) // the last row's result
	RET

// q3kShift: VPSRLVW counts that bring bits 2j..2j+1 of qs to bits 0-1, for
// chunks j (left 32 bytes) and j+1 (right): j = 0 and j = 2.
DATA q3kShift01<>+0x00(SB)/8, $0x0000000000000000
DATA q3kShift01<>+0x08(SB)/8, $0x0000000000000000
DATA q3kShift01<>+0x10(SB)/8, $0x0000000000000000
DATA q3kShift01<>+0x18(SB)/8, $0x0000000000000000
DATA q3kShift01<>+0x20(SB)/8, $0x0002000200020002
DATA q3kShift01<>+0x28(SB)/8, $0x0002000200020002
DATA q3kShift01<>+0x30(SB)/8, $0x0002000200020002
DATA q3kShift01<>+0x38(SB)/8, $0x0002000200020002
GLOBL q3kShift01<>(SB), RODATA|NOPTR, $64
DATA q3kShift23<>+0x00(SB)/8, $0x0004000400040004
DATA q3kShift23<>+0x08(SB)/8, $0x0004000400040004
DATA q3kShift23<>+0x10(SB)/8, $0x0004000400040004
DATA q3kShift23<>+0x18(SB)/8, $0x0004000400040004
DATA q3kShift23<>+0x20(SB)/8, $0x0006000600060006
DATA q3kShift23<>+0x28(SB)/8, $0x0006000600060006
DATA q3kShift23<>+0x30(SB)/8, $0x0006000600060006
DATA q3kShift23<>+0x38(SB)/8, $0x0006000600060006
GLOBL q3kShift23<>(SB), RODATA|NOPTR, $64

// func mvQ3KAVX512(w, a []byte, nb, nrows int, out []float32) float32
//
// For nrows consecutive weight rows of nb blocks each, out[r] is the dot
// product of row r with the activations a. The q3_K · q8_K dot product, as
// the Go twin dotQ3_K:
//
//	for e0 := 0; e0 < 256; e0 += 16 {
//		k, j, h := e0/128, e0%128/32, e0%32/16
//		q := x[32+32*k+16*h:]
//		hm := x[16*h:]
//		var s int32
//		for l := 0; l < 16; l++ {
//			v := int32(q[l] >> (2 * j) & 3)
//			if hm[l]>>(4*k+j)&1 == 0 {
//				v -= 4
//			}
//			s += v * int32(int8(y[4+e0+l]))
//		}
//		isum += (int32(sc[e0/16]) - 32) * s
//	}
//	sum += f16(x[108:]) * q8KScale(y) * float32(isum)
//
// The quants are used unsigned, v+4 in 0..7 (two bits of qs, plus 4 where
// the hmask bit is set, found with VPTESTMB), and the -4 is applied once per
// block as -4·Σ scale_g·bsums_g.
TEXT ·mvQ3KAVX512(SB), NOSPLIT, $8-92
	MOVQ w_base+0(FP), SI
	MOVQ out_base+64(FP), R13
	MOVQ out_len+72(FP), AX
	TESTQ AX, AX
	JNZ q3kOutOK
	LEAQ scratch-8(SP), R13 // no out (one row): store to the frame
q3kOutOK:
	MOVQ nrows+56(FP), R12
	MOVL $0x03030303, AX
	VPBROADCASTD AX, Z31
	MOVL $0x04040404, AX
	VPBROADCASTD AX, Z19
	MOVL $0x00200020, AX
	VPBROADCASTD AX, Y30 // 32 as words
	VMOVDQU64 q3kShift01<>(SB), Z29
	VMOVDQU64 q3kShift23<>(SB), Z24
	VMOVDQU64 q5kBits<>+0x00(SB), Z25
	VMOVDQU64 q5kBits<>+0x40(SB), Z26
	VMOVDQU64 q5kBits<>+0x80(SB), Z27
	VMOVDQU64 q5kBits<>+0xc0(SB), Z28
	VMOVDQU64 q6kScaleIdx<>+0x00(SB), Z20
	VMOVDQU64 q6kScaleIdx<>+0x40(SB), Z21
	VMOVDQU64 q6kScaleIdx<>+0x80(SB), Z22
	VMOVDQU64 q6kScaleIdx<>+0xc0(SB), Z23

q3krow:
	MOVQ a_base+24(FP), DI
	MOVQ nb+48(FP), CX
	VPXORD Z18, Z18, Z18

q3kloop:
	// The 16 6-bit scales (ggml's kmask1/kmask2 unpacking), minus 32.
	MOVL 96(SI), AX
	MOVL 100(SI), BX
	MOVL 104(SI), DX
	MOVL AX, R8
	SHRL $4, R8
	ANDL $0x0f0f0f0f, R8
	MOVL DX, R9
	SHRL $4, R9
	ANDL $0x03030303, R9
	SHLL $4, R9
	ORL R9, R8 // scales 8..11
	MOVL BX, R10
	SHRL $4, R10
	ANDL $0x0f0f0f0f, R10
	MOVL DX, R9
	SHRL $6, R9
	ANDL $0x03030303, R9
	SHLL $4, R9
	ORL R9, R10 // scales 12..15
	ANDL $0x0f0f0f0f, AX
	MOVL DX, R9
	ANDL $0x03030303, R9
	SHLL $4, R9
	ORL R9, AX // scales 0..3
	ANDL $0x0f0f0f0f, BX
	MOVL DX, R9
	SHRL $2, R9
	ANDL $0x03030303, R9
	SHLL $4, R9
	ORL R9, BX // scales 4..7
	SHLQ $32, BX
	ORQ BX, AX
	SHLQ $32, R10
	ORQ R10, R8
	VMOVQ AX, X1
	VPINSRQ $1, R8, X1, X1
	VPMOVZXBW X1, Y1
	VPSUBW Y30, Y1, Y1 // 16 signed scales as words; words 16..31 zero

	VPMADDWD 260(DI), Y1, Y3
	VPSLLD $2, Y3, Y3
	VPXORD Z13, Z13, Z13
	VPSUBD Z3, Z13, Z12 // start at -4·Σ scale·bsum

	VBROADCASTI64X4 0(SI), Z9 // hmask in both halves

	VBROADCASTI64X4 32(SI), Z8
	VPSRLVW Z29, Z8, Z8
	VPANDD Z31, Z8, Z8
	VPTESTMB Z25, Z9, K2
	VPADDB Z19, Z8, K2, Z8
	VPXORD Z10, Z10, Z10
	VPDPBUSD 4(DI), Z8, Z10
	VPERMW Z1, Z20, Z11
	VPDPWSSD Z11, Z10, Z12
	VBROADCASTI64X4 32(SI), Z8
	VPSRLVW Z24, Z8, Z8
	VPANDD Z31, Z8, Z8
	VPTESTMB Z26, Z9, K2
	VPADDB Z19, Z8, K2, Z8
	VPXORD Z10, Z10, Z10
	VPDPBUSD 68(DI), Z8, Z10
	VPERMW Z1, Z21, Z11
	VPDPWSSD Z11, Z10, Z13
	VBROADCASTI64X4 64(SI), Z8
	VPSRLVW Z29, Z8, Z8
	VPANDD Z31, Z8, Z8
	VPTESTMB Z27, Z9, K2
	VPADDB Z19, Z8, K2, Z8
	VPXORD Z10, Z10, Z10
	VPDPBUSD 132(DI), Z8, Z10
	VPERMW Z1, Z22, Z11
	VPDPWSSD Z11, Z10, Z12
	VBROADCASTI64X4 64(SI), Z8
	VPSRLVW Z24, Z8, Z8
	VPANDD Z31, Z8, Z8
	VPTESTMB Z28, Z9, K2
	VPADDB Z19, Z8, K2, Z8
	VPXORD Z10, Z10, Z10
	VPDPBUSD 196(DI), Z8, Z10
	VPERMW Z1, Z23, Z11
	VPDPWSSD Z11, Z10, Z13

	VPADDD Z13, Z12, Z12
	VCVTDQ2PS Z12, Z12
	MOVWLZX 108(SI), AX
	VMOVD AX, X4
	VCVTPH2PS X4, X4
	VMULSS (DI), X4, X4
	VBROADCASTSS X4, Z4
	VFMADD231PS Z4, Z12, Z18

	ADDQ $110, SI
	ADDQ $292, DI
	DECQ CX
	JNZ q3kloop

	VEXTRACTF64X4 $1, Z18, Y0
	VADDPS Y18, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMOVHLPS X0, X0, X1
	VADDPS X1, X0, X0
	VMOVSHDUP X0, X1
	VADDSS X1, X0, X0
	MOVSS X0, (R13)
	ADDQ $4, R13
	DECQ R12
	JNZ q3krow
	VZEROUPPER
	MOVSS X0, ret+88(FP) // the last row's result
	RET

// func mvQ2KAVX512(w, a []byte, nb, nrows int, out []float32) float32
//
// For nrows consecutive weight rows of nb blocks each, out[r] is the dot
// product of row r with the activations a. The q2_K · q8_K dot product, as
// the Go twin dotQ2_K:
//
//	for g := 0; g < 16; g++ {
//		msum += int32(x[g]>>4) * q8KBsum(y, g)
//	}
//	for e0 := 0; e0 < 256; e0 += 16 {
//		k, j, h := e0/128, e0%128/32, e0%32/16
//		q := x[16+32*k+16*h:]
//		var s int32
//		for l := 0; l < 16; l++ {
//			s += int32(q[l]>>(2*j)&3) * int32(int8(y[4+e0+l]))
//		}
//		isum += int32(x[e0/16]&0xf) * s
//	}
//	dy := q8KScale(y)
//	sum += dy*f16(x[80:])*float32(isum) - dy*f16(x[82:])*float32(msum)
TEXT ·mvQ2KAVX512(SB), NOSPLIT, $8-92
	MOVQ w_base+0(FP), SI
	MOVQ out_base+64(FP), R13
	MOVQ out_len+72(FP), AX
	TESTQ AX, AX
	JNZ q2kOutOK
	LEAQ scratch-8(SP), R13 // no out (one row): store to the frame
q2kOutOK:
	MOVQ nrows+56(FP), R12
	MOVL $0x03030303, AX
	VPBROADCASTD AX, Z31
	MOVL $0x000f000f, AX
	VPBROADCASTD AX, Y30
	VMOVDQU64 q3kShift01<>(SB), Z29
	VMOVDQU64 q3kShift23<>(SB), Z24
	VMOVDQU64 q6kScaleIdx<>+0x00(SB), Z20
	VMOVDQU64 q6kScaleIdx<>+0x40(SB), Z21
	VMOVDQU64 q6kScaleIdx<>+0x80(SB), Z22
	VMOVDQU64 q6kScaleIdx<>+0xc0(SB), Z23

q2krow:
	MOVQ a_base+24(FP), DI
	MOVQ nb+48(FP), CX
	VPXORD Z18, Z18, Z18 // Σ d·isum lanes
	VPXORD Z17, Z17, Z17 // Σ dmin·msum lanes (low 8)

q2kloop:
	VPMOVZXBW 0(SI), Y2
	VPANDD Y30, Y2, Y1 // 16 scales as words; words 16..31 zero
	VPSRLW $4, Y2, Y2 // 16 mins as words
	VPMADDWD 260(DI), Y2, Y3
	VCVTDQ2PS Y3, Y3
	VCVTPH2PS 80(SI), X4 // d, dmin
	VBROADCASTSS (DI), X5
	VMULPS X5, X4, X4
	VBROADCASTSS X4, Z6
	VMOVSHDUP X4, X7
	VBROADCASTSS X7, Y7
	VFMADD231PS Y7, Y3, Y17
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13

	VBROADCASTI64X4 16(SI), Z8
	VPSRLVW Z29, Z8, Z8
	VPANDD Z31, Z8, Z8
	VPXORD Z10, Z10, Z10
	VPDPBUSD 4(DI), Z8, Z10
	VPERMW Z1, Z20, Z11
	VPDPWSSD Z11, Z10, Z12
	VBROADCASTI64X4 16(SI), Z8
	VPSRLVW Z24, Z8, Z8
	VPANDD Z31, Z8, Z8
	VPXORD Z10, Z10, Z10
	VPDPBUSD 68(DI), Z8, Z10
	VPERMW Z1, Z21, Z11
	VPDPWSSD Z11, Z10, Z13
	VBROADCASTI64X4 48(SI), Z8
	VPSRLVW Z29, Z8, Z8
	VPANDD Z31, Z8, Z8
	VPXORD Z10, Z10, Z10
	VPDPBUSD 132(DI), Z8, Z10
	VPERMW Z1, Z22, Z11
	VPDPWSSD Z11, Z10, Z12
	VBROADCASTI64X4 48(SI), Z8
	VPSRLVW Z24, Z8, Z8
	VPANDD Z31, Z8, Z8
	VPXORD Z10, Z10, Z10
	VPDPBUSD 196(DI), Z8, Z10
	VPERMW Z1, Z23, Z11
	VPDPWSSD Z11, Z10, Z13

	VPADDD Z13, Z12, Z12
	VCVTDQ2PS Z12, Z12
	VFMADD231PS Z6, Z12, Z18

	ADDQ $84, SI
	ADDQ $292, DI
	DECQ CX
	JNZ q2kloop

	VEXTRACTF64X4 $1, Z18, Y0
	VADDPS Y18, Y0, Y0
	VSUBPS Y17, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMOVHLPS X0, X0, X1
	VADDPS X1, X0, X0
	VMOVSHDUP X0, X1
	VADDSS X1, X0, X0
	MOVSS X0, (R13)
	ADDQ $4, R13
	DECQ R12
	JNZ q2krow
	VZEROUPPER
	MOVSS X0, ret+88(FP) // the last row's result
	RET

// func matQ5KAVX512x4(w, a []byte, astride, nb int, out *float32, ostride int)
//
// One q5_K weight row of nb blocks times four q8_K activation rows (astride
// bytes apart) into four floats ostride bytes apart from out:
// out[t] = dotQ5_K(w, a[t*astride:]). Each weight block is
// unpacked once (nibbles, scales, mins, d, dmin) and then meets the four
// tokens' blocks, which is what makes a batched prefill cheaper per token
// than decode. Per token it computes what dotQ4KAVX512 does.
TEXT ·matQ5KAVX512x4(SB), NOSPLIT, $32-80
	MOVQ w_base+0(FP), SI
	MOVQ a_base+24(FP), DI
	MOVQ astride+48(FP), R13
	MOVQ nb+56(FP), CX
	LEAQ (DI)(R13*1), R10
	LEAQ (DI)(R13*2), R11
	LEAQ (R10)(R13*2), R12
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z31
	MOVQ $0x3f3f3f3f3f3f3f3f, R14
	MOVQ $0x3030303030303030, R15
	VMOVDQU64 q4kPack01<>(SB), Z20
	VMOVDQU64 q4kPack23<>(SB), Z21
	VMOVDQU64 q4kMinCtl<>(SB), Y24
	MOVL $0x10101010, AX
	VPBROADCASTD AX, Z19 // the fifth bit
	VPXORD Z25, Z25, Z25
	VPXORD Z26, Z26, Z26
	VPXORD Z27, Z27, Z27
	VPXORD Z28, Z28, Z28
	VPXORD Y14, Y14, Y14 // the min terms of the four tokens
	VPXORD Y15, Y15, Y15
	VPXORD Y22, Y22, Y22
	VPXORD Y23, Y23, Y23
	TESTQ CX, CX
	JEQ q5kx4done

q5kx4loop:
	Q4K_X4_SCALES
	VCVTPH2PS (SI), X4  // d, dmin

	// The four chunks of nibbles, with their fifth bits from qh.
	VBROADCASTI64X4 16(SI), Z18
	VMOVDQU 48(SI), Y8
	VPSRLW $4, Y8, Y0
	VINSERTI64X4 $1, Y0, Z8, Z8
	VPANDD Z31, Z8, Z8
	VPTESTMB q5kBits<>+0x00(SB), Z18, K2
	VPADDB Z19, Z8, K2, Z8
	VMOVDQU 80(SI), Y9
	VPSRLW $4, Y9, Y0
	VINSERTI64X4 $1, Y0, Z9, Z9
	VPANDD Z31, Z9, Z9
	VPTESTMB q5kBits<>+0x40(SB), Z18, K2
	VPADDB Z19, Z9, K2, Z9
	VMOVDQU 112(SI), Y10
	VPSRLW $4, Y10, Y0
	VINSERTI64X4 $1, Y0, Z10, Z10
	VPANDD Z31, Z10, Z10
	VPTESTMB q5kBits<>+0x80(SB), Z18, K2
	VPADDB Z19, Z10, K2, Z10
	VMOVDQU 144(SI), Y11
	VPSRLW $4, Y11, Y0
	VINSERTI64X4 $1, Y0, Z11, Z11
	VPANDD Z31, Z11, Z11
	VPTESTMB q5kBits<>+0xc0(SB), Z18, K2
	VPADDB Z19, Z11, K2, Z11

	Q4K_TOKEN(DI, Z25, Y14)
	Q4K_TOKEN(R10, Z26, Y15)
	Q4K_TOKEN(R11, Z27, Y22)
	Q4K_TOKEN(R12, Z28, Y23)

	ADDQ $176, SI
	ADDQ $292, DI
	ADDQ $292, R10
	ADDQ $292, R11
	ADDQ $292, R12
	DECQ CX
	JNZ q5kx4loop

q5kx4done:
	MOVQ out+64(FP), AX
	MOVQ ostride+72(FP), BX

	HSUM_SUB_STORE(Z25, Y25, Y14)
	HSUM_SUB_STORE(Z26, Y26, Y15)
	HSUM_SUB_STORE(Z27, Y27, Y22)
	HSUM_SUB_STORE(Z28, Y28, Y23)
	VZEROUPPER
	RET
