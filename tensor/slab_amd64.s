//go:build gc && !purego

#include "textflag.h"

// The float GEMM's slab packers (floatgemm.go; their Go twin is
// packSlabGo): 32 weight rows, rb bytes apart from w, into a slab where
// column c's 32 weights lie side by side. VPGATHERDD reads one dword of 16
// rows at once (two F16 or BF16 columns); no row is read past column k.

// slabOffsets: dwords 0..15, the rows of a gather (times rb).
DATA slabOffsets<>+0x00(SB)/8, $0x0000000100000000
DATA slabOffsets<>+0x08(SB)/8, $0x0000000300000002
DATA slabOffsets<>+0x10(SB)/8, $0x0000000500000004
DATA slabOffsets<>+0x18(SB)/8, $0x0000000700000006
DATA slabOffsets<>+0x20(SB)/8, $0x0000000900000008
DATA slabOffsets<>+0x28(SB)/8, $0x0000000b0000000a
DATA slabOffsets<>+0x30(SB)/8, $0x0000000d0000000c
DATA slabOffsets<>+0x38(SB)/8, $0x0000000f0000000e
GLOBL slabOffsets<>(SB), RODATA|NOPTR, $64

// SLAB_SETUP loads w, rb and the slab, and sets Z31 to the 16 rows'
// offsets, BX to row 16 and CX to the count.
#define SLAB_SETUP \
	MOVQ slab+0(FP), DI \
	MOVQ w+8(FP), SI \
	MOVQ rb+16(FP), R8 \
	MOVQ n+24(FP), CX \
	VPBROADCASTD R8, Z31 \
	VPMULLD slabOffsets<>(SB), Z31, Z31 \
	MOVQ R8, BX \
	SHLQ $4, BX \
	ADDQ SI, BX

// SLAB_GATHER gathers the dword at SI and BX of rows 0-15 and 16-31 into
// Z0 and Z1.
#define SLAB_GATHER \
	KXNORW K1, K1, K1 \
	VPGATHERDD (SI)(Z31*1), K1, Z0 \
	KXNORW K2, K2, K2 \
	VPGATHERDD (BX)(Z31*1), K2, Z1

// func packSlabF16AVX512(slab, w *byte, rb, n int)
//
// n column pairs of 2-byte elements (F16): slab[c][r] = w[r][c].
TEXT ·packSlabF16AVX512(SB), NOSPLIT, $0-32
	SLAB_SETUP
f16loop:
	SLAB_GATHER
	VPMOVDW Z0, Y2 // column c
	VPMOVDW Z1, Y3
	VMOVDQU Y2, (DI)
	VMOVDQU Y3, 32(DI)
	VPSRLD $16, Z0, Z0 // column c+1
	VPSRLD $16, Z1, Z1
	VPMOVDW Z0, Y2
	VPMOVDW Z1, Y3
	VMOVDQU Y2, 64(DI)
	VMOVDQU Y3, 96(DI)
	ADDQ $4, SI
	ADDQ $4, BX
	ADDQ $128, DI
	DECQ CX
	JNZ f16loop
	VZEROUPPER
	RET

// func packSlabBF16AVX512(slab, w *byte, rb, n int)
//
// n column pairs of BF16 weights, widened to float32 (exactly: the 16
// bits above 16 zero bits).
TEXT ·packSlabBF16AVX512(SB), NOSPLIT, $0-32
	SLAB_SETUP
	MOVL $0xffff0000, AX
	VPBROADCASTD AX, Z30
bf16loop:
	SLAB_GATHER
	VPSLLD $16, Z0, Z2 // column c
	VPSLLD $16, Z1, Z3
	VMOVDQU32 Z2, (DI)
	VMOVDQU32 Z3, 64(DI)
	VPANDD Z30, Z0, Z0 // column c+1
	VPANDD Z30, Z1, Z1
	VMOVDQU32 Z0, 128(DI)
	VMOVDQU32 Z1, 192(DI)
	ADDQ $4, SI
	ADDQ $4, BX
	ADDQ $256, DI
	DECQ CX
	JNZ bf16loop
	VZEROUPPER
	RET

// func packSlabPairsAVX512(slab, w *byte, rb, n int)
//
// n column pairs of 2-byte elements, each pair kept together as one dword:
// slab dword [j][r] = w[r][2j], w[r][2j+1] (the BF16 kernel's layout).
TEXT ·packSlabPairsAVX512(SB), NOSPLIT, $0-32
	SLAB_SETUP
pairsloop:
	SLAB_GATHER
	VMOVDQU32 Z0, (DI)
	VMOVDQU32 Z1, 64(DI)
	ADDQ $4, SI
	ADDQ $4, BX
	ADDQ $128, DI
	DECQ CX
	JNZ pairsloop
	VZEROUPPER
	RET
