// common.cuh: types, float16 conversions and the unpacking of ggml's
// quantized blocks shared by the matrix kernels.
//
// Every quantized weight row is read in sub-blocks of 32 weights. unpack_*
// turns sub-block `sub` of a row into a Sub: the 32 quants as signed bytes
// (packed four to an int for __dp4a) and the affine map that gives the
// weights back, w = a * q + b, with a per half of 16 (Q6_K has a scale per
// 16) and b per 32 (the K-quants' minimum). The block layouts are those of
// package quant (quant/blocks.go), which are ggml's.
#pragma once

typedef unsigned char u8;
typedef signed char i8;
typedef unsigned short u16;
typedef unsigned int u32;

__device__ __forceinline__ float f16_to_f32(u16 h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}

// f32_to_f16 rounds to the nearest binary16, ties to even (ggml's
// GGML_FP32_TO_FP16).
__device__ __forceinline__ u16 f32_to_f16(float f) {
    u16 h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}

__device__ __forceinline__ float bf16_to_f32(u16 h) { return __uint_as_float((u32)h << 16); }

// ld_f16 reads a float16 at a 2-byte aligned address.
__device__ __forceinline__ float ld_f16(const u8* p) { return f16_to_f32(*(const u16*)p); }

// ld_u32_2 reads four bytes at a 2-byte aligned address (Q6_K and Q8_0
// blocks are 210 and 34 bytes long, so their fields are only 2-byte aligned).
__device__ __forceinline__ u32 ld_u32_2(const u8* p) {
    const u16* h = (const u16*)p;
    return (u32)h[0] | ((u32)h[1] << 16);
}

struct Sub {
    int q[8];       // 32 signed quants, four per int, element 4i+k in byte k of q[i]
    float a0, a1;   // scale of elements 0-15 and 16-31
    float b;        // offset per weight (multiplies the activation sum)
};

// scale_min_k4 sets the affine map of sub-block j (0..7) of a Q4_K or Q5_K
// super-block from d, dmin and the 12 scale bytes at blk+4 (ggml's
// get_scale_min_k4): sub-blocks 0-3 keep a 6-bit scale in sc[j] and min in
// sc[j+4]; 4-7 keep their low nibbles in sc[j+4] and top two bits in bits
// 6-7 of sc[j-4] (scale) and sc[j] (min). w = d*scale*q - dmin*min.
__device__ __forceinline__ void scale_min_k4(const u8* blk, int j, Sub& s) {
    float d = ld_f16(blk), dmin = ld_f16(blk + 2);
    const u8* sc = blk + 4;
    int scv, mv;
    if (j < 4) {
        scv = sc[j] & 63;
        mv = sc[j + 4] & 63;
    } else {
        scv = (sc[j + 4] & 0xF) | ((sc[j - 4] >> 6) << 4);
        mv = (sc[j + 4] >> 4) | ((sc[j] >> 6) << 4);
    }
    s.a0 = s.a1 = d * (float)scv;
    s.b = -dmin * (float)mv;
}

// Q4_K, 144 bytes per 256: d f16 | dmin f16 | scales[12] | qs[128].
// Sub-block j of a super-block: chunk j/2 of qs, low nibbles for even j, high
// for odd; scale and min are 6-bit values packed as get_scale_min_k4.
#define Q4K_BYTES 144
__device__ __forceinline__ void unpack_q4_K(const u8* row, int sub, Sub& s) {
    const u8* blk = row + (sub >> 3) * Q4K_BYTES;
    int j = sub & 7;
    const u32* qs = (const u32*)(blk + 16 + 32 * (j >> 1));
    int sh = 4 * (j & 1);
#pragma unroll
    for (int i = 0; i < 8; i++) s.q[i] = (qs[i] >> sh) & 0x0F0F0F0F;
    scale_min_k4(blk, j, s);
}

// Q5_K, 176 bytes per 256: d | dmin | scales[12] | qh[32] | qs[128]; the
// fifth bit of element 32j+l is bit j of qh[l].
#define Q5K_BYTES 176
__device__ __forceinline__ void unpack_q5_K(const u8* row, int sub, Sub& s) {
    const u8* blk = row + (sub >> 3) * Q5K_BYTES;
    int j = sub & 7;
    const u32* qh = (const u32*)(blk + 16);
    const u32* qs = (const u32*)(blk + 48 + 32 * (j >> 1));
    int sh = 4 * (j & 1);
#pragma unroll
    for (int i = 0; i < 8; i++) s.q[i] = ((qs[i] >> sh) & 0x0F0F0F0F) | (((qh[i] >> j) & 0x01010101) << 4);
    scale_min_k4(blk, j, s);
}

// Q6_K, 210 bytes per 256: ql[128] | qh[64] | scales[16] int8 | d f16.
// Sub-block j = 4h+r: low nibbles from ql[64h + 32(r&1) + l] (high nibble
// when r >= 2), two high bits from qh[32h+l] at bit 2r; weight d*sc*(q-32).
#define Q6K_BYTES 210
__device__ __forceinline__ void unpack_q6_K(const u8* row, int sub, Sub& s) {
    const u8* blk = row + (sub >> 3) * Q6K_BYTES;
    int j = sub & 7, h = j >> 2, r = j & 3;
    const u8* ql = blk + 64 * h + 32 * (r & 1);
    const u8* qh = blk + 128 + 32 * h;
    int shl = 4 * (r >> 1), shh = 2 * r;
#pragma unroll
    for (int i = 0; i < 8; i++) {
        u32 v = ((ld_u32_2(ql + 4 * i) >> shl) & 0x0F0F0F0F) | (((ld_u32_2(qh + 4 * i) >> shh) & 0x03030303) << 4);
        s.q[i] = (int)__vsub4(v, 0x20202020);  // bytes 0..63 minus 32: -32..31
    }
    float d = ld_f16(blk + 208);
    const i8* sc = (const i8*)(blk + 192);
    s.a0 = d * (float)sc[2 * j];
    s.a1 = d * (float)sc[2 * j + 1];
    s.b = 0;
}

// Q8_0, 34 bytes per 32: d f16 | qs[32] int8.
#define Q80_BYTES 34
__device__ __forceinline__ void unpack_q8_0(const u8* row, int sub, Sub& s) {
    const u8* blk = row + sub * Q80_BYTES;
#pragma unroll
    for (int i = 0; i < 8; i++) s.q[i] = (int)ld_u32_2(blk + 2 + 4 * i);
    s.a0 = s.a1 = ld_f16(blk);
    s.b = 0;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffff, v, o);
    return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffff, v, o));
    return v;
}
