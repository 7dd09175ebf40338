// Shared by attn_amd64.s and attnq8_amd64.s: the accumulator passes of
// decode attention (madSeqF16x64, madSeqQ8x64) keep 64 floats of the
// accumulator at DI in Y0-Y7.

#define ACC64_LOAD \
	VMOVUPS 0(DI), Y0 \
	VMOVUPS 32(DI), Y1 \
	VMOVUPS 64(DI), Y2 \
	VMOVUPS 96(DI), Y3 \
	VMOVUPS 128(DI), Y4 \
	VMOVUPS 160(DI), Y5 \
	VMOVUPS 192(DI), Y6 \
	VMOVUPS 224(DI), Y7

#define ACC64_STORE \
	VMOVUPS Y0, 0(DI) \
	VMOVUPS Y1, 32(DI) \
	VMOVUPS Y2, 64(DI) \
	VMOVUPS Y3, 96(DI) \
	VMOVUPS Y4, 128(DI) \
	VMOVUPS Y5, 160(DI) \
	VMOVUPS Y6, 192(DI) \
	VMOVUPS Y7, 224(DI)
