//go:build gc && !purego

#include "textflag.h"

// arm64 mat-vec kernels (see dot_arm64.go for the Go side and dot_generic.go
// for the reference loops). Every kernel comes in two variants that share
// one body macro and differ only in how a block's integer dot products are
// formed:
//
//   - NEON (ARMv8.0 Advanced SIMD, e.g. Cortex-A72): SMULL/SMLAL widen
//     int8·int8 products to int16, SADDLP/SADALP add pairs into int32;
//   - DotProd (FEAT_DotProd, Apple M1+, Graviton 2+): SDOT adds four
//     int8·int8 products into each int32 lane in one instruction.
//
// The float arithmetic of each block is the Go twin's, operation for
// operation: d_w·d_a·isum summed into one float32 in block order, every
// product rounded before it is added or subtracted (FMULS, then FADDS or
// FSUBS; no fused multiply-add, as the twin's explicit conversions and the
// amd64 kernels have it). So the kernels return the twin's result bit for
// bit, the same on arm64 as on amd64.
//
// The Go assembler has no mnemonic for SDOT, SMULL, SMLAL, SADDLP, SADALP,
// ADDV into a scalar, SCVTF (vector) or MLA by element; those are WORDs with
// the instruction in GNU syntax in a comment (checked by armwords.go).
//
// Registers common to all kernels (args: w, a []byte, nb, nrows int,
// out []float32; result float32, the last row's dot product):
//
//	R0 weight pointer, advancing     R1 activation pointer, reset per row
//	R2 nb                            R3 rows left
//	R4 out pointer (0: store nothing)  R5 blocks left in this row
//	R15 activation row start         F30 the row's float32 sum

// MV_ARGS loads the arguments of an mv kernel into those registers.
#define MV_ARGS \
	MOVD w_base+0(FP), R0 \
	MOVD a_base+24(FP), R15 \
	MOVD nb+48(FP), R2 \
	MOVD nrows+56(FP), R3 \
	MOVD out_base+64(FP), R4

// ---- q8_0 ----------------------------------------------------------------

// Q8_0 block: d f16 | qs [32]int8, for weights and activations alike.
// The dot macros turn the weight quants V0,V1 and the activation quants
// V2,V3 into four int32 partial sums in V5.

#define Q8_0_DOT_NEON \
	WORD $0x0e22c005 /* smull v5.8h, v0.8b, v2.8b */ \
	WORD $0x4e22c006 /* smull2 v6.8h, v0.16b, v2.16b */ \
	WORD $0x0e23c027 /* smull v7.8h, v1.8b, v3.8b */ \
	WORD $0x4e23c031 /* smull2 v17.8h, v1.16b, v3.16b */ \
	WORD $0x4e6028a5 /* saddlp v5.4s, v5.8h */ \
	WORD $0x4e6068c5 /* sadalp v5.4s, v6.8h */ \
	WORD $0x4e6068e5 /* sadalp v5.4s, v7.8h */ \
	WORD $0x4e606a25 /* sadalp v5.4s, v17.8h */

#define Q8_0_DOT_DOTPROD \
	VEOR V5.B16, V5.B16, V5.B16 \
	WORD $0x4e829405 /* sdot v5.4s, v0.16b, v2.16b */ \
	WORD $0x4e839425 /* sdot v5.4s, v1.16b, v3.16b */

// Q8_0_LOAD loads a q8_0 block's 32 weight quants into V0, V1.
#define Q8_0_PREP
#define Q8_0_LOAD \
	VLD1.P 32(R0), [V0.B16, V1.B16]

// Q4_0_LOAD loads a q4_0 block's 16 bytes (d f16 | qs [16]u8: element j is
// the low nibble of qs[j] minus 8, element j+16 the high one) and unpacks
// them into int8 quants V0 (elements 0-15), V1 (16-31); Q4_0_PREP sets
// V31 = 0x0f and V29 = 8 in every byte.
#define Q4_0_PREP \
	VMOVI $15, V31.B16 \
	VMOVI $8, V29.B16
#define Q4_0_LOAD \
	VLD1.P 16(R0), [V0.B16] \
	VUSHR $4, V0.B16, V1.B16 \
	VAND V31.B16, V0.B16, V0.B16 \
	VSUB V29.B16, V0.B16, V0.B16 \
	VSUB V29.B16, V1.B16, V1.B16

// Q8_0_ROWS runs the row and block loops of q8_0 weights (and, with
// Q4_0_PREP and Q4_0_LOAD, q4_0 weights) by q8_0 activations. Per block, as
// dotQ8_0: sum += float32(f16(w.d) * f16(a.d) * float32(Σ w.qs·a.qs)).
#define Q8_0_ROWS(DOT, PREP, LOADW) \
	PREP \
q8row: \
	MOVD R15, R1 \
	MOVD R2, R5 \
	VEOR V30.B16, V30.B16, V30.B16 \
q8blk: \
	MOVHU.P 2(R0), R6 \
	MOVHU.P 2(R1), R7 \
	LOADW \
	VLD1.P 32(R1), [V2.B16, V3.B16] \
	DOT \
	WORD $0x4eb1b8a5 /* addv s5, v5.4s */ \
	WORD $0x5e21d8a5 /* scvtf s5, s5 */ \
	FMOVS R6, F20 \
	FCVTHS F20, F20 \
	FMOVS R7, F21 \
	FCVTHS F21, F21 \
	FMULS F21, F20 \
	FMULS F5, F20 \
	FADDS F20, F30 \
	SUBS $1, R5 \
	BNE q8blk \
	CBZ R4, q8next \
	FMOVS.P F30, 4(R4) \
q8next: \
	SUBS $1, R3 \
	BNE q8row

// func mvQ8_0NEON(w, a []byte, nb, nrows int, out []float32) float32
//
// The Go reference loop (dotQ8_0), per row:
//
//	for i := 0; i < n/32; i++ {
//		x, y := w[34*i:34*i+34], a[34*i:34*i+34]
//		var s int32
//		for j := 0; j < 32; j++ {
//			s += int32(int8(x[2+j])) * int32(int8(y[2+j]))
//		}
//		sum = addBlock(sum, f16(x)*f16(y), float32(s)) // sum + float32(d·s)
//	}
TEXT ·mvQ8_0NEON(SB), NOSPLIT, $0-92
	MV_ARGS
	Q8_0_ROWS(Q8_0_DOT_NEON, Q8_0_PREP, Q8_0_LOAD)
	FMOVS F30, ret+88(FP)
	RET

// func mvQ8_0DotProd(w, a []byte, nb, nrows int, out []float32) float32
//
// mvQ8_0NEON with SDOT.
TEXT ·mvQ8_0DotProd(SB), NOSPLIT, $0-92
	MV_ARGS
	Q8_0_ROWS(Q8_0_DOT_DOTPROD, Q8_0_PREP, Q8_0_LOAD)
	FMOVS F30, ret+88(FP)
	RET

// func mvQ4_0NEON(w, a []byte, nb, nrows int, out []float32) float32
//
// The Go reference loop (dotQ4_0), per row:
//
//	for i := 0; i < n/32; i++ {
//		x, y := w[18*i:18*i+18], a[34*i:34*i+34]
//		var s int32
//		for j := 0; j < 16; j++ {
//			s += (int32(x[2+j]&0xf) - 8) * int32(int8(y[2+j]))
//			s += (int32(x[2+j]>>4) - 8) * int32(int8(y[18+j]))
//		}
//		sum = addBlock(sum, f16(x)*f16(y), float32(s)) // sum + float32(d·s)
//	}
TEXT ·mvQ4_0NEON(SB), NOSPLIT, $0-92
	MV_ARGS
	Q8_0_ROWS(Q8_0_DOT_NEON, Q4_0_PREP, Q4_0_LOAD)
	FMOVS F30, ret+88(FP)
	RET

// func mvQ4_0DotProd(w, a []byte, nb, nrows int, out []float32) float32
//
// mvQ4_0NEON with SDOT.
TEXT ·mvQ4_0DotProd(SB), NOSPLIT, $0-92
	MV_ARGS
	Q8_0_ROWS(Q8_0_DOT_DOTPROD, Q4_0_PREP, Q4_0_LOAD)
	FMOVS F30, ret+88(FP)
	RET

// ---- mxfp4 ---------------------------------------------------------------

// MXFP4 block (17 bytes): e E8M0 | qs [16]u8, nibbles laid out as q4_0's,
// indexing the E2M1 values doubled (mxfp4Table). MXFP4_PREP sets V31 = 0x0f
// in every byte and V28 = the table; MXFP4_LOAD loads a block's 16 bytes of
// nibbles (R0 past its scale byte) and looks them up: the int8 values of
// elements 0-15 in V0, of 16-31 in V1.
#define MXFP4_PREP \
	VMOVI $15, V31.B16 \
	MOVD $mxfp4Table<>(SB), R8 \
	VLD1 (R8), [V28.B16]
#define MXFP4_LOAD \
	VLD1.P 16(R0), [V0.B16] \
	VUSHR $4, V0.B16, V1.B16 \
	VAND V31.B16, V0.B16, V0.B16 \
	VTBL V0.B16, [V28.B16], V0.B16 \
	VTBL V1.B16, [V28.B16], V1.B16

// MXFP4_ROWS runs the row and block loops of mxfp4 weights by q8_0
// activations, as dotMXFP4: per block the E8M0 byte e becomes 2^(e-128)
// (the float32 with exponent field e-1, or for e < 2 the subnormal
// 0x200000 << e), times f16(a.d) in one rounded FMULS, and
// sum += float32(that · float32(Σ w·a)), in block order.
#define MXFP4_ROWS(DOT) \
	MXFP4_PREP \
mxrow: \
	MOVD R15, R1 \
	MOVD R2, R5 \
	VEOR V30.B16, V30.B16, V30.B16 \
mxblk: \
	MOVBU.P 1(R0), R6 \
	MOVHU.P 2(R1), R7 \
	MXFP4_LOAD \
	VLD1.P 32(R1), [V2.B16, V3.B16] \
	DOT \
	WORD $0x4eb1b8a5 /* addv s5, v5.4s */ \
	WORD $0x5e21d8a5 /* scvtf s5, s5 */ \
	SUBW $1, R6, R8 \
	LSLW $23, R8, R8 \
	MOVW $0x200000, R9 \
	LSLW R6, R9, R9 \
	CMPW $2, R6 \
	CSELW LO, R9, R8, R8 \
	FMOVS R8, F20 \
	FMOVS R7, F21 \
	FCVTHS F21, F21 \
	FMULS F21, F20 \
	FMULS F5, F20 \
	FADDS F20, F30 \
	SUBS $1, R5 \
	BNE mxblk \
	CBZ R4, mxnext \
	FMOVS.P F30, 4(R4) \
mxnext: \
	SUBS $1, R3 \
	BNE mxrow

// mxfp4Table: ggml's kvalues_mxfp4, the E2M1 values doubled.
DATA mxfp4Table<>+0x00(SB)/8, $0x0c08060403020100
DATA mxfp4Table<>+0x08(SB)/8, $0xf4f8fafcfdfeff00
GLOBL mxfp4Table<>(SB), RODATA|NOPTR, $16

// func mvMXFP4NEON(w, a []byte, nb, nrows int, out []float32) float32
//
// The Go reference loop (dotMXFP4), per row:
//
//	for i := 0; i < n/32; i++ {
//		x, y := w[17*i:17*i+17], a[34*i:34*i+34]
//		var s int32
//		for j := 0; j < 16; j++ {
//			s += int32(mxfp4Values[x[1+j]&0xf]) * int32(int8(y[2+j]))
//			s += int32(mxfp4Values[x[1+j]>>4]) * int32(int8(y[18+j]))
//		}
//		sum = addBlock(sum, f16(y)*e8m0Half(x[0]), float32(s)) // sum + float32(d·s)
//	}
TEXT ·mvMXFP4NEON(SB), NOSPLIT, $0-92
	MV_ARGS
	MXFP4_ROWS(Q8_0_DOT_NEON)
	FMOVS F30, ret+88(FP)
	RET

// func mvMXFP4DotProd(w, a []byte, nb, nrows int, out []float32) float32
//
// mvMXFP4NEON with SDOT.
TEXT ·mvMXFP4DotProd(SB), NOSPLIT, $0-92
	MV_ARGS
	MXFP4_ROWS(Q8_0_DOT_DOTPROD)
	FMOVS F30, ret+88(FP)
	RET

// ---- q4_K ----------------------------------------------------------------

// Q4_K block (144 bytes): d f16 | dmin f16 | scales [12]u8 | qs [128]u8.
// Q8_K block (292 bytes): d f32 | qs [256]int8 | bsums [16]int16.
//
// A chunk is 32 bytes of qs (V0,V1): its low nibbles are sub-block 2c
// (activations V8,V9), its high nibbles sub-block 2c+1 (V10,V11).
// Q4K_NIBBLES splits them into V12,V13 (low) and V14,V15 (high); V31 holds
// 0x0f in every byte. The dot macros leave the two sub-blocks' int32
// partial sums in V17 and V18. Four products of a 5-bit quant and an int8
// are at most 4·31·128 = 15872, so the NEON variant sums them in int16
// lanes.

#define Q4K_NIBBLES \
	VAND V31.B16, V0.B16, V12.B16 \
	VAND V31.B16, V1.B16, V13.B16 \
	VUSHR $4, V0.B16, V14.B16 \
	VUSHR $4, V1.B16, V15.B16

#define Q4K_DOT_NEON \
	WORD $0x0e28c191 /* smull v17.8h, v12.8b, v8.8b */ \
	WORD $0x4e288191 /* smlal2 v17.8h, v12.16b, v8.16b */ \
	WORD $0x0e2981b1 /* smlal v17.8h, v13.8b, v9.8b */ \
	WORD $0x4e2981b1 /* smlal2 v17.8h, v13.16b, v9.16b */ \
	WORD $0x0e2ac1d2 /* smull v18.8h, v14.8b, v10.8b */ \
	WORD $0x4e2a81d2 /* smlal2 v18.8h, v14.16b, v10.16b */ \
	WORD $0x0e2b81f2 /* smlal v18.8h, v15.8b, v11.8b */ \
	WORD $0x4e2b81f2 /* smlal2 v18.8h, v15.16b, v11.16b */ \
	WORD $0x4e602a31 /* saddlp v17.4s, v17.8h */ \
	WORD $0x4e602a52 /* saddlp v18.4s, v18.8h */

#define Q4K_DOT_DOTPROD \
	VEOR V17.B16, V17.B16, V17.B16 \
	VEOR V18.B16, V18.B16, V18.B16 \
	WORD $0x4e889591 /* sdot v17.4s, v12.16b, v8.16b */ \
	WORD $0x4e8995b1 /* sdot v17.4s, v13.16b, v9.16b */ \
	WORD $0x4e8a95d2 /* sdot v18.4s, v14.16b, v10.16b */ \
	WORD $0x4e8b95f2 /* sdot v18.4s, v15.16b, v11.16b */

// Q4K_LOAD loads the next chunk: 32 bytes of qs (R12) and 64 activations (R13).
#define Q4K_LOAD \
	VLD1.P 32(R12), [V0.B16, V1.B16] \
	VLD1.P 64(R13), [V8.B16, V9.B16, V10.B16, V11.B16]

// q4_K has no fifth bit.
#define Q4K_NOHIGH_PREP
#define Q4K_NOHIGH

// Q5K_HIGH_PREP loads q5_K's qh [32]u8 (at byte 16 of the block) into V4,V5
// and 0x10 into every byte of V28; Q5K_HIGH inserts bit 0 of qh as bit 4 of
// the low-nibble quants, bit 1 into the high-nibble ones, and shifts qh
// right by two for the next chunk.
#define Q5K_HIGH_PREP \
	ADD $16, R0, R14 \
	VLD1 (R14), [V4.B16, V5.B16] \
	VMOVI $16, V28.B16

#define Q5K_HIGH \
	VSHL $4, V4.B16, V19.B16 \
	VSHL $4, V5.B16, V29.B16 \
	VBIT V28.B16, V19.B16, V12.B16 \
	VBIT V28.B16, V29.B16, V13.B16 \
	VSHL $3, V4.B16, V19.B16 \
	VSHL $3, V5.B16, V29.B16 \
	VBIT V28.B16, V19.B16, V14.B16 \
	VBIT V28.B16, V29.B16, V15.B16 \
	VUSHR $2, V4.B16, V4.B16 \
	VUSHR $2, V5.B16, V5.B16

// Q4K_ROWS runs the row and block loops of q4_K (and, with the fifth bit
// from HIGH, q5_K: blocks of BLOCK bytes with qs at byte QS). Per block, as
// dotQ4_K: the 6-bit scales sc and mins m of the eight sub-blocks are
// unpacked with 32-bit integer ops (four at a time) and widened to int32
// lanes (V21: sc0..3, V22: sc4..7; V23: m0..7 as int16), isum = Σ sc_s·dot_s
// collects in V16 and msum = Σ m_s·(bsums[2s]+bsums[2s+1]) in V27; then
// sum += f16(d)·dy·isum - f16(dmin)·dy·msum (each product rounded).
#define Q4K_ROWS(DOT, PREP, HIGH, BLOCK, QS) \
	VMOVI $15, V31.B16 \
q4krow: \
	MOVD R15, R1 \
	MOVD R2, R5 \
	VEOR V30.B16, V30.B16, V30.B16 \
q4kblk: \
	MOVWU 4(R0), R6 \
	MOVWU 8(R0), R7 \
	MOVWU 12(R0), R8 \
	LSRW $6, R6, R9 \
	ANDW $0x03030303, R9 \
	ANDW $0x0f0f0f0f, R8, R10 \
	ORRW R9<<4, R10, R10 \
	LSRW $6, R7, R9 \
	ANDW $0x03030303, R9 \
	LSRW $4, R8, R11 \
	ANDW $0x0f0f0f0f, R11 \
	ORRW R9<<4, R11, R11 \
	ANDW $0x3f3f3f3f, R6 \
	ANDW $0x3f3f3f3f, R7 \
	VMOV R6, V20.S[0] \
	VMOV R10, V20.S[1] \
	VMOV R7, V23.S[0] \
	VMOV R11, V23.S[1] \
	VUXTL V20.B8, V20.H8 \
	VUXTL V20.H4, V21.S4 \
	VUXTL2 V20.H8, V22.S4 \
	VUXTL V23.B8, V23.H8 \
	ADD $260, R1, R12 \
	VLD1 (R12), [V24.H8, V25.H8] \
	VADDP V25.H8, V24.H8, V26.H8 \
	WORD $0x0e77c35b /* smull v27.4s, v26.4h, v23.4h */ \
	WORD $0x4e77835b /* smlal2 v27.4s, v26.8h, v23.8h */ \
	PREP \
	ADD $QS, R0, R12 \
	ADD $4, R1, R13 \
	VEOR V16.B16, V16.B16, V16.B16 \
	Q4K_LOAD \
	Q4K_NIBBLES \
	HIGH \
	DOT \
	WORD $0x6f950230 /* mla v16.4s, v17.4s, v21.s[0] */ \
	WORD $0x6fb50250 /* mla v16.4s, v18.4s, v21.s[1] */ \
	Q4K_LOAD \
	Q4K_NIBBLES \
	HIGH \
	DOT \
	WORD $0x6f950a30 /* mla v16.4s, v17.4s, v21.s[2] */ \
	WORD $0x6fb50a50 /* mla v16.4s, v18.4s, v21.s[3] */ \
	Q4K_LOAD \
	Q4K_NIBBLES \
	HIGH \
	DOT \
	WORD $0x6f960230 /* mla v16.4s, v17.4s, v22.s[0] */ \
	WORD $0x6fb60250 /* mla v16.4s, v18.4s, v22.s[1] */ \
	Q4K_LOAD \
	Q4K_NIBBLES \
	HIGH \
	DOT \
	WORD $0x6f960a30 /* mla v16.4s, v17.4s, v22.s[2] */ \
	WORD $0x6fb60a50 /* mla v16.4s, v18.4s, v22.s[3] */ \
	WORD $0x4eb1ba10 /* addv s16, v16.4s */ \
	WORD $0x4eb1bb7b /* addv s27, v27.4s */ \
	WORD $0x5e21da10 /* scvtf s16, s16 */ \
	WORD $0x5e21db7b /* scvtf s27, s27 */ \
	MOVHU (R0), R6 \
	FMOVS R6, F20 \
	FCVTHS F20, F20 \
	MOVHU 2(R0), R7 \
	FMOVS R7, F21 \
	FCVTHS F21, F21 \
	FMOVS (R1), F22 \
	FMULS F22, F20 \
	FMULS F16, F20 \
	FMULS F22, F21 \
	FMULS F27, F21 \
	FSUBS F21, F20 \
	FADDS F20, F30 \
	ADD $BLOCK, R0 \
	ADD $292, R1 \
	SUBS $1, R5 \
	BNE q4kblk \
	CBZ R4, q4knext \
	FMOVS.P F30, 4(R4) \
q4knext: \
	SUBS $1, R3 \
	BNE q4krow

// func mvQ4KNEON(w, a []byte, nb, nrows int, out []float32) float32
//
// The Go reference loop (dotQ4_K), per row:
//
//	for i := 0; i < n/256; i++ {
//		x, y := w[144*i:144*i+144], a[292*i:292*i+292]
//		var isum, msum int32
//		for s := 0; s < 8; s++ {
//			sc, m := scaleMinK4(s, x[4:16])
//			msum += int32(m) * (q8KBsum(y, 2*s) + q8KBsum(y, 2*s+1))
//			q := x[16+32*(s/2):]
//			shift := 4 * (s % 2)
//			var d int32
//			for l := 0; l < 32; l++ {
//				d += int32(q[l]>>shift&0xf) * int32(int8(y[4+32*s+l]))
//			}
//			isum += int32(sc) * d
//		}
//		dy := q8KScale(y)
//		sum += float32(f16(x)*dy*float32(isum)) - float32(f16(x[2:])*dy*float32(msum))
//	}
TEXT ·mvQ4KNEON(SB), NOSPLIT, $0-92
	MV_ARGS
	Q4K_ROWS(Q4K_DOT_NEON, Q4K_NOHIGH_PREP, Q4K_NOHIGH, 144, 16)
	FMOVS F30, ret+88(FP)
	RET

// func mvQ4KDotProd(w, a []byte, nb, nrows int, out []float32) float32
//
// mvQ4KNEON with SDOT.
TEXT ·mvQ4KDotProd(SB), NOSPLIT, $0-92
	MV_ARGS
	Q4K_ROWS(Q4K_DOT_DOTPROD, Q4K_NOHIGH_PREP, Q4K_NOHIGH, 144, 16)
	FMOVS F30, ret+88(FP)
	RET

// func mvQ5KNEON(w, a []byte, nb, nrows int, out []float32) float32
//
// The Go reference loop (dotQ5_K), per row:
//
//	for i := 0; i < n/256; i++ {
//		x, y := w[176*i:176*i+176], a[292*i:292*i+292]
//		var isum, msum int32
//		for s := 0; s < 8; s++ {
//			sc, m := scaleMinK4(s, x[4:16])
//			msum += int32(m) * (q8KBsum(y, 2*s) + q8KBsum(y, 2*s+1))
//			q := x[48+32*(s/2):]
//			shift := 4 * (s % 2)
//			var d int32
//			for l := 0; l < 32; l++ {
//				v := int32(q[l]>>shift&0xf) | int32(x[16+l]>>s&1)<<4
//				d += v * int32(int8(y[4+32*s+l]))
//			}
//			isum += int32(sc) * d
//		}
//		dy := q8KScale(y)
//		sum += float32(f16(x)*dy*float32(isum)) - float32(f16(x[2:])*dy*float32(msum))
//	}
TEXT ·mvQ5KNEON(SB), NOSPLIT, $0-92
	MV_ARGS
	Q4K_ROWS(Q4K_DOT_NEON, Q5K_HIGH_PREP, Q5K_HIGH, 176, 48)
	FMOVS F30, ret+88(FP)
	RET

// func mvQ5KDotProd(w, a []byte, nb, nrows int, out []float32) float32
//
// mvQ5KNEON with SDOT.
TEXT ·mvQ5KDotProd(SB), NOSPLIT, $0-92
	MV_ARGS
	Q4K_ROWS(Q4K_DOT_DOTPROD, Q5K_HIGH_PREP, Q5K_HIGH, 176, 48)
	FMOVS F30, ret+88(FP)
	RET

// ---- helpers of the K-quants with 16 scales (q6_K, q3_K, q2_K) ---------

// K_WIDEN16 widens the 16 int8 scales in V24 to int16 (V25, V26) and int32
// (V20..V23).
#define K_WIDEN16 \
	WORD $0x0f08a719 /* sxtl v25.8h, v24.8b */ \
	WORD $0x4f08a71a /* sxtl2 v26.8h, v24.16b */ \
	WORD $0x0f10a734 /* sxtl v20.4s, v25.4h */ \
	WORD $0x4f10a735 /* sxtl2 v21.4s, v25.8h */ \
	WORD $0x0f10a756 /* sxtl v22.4s, v26.4h */ \
	WORD $0x4f10a757 /* sxtl2 v23.4s, v26.8h */

// K_BSUMS16 forms Σ c_g·bsums[g] of the activation block at R1 in the
// int32x4 V27, with the 16 int16 coefficients c_g in V25, V26.
#define K_BSUMS16 \
	ADD $260, R1, R12 \
	VLD1 (R12), [V6.H8, V7.H8] \
	WORD $0x0e79c0db /* smull v27.4s, v6.4h, v25.4h */ \
	WORD $0x4e7980db /* smlal2 v27.4s, v6.8h, v25.8h */ \
	WORD $0x0e7a80fb /* smlal v27.4s, v7.4h, v26.4h */ \
	WORD $0x4e7a80fb /* smlal2 v27.4s, v7.8h, v26.8h */

// ---- q6_K ----------------------------------------------------------------

// Q6_K block (210 bytes): ql [128]u8 | qh [64]u8 | scales [16]int8 | d f16.
// In half H (128 elements) quarter p (32 elements) has its low four bits in
// ql[64H+32(p%2):] (low nibbles for p < 2, high ones for p >= 2) and its top
// two bits in bits 2p, 2p+1 of qh[32H:32H+32]. The kernels multiply the
// unsigned 6-bit values q and take 32·Σ sc_g·bsums[g] off afterwards
// (q - 32 is the quant); the NEON variant sums two products q·y (at most
// 2·63·128 = 16128 in magnitude) in each int16 lane.
//
// Per quarter pair, V12..V15 hold the 6-bit values of groups (of 16) with
// activations V8..V11; the dot macros leave the four groups' int32 partial
// sums in V17, V18, V24, V25.

#define Q6K_DOT_NEON \
	WORD $0x0e28c191 /* smull v17.8h, v12.8b, v8.8b */ \
	WORD $0x4e288191 /* smlal2 v17.8h, v12.16b, v8.16b */ \
	WORD $0x0e29c1b2 /* smull v18.8h, v13.8b, v9.8b */ \
	WORD $0x4e2981b2 /* smlal2 v18.8h, v13.16b, v9.16b */ \
	WORD $0x0e2ac1d8 /* smull v24.8h, v14.8b, v10.8b */ \
	WORD $0x4e2a81d8 /* smlal2 v24.8h, v14.16b, v10.16b */ \
	WORD $0x0e2bc1f9 /* smull v25.8h, v15.8b, v11.8b */ \
	WORD $0x4e2b81f9 /* smlal2 v25.8h, v15.16b, v11.16b */ \
	WORD $0x4e602a31 /* saddlp v17.4s, v17.8h */ \
	WORD $0x4e602a52 /* saddlp v18.4s, v18.8h */ \
	WORD $0x4e602b18 /* saddlp v24.4s, v24.8h */ \
	WORD $0x4e602b39 /* saddlp v25.4s, v25.8h */

#define Q6K_DOT_DOTPROD \
	VEOR V17.B16, V17.B16, V17.B16 \
	VEOR V18.B16, V18.B16, V18.B16 \
	VEOR V24.B16, V24.B16, V24.B16 \
	VEOR V25.B16, V25.B16, V25.B16 \
	WORD $0x4e889591 /* sdot v17.4s, v12.16b, v8.16b */ \
	WORD $0x4e8995b2 /* sdot v18.4s, v13.16b, v9.16b */ \
	WORD $0x4e8a95d8 /* sdot v24.4s, v14.16b, v10.16b */ \
	WORD $0x4e8b95f9 /* sdot v25.4s, v15.16b, v11.16b */

// Q6K_LO unpacks quarters 0 and 1 of a half (ql in V0..V3, qh in V4,V5;
// V31 = 0x0f, V28 = 0x30 in every byte): low nibbles, qh bits 0,1 and 2,3
// moved to bits 4,5. Q6K_HI unpacks quarters 2 and 3: high nibbles, qh
// bits 4,5 and 6,7.
#define Q6K_LO \
	VAND V31.B16, V0.B16, V12.B16 \
	VAND V31.B16, V1.B16, V13.B16 \
	VAND V31.B16, V2.B16, V14.B16 \
	VAND V31.B16, V3.B16, V15.B16 \
	VSHL $4, V4.B16, V19.B16 \
	VSHL $4, V5.B16, V29.B16 \
	VBIT V28.B16, V19.B16, V12.B16 \
	VBIT V28.B16, V29.B16, V13.B16 \
	VSHL $2, V4.B16, V19.B16 \
	VSHL $2, V5.B16, V29.B16 \
	VBIT V28.B16, V19.B16, V14.B16 \
	VBIT V28.B16, V29.B16, V15.B16

#define Q6K_HI \
	VUSHR $4, V0.B16, V12.B16 \
	VUSHR $4, V1.B16, V13.B16 \
	VUSHR $4, V2.B16, V14.B16 \
	VUSHR $4, V3.B16, V15.B16 \
	VBIT V28.B16, V4.B16, V12.B16 \
	VBIT V28.B16, V5.B16, V13.B16 \
	VUSHR $2, V4.B16, V19.B16 \
	VUSHR $2, V5.B16, V29.B16 \
	VBIT V28.B16, V19.B16, V14.B16 \
	VBIT V28.B16, V29.B16, V15.B16

// Q6K_HALF loads half of a block: ql (R12), qh (R13) and the first 64
// activations (R14).
#define Q6K_HALF \
	VLD1.P 64(R12), [V0.B16, V1.B16, V2.B16, V3.B16] \
	VLD1.P 32(R13), [V4.B16, V5.B16] \
	VLD1.P 64(R14), [V8.B16, V9.B16, V10.B16, V11.B16]

#define Q6K_Y \
	VLD1.P 64(R14), [V8.B16, V9.B16, V10.B16, V11.B16]

// Q6K_ROWS runs the row and block loops. Per block, as dotQ6_K: the 16
// scales widen to int32 lanes (V20..V23), isum = Σ sc_g·Σ q·y collects in
// V16 and Σ sc_g·bsums[g] in V27; then isum -= 32·that and
// sum += float32(f16(d)·dy·isum).
#define Q6K_ROWS(DOT) \
	VMOVI $15, V31.B16 \
	VMOVI $48, V28.B16 \
q6krow: \
	MOVD R15, R1 \
	MOVD R2, R5 \
	VEOR V30.B16, V30.B16, V30.B16 \
q6kblk: \
	ADD $192, R0, R12 \
	VLD1 (R12), [V24.B16] \
	K_WIDEN16 \
	K_BSUMS16 \
	MOVD R0, R12 \
	ADD $128, R0, R13 \
	ADD $4, R1, R14 \
	VEOR V16.B16, V16.B16, V16.B16 \
	Q6K_HALF \
	Q6K_LO \
	DOT \
	WORD $0x6f940230 /* mla v16.4s, v17.4s, v20.s[0] */ \
	WORD $0x6fb40250 /* mla v16.4s, v18.4s, v20.s[1] */ \
	WORD $0x6f940b10 /* mla v16.4s, v24.4s, v20.s[2] */ \
	WORD $0x6fb40b30 /* mla v16.4s, v25.4s, v20.s[3] */ \
	Q6K_Y \
	Q6K_HI \
	DOT \
	WORD $0x6f950230 /* mla v16.4s, v17.4s, v21.s[0] */ \
	WORD $0x6fb50250 /* mla v16.4s, v18.4s, v21.s[1] */ \
	WORD $0x6f950b10 /* mla v16.4s, v24.4s, v21.s[2] */ \
	WORD $0x6fb50b30 /* mla v16.4s, v25.4s, v21.s[3] */ \
	Q6K_HALF \
	Q6K_LO \
	DOT \
	WORD $0x6f960230 /* mla v16.4s, v17.4s, v22.s[0] */ \
	WORD $0x6fb60250 /* mla v16.4s, v18.4s, v22.s[1] */ \
	WORD $0x6f960b10 /* mla v16.4s, v24.4s, v22.s[2] */ \
	WORD $0x6fb60b30 /* mla v16.4s, v25.4s, v22.s[3] */ \
	Q6K_Y \
	Q6K_HI \
	DOT \
	WORD $0x6f970230 /* mla v16.4s, v17.4s, v23.s[0] */ \
	WORD $0x6fb70250 /* mla v16.4s, v18.4s, v23.s[1] */ \
	WORD $0x6f970b10 /* mla v16.4s, v24.4s, v23.s[2] */ \
	WORD $0x6fb70b30 /* mla v16.4s, v25.4s, v23.s[3] */ \
	VSHL $5, V27.S4, V27.S4 \
	VSUB V27.S4, V16.S4, V16.S4 \
	WORD $0x4eb1ba10 /* addv s16, v16.4s */ \
	WORD $0x5e21da10 /* scvtf s16, s16 */ \
	MOVHU 208(R0), R6 \
	FMOVS R6, F20 \
	FCVTHS F20, F20 \
	FMOVS (R1), F22 \
	FMULS F22, F20 \
	FMULS F16, F20 \
	FADDS F20, F30 \
	ADD $210, R0 \
	ADD $292, R1 \
	SUBS $1, R5 \
	BNE q6kblk \
	CBZ R4, q6knext \
	FMOVS.P F30, 4(R4) \
q6knext: \
	SUBS $1, R3 \
	BNE q6krow

// func mvQ6KNEON(w, a []byte, nb, nrows int, out []float32) float32
//
// The Go reference loop (dotQ6_K), per row:
//
//	for i := 0; i < n/256; i++ {
//		x, y := w[210*i:210*i+210], a[292*i:292*i+292]
//		var isum int32
//		for g := 0; g < 16; g++ {
//			hh, p := g/8, g%8/2
//			ql := x[64*hh+32*(p%2):]
//			qh := x[128+32*hh:]
//			var s int32
//			for l := 16 * (g % 2); l < 16*(g%2)+16; l++ {
//				v := int32(ql[l]>>(4*(p/2))&0xf) | int32(qh[l]>>(2*p)&3)<<4
//				s += (v - 32) * int32(int8(y[4+16*g+l%16]))
//			}
//			isum += int32(int8(x[192+g])) * s
//		}
//		sum += float32(f16(x[208:]) * q8KScale(y) * float32(isum))
//	}
TEXT ·mvQ6KNEON(SB), NOSPLIT, $0-92
	MV_ARGS
	Q6K_ROWS(Q6K_DOT_NEON)
	FMOVS F30, ret+88(FP)
	RET

// func mvQ6KDotProd(w, a []byte, nb, nrows int, out []float32) float32
//
// mvQ6KNEON with SDOT.
TEXT ·mvQ6KDotProd(SB), NOSPLIT, $0-92
	MV_ARGS
	Q6K_ROWS(Q6K_DOT_DOTPROD)
	FMOVS F30, ret+88(FP)
	RET

// ---- f16, bf16, f32 ------------------------------------------------------

// The plain types run in units of 32 elements (kernelBlock): weights and
// activations of the same type. The halves widen to float32 (FCVTL for f16;
// bf16 is the top half of a float32, so zipping it with zeros widens it),
// and FMLA sums the products into four float32x4 accumulators V8..V11.
// Products of two halves are exact in float32, so only the order of the
// sum differs from the Go twin's; f32 products round, fused here as there.

// F16_WIDEN turns the 32 halves in V0..V3 into float32 in V16..V23 and
// those in V4..V7 into V24..V31.
#define F16_WIDEN \
	WORD $0x0e217810 /* fcvtl v16.4s, v0.4h */ \
	WORD $0x4e217811 /* fcvtl2 v17.4s, v0.8h */ \
	WORD $0x0e217832 /* fcvtl v18.4s, v1.4h */ \
	WORD $0x4e217833 /* fcvtl2 v19.4s, v1.8h */ \
	WORD $0x0e217854 /* fcvtl v20.4s, v2.4h */ \
	WORD $0x4e217855 /* fcvtl2 v21.4s, v2.8h */ \
	WORD $0x0e217876 /* fcvtl v22.4s, v3.4h */ \
	WORD $0x4e217877 /* fcvtl2 v23.4s, v3.8h */ \
	WORD $0x0e217898 /* fcvtl v24.4s, v4.4h */ \
	WORD $0x4e217899 /* fcvtl2 v25.4s, v4.8h */ \
	WORD $0x0e2178ba /* fcvtl v26.4s, v5.4h */ \
	WORD $0x4e2178bb /* fcvtl2 v27.4s, v5.8h */ \
	WORD $0x0e2178dc /* fcvtl v28.4s, v6.4h */ \
	WORD $0x4e2178dd /* fcvtl2 v29.4s, v6.8h */ \
	WORD $0x0e2178fe /* fcvtl v30.4s, v7.4h */ \
	WORD $0x4e2178ff /* fcvtl2 v31.4s, v7.8h */

// BF16_WIDEN does the same for bfloat16 (V12 holds zeros).
#define BF16_WIDEN \
	VZIP1 V0.H8, V12.H8, V16.H8 \
	VZIP2 V0.H8, V12.H8, V17.H8 \
	VZIP1 V1.H8, V12.H8, V18.H8 \
	VZIP2 V1.H8, V12.H8, V19.H8 \
	VZIP1 V2.H8, V12.H8, V20.H8 \
	VZIP2 V2.H8, V12.H8, V21.H8 \
	VZIP1 V3.H8, V12.H8, V22.H8 \
	VZIP2 V3.H8, V12.H8, V23.H8 \
	VZIP1 V4.H8, V12.H8, V24.H8 \
	VZIP2 V4.H8, V12.H8, V25.H8 \
	VZIP1 V5.H8, V12.H8, V26.H8 \
	VZIP2 V5.H8, V12.H8, V27.H8 \
	VZIP1 V6.H8, V12.H8, V28.H8 \
	VZIP2 V6.H8, V12.H8, V29.H8 \
	VZIP1 V7.H8, V12.H8, V30.H8 \
	VZIP2 V7.H8, V12.H8, V31.H8

// HALF_LOAD loads 32 halves of weights (V0..V3) and of activations (V4..V7).
#define HALF_LOAD \
	VLD1.P 64(R0), [V0.B16, V1.B16, V2.B16, V3.B16] \
	VLD1.P 64(R1), [V4.B16, V5.B16, V6.B16, V7.B16]

// F32_LOAD loads 32 float32 weights (V16..V23) and activations (V24..V31).
#define F32_LOAD \
	VLD1.P 64(R0), [V16.S4, V17.S4, V18.S4, V19.S4] \
	VLD1.P 64(R0), [V20.S4, V21.S4, V22.S4, V23.S4] \
	VLD1.P 64(R1), [V24.S4, V25.S4, V26.S4, V27.S4] \
	VLD1.P 64(R1), [V28.S4, V29.S4, V30.S4, V31.S4]

#define NOWIDEN

// FLOAT_ROWS runs the row and unit loops: LOAD and WIDEN bring 32 weights
// and activations as float32 into V16..V23 and V24..V31.
#define FLOAT_ROWS(LOAD, WIDEN) \
	VEOR V12.B16, V12.B16, V12.B16 \
frow: \
	MOVD R15, R1 \
	MOVD R2, R5 \
	VEOR V8.B16, V8.B16, V8.B16 \
	VEOR V9.B16, V9.B16, V9.B16 \
	VEOR V10.B16, V10.B16, V10.B16 \
	VEOR V11.B16, V11.B16, V11.B16 \
funit: \
	LOAD \
	WIDEN \
	WORD $0x4e38ce08 /* fmla v8.4s, v16.4s, v24.4s */ \
	WORD $0x4e39ce29 /* fmla v9.4s, v17.4s, v25.4s */ \
	WORD $0x4e3ace4a /* fmla v10.4s, v18.4s, v26.4s */ \
	WORD $0x4e3bce6b /* fmla v11.4s, v19.4s, v27.4s */ \
	WORD $0x4e3cce88 /* fmla v8.4s, v20.4s, v28.4s */ \
	WORD $0x4e3dcea9 /* fmla v9.4s, v21.4s, v29.4s */ \
	WORD $0x4e3ececa /* fmla v10.4s, v22.4s, v30.4s */ \
	WORD $0x4e3fceeb /* fmla v11.4s, v23.4s, v31.4s */ \
	SUBS $1, R5 \
	BNE funit \
	WORD $0x4e29d508 /* fadd v8.4s, v8.4s, v9.4s */ \
	WORD $0x4e2bd54a /* fadd v10.4s, v10.4s, v11.4s */ \
	WORD $0x4e2ad508 /* fadd v8.4s, v8.4s, v10.4s */ \
	WORD $0x6e28d508 /* faddp v8.4s, v8.4s, v8.4s */ \
	WORD $0x7e30d91e /* faddp s30, v8.2s */ \
	CBZ R4, fnext \
	FMOVS.P F30, 4(R4) \
fnext: \
	SUBS $1, R3 \
	BNE frow

// func mvF16NEON(w, a []byte, nb, nrows int, out []float32) float32
//
// nb units of 32 elements per row. The Go reference loop (dotF16), per row:
//
//	for i := 0; i < n; i++ {
//		sum += f16(w[2*i:]) * f16(a[2*i:])
//	}
TEXT ·mvF16NEON(SB), NOSPLIT, $0-92
	MV_ARGS
	FLOAT_ROWS(HALF_LOAD, F16_WIDEN)
	FMOVS F30, ret+88(FP)
	RET

// func mvBF16NEON(w, a []byte, nb, nrows int, out []float32) float32
//
// nb units of 32 elements per row. The Go reference loop (dotBF16), per row:
//
//	for i := 0; i < n; i++ {
//		x := math.Float32frombits(uint32(binary.LittleEndian.Uint16(w[2*i:])) << 16)
//		y := math.Float32frombits(uint32(binary.LittleEndian.Uint16(a[2*i:])) << 16)
//		sum += x * y
//	}
TEXT ·mvBF16NEON(SB), NOSPLIT, $0-92
	MV_ARGS
	FLOAT_ROWS(HALF_LOAD, BF16_WIDEN)
	FMOVS F30, ret+88(FP)
	RET

// func mvF32NEON(w, a []byte, nb, nrows int, out []float32) float32
//
// nb units of 32 elements per row. The Go reference loop (dotF32), per row:
//
//	for i := 0; i < n; i++ {
//		x := math.Float32frombits(binary.LittleEndian.Uint32(w[4*i:]))
//		y := math.Float32frombits(binary.LittleEndian.Uint32(a[4*i:]))
//		sum += x * y
//	}
TEXT ·mvF32NEON(SB), NOSPLIT, $0-92
	MV_ARGS
	FLOAT_ROWS(F32_LOAD, NOWIDEN)
	FMOVS F30, ret+88(FP)
	RET

// ---- q3_K and q2_K -------------------------------------------------------

// Q3_K block (110 bytes): hmask [32]u8 | qs [64]u8 | scales [12]u8 | d f16.
// Q2_K block (84 bytes): scales [16]u8 | qs [64]u8 | d f16 | dmin f16.
// Both store element e = 128k + 32j + 16h + l in bits 2j, 2j+1 of
// qs[32k+16h+l] (q3_K adds bit 4k+j of hmask[16h+l]); its group of 16 is
// g = 8k + 2j + h. A step (k, j) unpacks groups g, g+1 from qs (V0: h = 0,
// V1: h = 1) into V12, V13 and dots them with the 32 activations V8, V9 into
// the int32x4 sums V17, V18.

#define Q2K_DOT_NEON \
	WORD $0x0e28c191 /* smull v17.8h, v12.8b, v8.8b */ \
	WORD $0x4e288191 /* smlal2 v17.8h, v12.16b, v8.16b */ \
	WORD $0x0e29c1b2 /* smull v18.8h, v13.8b, v9.8b */ \
	WORD $0x4e2981b2 /* smlal2 v18.8h, v13.16b, v9.16b */ \
	WORD $0x4e602a31 /* saddlp v17.4s, v17.8h */ \
	WORD $0x4e602a52 /* saddlp v18.4s, v18.8h */

#define Q2K_DOT_DOTPROD \
	VEOR V17.B16, V17.B16, V17.B16 \
	VEOR V18.B16, V18.B16, V18.B16 \
	WORD $0x4e889591 /* sdot v17.4s, v12.16b, v8.16b */ \
	WORD $0x4e8995b2 /* sdot v18.4s, v13.16b, v9.16b */

// Q2K_STEP unpacks bits 2j, 2j+1 (QOP $QSH: the shift right by 2j, or
// VSHL $0 for j = 0; V31 = 3 in every byte), adds the step's HIGH bits,
// loads the activations (R13) and forms the dot products with DOT.
#define Q2K_STEP(QOP, QSH, HIGH, DOT) \
	QOP $QSH, V0.B16, V12.B16 \
	QOP $QSH, V1.B16, V13.B16 \
	VAND V31.B16, V12.B16, V12.B16 \
	VAND V31.B16, V13.B16, V13.B16 \
	HIGH \
	VLD1.P 32(R13), [V8.B16, V9.B16] \
	DOT

// Q3K_HIGH(HOP, HSH) moves bit 4k+j of hmask (V4: h = 0, V5: h = 1) to bit
// 2 (V29 = 4 in every byte), so q3_K's values are 0..7: the quant plus 4.
#define Q3K_HIGH(HOP, HSH) \
	HOP $HSH, V4.B16, V14.B16 \
	HOP $HSH, V5.B16, V15.B16 \
	VBIT V29.B16, V14.B16, V12.B16 \
	VBIT V29.B16, V15.B16, V13.B16

#define Q2K_NOHIGH

// Q2K_STEPS runs the eight steps of a block, scaling the groups' sums into
// V16 with the int32 scales in V20..V23 (lane g%4 of V20+g/4); qs of half k
// is loaded from R12.
#define Q2K_STEPS(DOT, H00, H01, H02, H03, H10, H11, H12, H13) \
	VLD1.P 32(R12), [V0.B16, V1.B16] \
	Q2K_STEP(VSHL, 0, H00, DOT) \
	WORD $0x6f940230 /* mla v16.4s, v17.4s, v20.s[0] */ \
	WORD $0x6fb40250 /* mla v16.4s, v18.4s, v20.s[1] */ \
	Q2K_STEP(VUSHR, 2, H01, DOT) \
	WORD $0x6f940a30 /* mla v16.4s, v17.4s, v20.s[2] */ \
	WORD $0x6fb40a50 /* mla v16.4s, v18.4s, v20.s[3] */ \
	Q2K_STEP(VUSHR, 4, H02, DOT) \
	WORD $0x6f950230 /* mla v16.4s, v17.4s, v21.s[0] */ \
	WORD $0x6fb50250 /* mla v16.4s, v18.4s, v21.s[1] */ \
	Q2K_STEP(VUSHR, 6, H03, DOT) \
	WORD $0x6f950a30 /* mla v16.4s, v17.4s, v21.s[2] */ \
	WORD $0x6fb50a50 /* mla v16.4s, v18.4s, v21.s[3] */ \
	VLD1.P 32(R12), [V0.B16, V1.B16] \
	Q2K_STEP(VSHL, 0, H10, DOT) \
	WORD $0x6f960230 /* mla v16.4s, v17.4s, v22.s[0] */ \
	WORD $0x6fb60250 /* mla v16.4s, v18.4s, v22.s[1] */ \
	Q2K_STEP(VUSHR, 2, H11, DOT) \
	WORD $0x6f960a30 /* mla v16.4s, v17.4s, v22.s[2] */ \
	WORD $0x6fb60a50 /* mla v16.4s, v18.4s, v22.s[3] */ \
	Q2K_STEP(VUSHR, 4, H12, DOT) \
	WORD $0x6f970230 /* mla v16.4s, v17.4s, v23.s[0] */ \
	WORD $0x6fb70250 /* mla v16.4s, v18.4s, v23.s[1] */ \
	Q2K_STEP(VUSHR, 6, H13, DOT) \
	WORD $0x6f970a30 /* mla v16.4s, v17.4s, v23.s[2] */ \
	WORD $0x6fb70a50 /* mla v16.4s, v18.4s, v23.s[3] */

// Q3K_ROWS runs the row and block loops of q3_K. Per block, as dotQ3_K: the
// 6-bit scales unpack with 64-bit integer ops and, minus 32, widen to int32;
// the values 0..7 (quant + 4) multiply the activations, and
// isum = Σ sc_g·Σ v·y - 4·Σ sc_g·bsums[g]; sum += float32(f16(d)·dy·isum).
#define Q3K_ROWS(DOT) \
	VMOVI $3, V31.B16 \
	VMOVI $4, V29.B16 \
	VMOVI $32, V28.B16 \
q3row: \
	MOVD R15, R1 \
	MOVD R2, R5 \
	VEOR V30.B16, V30.B16, V30.B16 \
q3blk: \
	MOVD 96(R0), R6 \
	MOVWU 104(R0), R7 \
	AND $0x0f0f0f0f0f0f0f0f, R6, R8 \
	LSR $4, R6, R9 \
	AND $0x0f0f0f0f0f0f0f0f, R9 \
	ANDW $0x03030303, R7, R10 \
	LSRW $2, R7, R11 \
	ANDW $0x03030303, R11 \
	ORR R11<<32, R10, R10 \
	LSRW $4, R7, R11 \
	ANDW $0x03030303, R11 \
	LSRW $6, R7, R12 \
	ANDW $0x03030303, R12 \
	ORR R12<<32, R11, R11 \
	ORR R10<<4, R8, R8 \
	ORR R11<<4, R9, R9 \
	VMOV R8, V24.D[0] \
	VMOV R9, V24.D[1] \
	VSUB V28.B16, V24.B16, V24.B16 \
	K_WIDEN16 \
	K_BSUMS16 \
	VLD1 (R0), [V4.B16, V5.B16] \
	ADD $32, R0, R12 \
	ADD $4, R1, R13 \
	VEOR V16.B16, V16.B16, V16.B16 \
	Q2K_STEPS(DOT, Q3K_HIGH(VSHL, 2), Q3K_HIGH(VSHL, 1), Q3K_HIGH(VSHL, 0), Q3K_HIGH(VUSHR, 1), Q3K_HIGH(VUSHR, 2), Q3K_HIGH(VUSHR, 3), Q3K_HIGH(VUSHR, 4), Q3K_HIGH(VUSHR, 5)) \
	VSHL $2, V27.S4, V27.S4 \
	VSUB V27.S4, V16.S4, V16.S4 \
	WORD $0x4eb1ba10 /* addv s16, v16.4s */ \
	WORD $0x5e21da10 /* scvtf s16, s16 */ \
	MOVHU 108(R0), R6 \
	FMOVS R6, F20 \
	FCVTHS F20, F20 \
	FMOVS (R1), F22 \
	FMULS F22, F20 \
	FMULS F16, F20 \
	FADDS F20, F30 \
	ADD $110, R0 \
	ADD $292, R1 \
	SUBS $1, R5 \
	BNE q3blk \
	CBZ R4, q3next \
	FMOVS.P F30, 4(R4) \
q3next: \
	SUBS $1, R3 \
	BNE q3row

// func mvQ3KNEON(w, a []byte, nb, nrows int, out []float32) float32
//
// The Go reference loop (dotQ3_K), per row:
//
//	for i := 0; i < n/256; i++ {
//		x, y := w[110*i:110*i+110], a[292*i:292*i+292]
//		var sc [16]int8
//		q3KUnpackScales(x[96:108], &sc)
//		var isum int32
//		for e0 := 0; e0 < 256; e0 += 16 {
//			k, j, h := e0/128, e0%128/32, e0%32/16
//			q := x[32+32*k+16*h:]
//			hm := x[16*h:]
//			var s int32
//			for l := 0; l < 16; l++ {
//				v := int32(q[l] >> (2 * j) & 3)
//				if hm[l]>>(4*k+j)&1 == 0 {
//					v -= 4
//				}
//				s += v * int32(int8(y[4+e0+l]))
//			}
//			isum += (int32(sc[e0/16]) - 32) * s
//		}
//		sum += float32(f16(x[108:]) * q8KScale(y) * float32(isum))
//	}
TEXT ·mvQ3KNEON(SB), NOSPLIT, $0-92
	MV_ARGS
	Q3K_ROWS(Q2K_DOT_NEON)
	FMOVS F30, ret+88(FP)
	RET

// func mvQ3KDotProd(w, a []byte, nb, nrows int, out []float32) float32
//
// mvQ3KNEON with SDOT.
TEXT ·mvQ3KDotProd(SB), NOSPLIT, $0-92
	MV_ARGS
	Q3K_ROWS(Q2K_DOT_DOTPROD)
	FMOVS F30, ret+88(FP)
	RET

// Q2K_ROWS runs the row and block loops of q2_K. Per block, as dotQ2_K: the
// scales (low nibbles, V24) widen to int32 for isum = Σ sc_g·Σ q·y in V16,
// the mins (high nibbles) to int16 for msum = Σ m_g·bsums[g] in V27; then
// sum += dy·f16(d)·isum - dy·f16(dmin)·msum (each product rounded).
#define Q2K_ROWS(DOT) \
	VMOVI $3, V31.B16 \
	VMOVI $15, V28.B16 \
q2row: \
	MOVD R15, R1 \
	MOVD R2, R5 \
	VEOR V30.B16, V30.B16, V30.B16 \
q2blk: \
	VLD1 (R0), [V19.B16] \
	VAND V28.B16, V19.B16, V24.B16 \
	VUSHR $4, V19.B16, V19.B16 \
	K_WIDEN16 \
	WORD $0x0f08a679 /* sxtl v25.8h, v19.8b */ \
	WORD $0x4f08a67a /* sxtl2 v26.8h, v19.16b */ \
	K_BSUMS16 \
	ADD $16, R0, R12 \
	ADD $4, R1, R13 \
	VEOR V16.B16, V16.B16, V16.B16 \
	Q2K_STEPS(DOT, Q2K_NOHIGH, Q2K_NOHIGH, Q2K_NOHIGH, Q2K_NOHIGH, Q2K_NOHIGH, Q2K_NOHIGH, Q2K_NOHIGH, Q2K_NOHIGH) \
	WORD $0x4eb1ba10 /* addv s16, v16.4s */ \
	WORD $0x4eb1bb7b /* addv s27, v27.4s */ \
	WORD $0x5e21da10 /* scvtf s16, s16 */ \
	WORD $0x5e21db7b /* scvtf s27, s27 */ \
	MOVHU 80(R0), R6 \
	FMOVS R6, F20 \
	FCVTHS F20, F20 \
	MOVHU 82(R0), R7 \
	FMOVS R7, F21 \
	FCVTHS F21, F21 \
	FMOVS (R1), F22 \
	FMULS F20, F22, F23 \
	FMULS F21, F22, F24 \
	FMULS F16, F23 \
	FMULS F27, F24 \
	FSUBS F24, F23 \
	FADDS F23, F30 \
	ADD $84, R0 \
	ADD $292, R1 \
	SUBS $1, R5 \
	BNE q2blk \
	CBZ R4, q2next \
	FMOVS.P F30, 4(R4) \
q2next: \
	SUBS $1, R3 \
	BNE q2row

// func mvQ2KNEON(w, a []byte, nb, nrows int, out []float32) float32
//
// The Go reference loop (dotQ2_K), per row:
//
//	for i := 0; i < n/256; i++ {
//		x, y := w[84*i:84*i+84], a[292*i:292*i+292]
//		var isum, msum int32
//		for g := 0; g < 16; g++ {
//			msum += int32(x[g]>>4) * q8KBsum(y, g)
//		}
//		for e0 := 0; e0 < 256; e0 += 16 {
//			k, j, h := e0/128, e0%128/32, e0%32/16
//			q := x[16+32*k+16*h:]
//			var s int32
//			for l := 0; l < 16; l++ {
//				s += int32(q[l]>>(2*j)&3) * int32(int8(y[4+e0+l]))
//			}
//			isum += int32(x[e0/16]&0xf) * s
//		}
//		dy := q8KScale(y)
//		sum += float32(dy*f16(x[80:])*float32(isum)) - float32(dy*f16(x[82:])*float32(msum))
//	}
TEXT ·mvQ2KNEON(SB), NOSPLIT, $0-92
	MV_ARGS
	Q2K_ROWS(Q2K_DOT_NEON)
	FMOVS F30, ret+88(FP)
	RET

// func mvQ2KDotProd(w, a []byte, nb, nrows int, out []float32) float32
//
// mvQ2KNEON with SDOT.
TEXT ·mvQ2KDotProd(SB), NOSPLIT, $0-92
	MV_ARGS
	Q2K_ROWS(Q2K_DOT_DOTPROD)
	FMOVS F30, ret+88(FP)
	RET
