// matmul.cu: weight matrix times activations, out[t][row] = sum_k W[row][k] x[t][k].
//
// Weights are rows of ggml blocks, exactly as in the GGUF file. Activations
// for the quantized types are int8 in blocks of 32 (qa), with a float scale
// (ad) and the scale times the sum of the 32 quants (as) per block: a
// sub-block contributes ad * (a0 * dot(q[0:16], qa[0:16]) + a1 * dot(q[16:32],
// qa[16:32])) + b * as, the dots done four bytes at a time with __dp4a.
// Float weights (f32, f16, bf16) take float32 activations, rounded to the
// weight's type.
//
// Every kernel takes accumulate: 0 writes out, 1 adds to it (the residual
// connections after the attention and feed-forward outputs).
#include "common.cuh"

// ---- GEMV: a few tokens (NT), one warp per weight row --------------------

template <void (*UNPACK)(const u8*, int, Sub&), int NT>
__device__ __forceinline__ void gemv_q(const u8* __restrict__ W, int rowBytes, int K, int M,
                                       const i8* __restrict__ qa, const float* __restrict__ ad,
                                       const float* __restrict__ as, float* __restrict__ out, int ldo,
                                       int accumulate) {
    int lane = threadIdx.x & 31;
    int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (row >= M) return;
    const u8* w = W + (size_t)row * rowBytes;
    int nsub = K >> 5;
    float acc[NT];
#pragma unroll
    for (int t = 0; t < NT; t++) acc[t] = 0;
    for (int sub = lane; sub < nsub; sub += 32) {
        Sub s;
        UNPACK(w, sub, s);
#pragma unroll
        for (int t = 0; t < NT; t++) {
            const int4* a = (const int4*)(qa + (size_t)t * K + 32 * sub);
            int4 x0 = a[0], x1 = a[1];
            int s0 = __dp4a(s.q[0], x0.x, __dp4a(s.q[1], x0.y, __dp4a(s.q[2], x0.z, __dp4a(s.q[3], x0.w, 0))));
            int s1 = __dp4a(s.q[4], x1.x, __dp4a(s.q[5], x1.y, __dp4a(s.q[6], x1.z, __dp4a(s.q[7], x1.w, 0))));
            int ib = t * nsub + sub;
            acc[t] += ad[ib] * (s.a0 * (float)s0 + s.a1 * (float)s1) + s.b * as[ib];
        }
    }
#pragma unroll
    for (int t = 0; t < NT; t++) {
        float v = warp_sum(acc[t]);
        if (lane == 0) {
            float* o = out + (size_t)t * ldo + row;
            *o = accumulate ? *o + v : v;
        }
    }
}

// load_w reads weight i as a float; act rounds an activation to the
// weight's type first, as llama.cpp's CPU dot products do (F16 weights meet
// F16 activations, BF16 meet BF16, F32 meet F32), which keeps the GPU on
// the CPU reference's numbers.
__device__ __forceinline__ float load_w(const float* W, size_t i) { return W[i]; }
__device__ __forceinline__ float act(const float*, float x) { return x; }
__device__ __forceinline__ float load_w(const u16* W, size_t i) { return f16_to_f32(W[i]); }
__device__ __forceinline__ float act(const u16*, float x) { return f16_to_f32(f32_to_f16(x)); }
struct bf16 { u16 h; };
__device__ __forceinline__ float load_w(const bf16* W, size_t i) { return bf16_to_f32(W[i].h); }
// Round to nearest even bfloat16 (ggml's GGML_FP32_TO_BF16; inputs are finite).
__device__ __forceinline__ float act(const bf16*, float x) {
    u32 u = __float_as_uint(x);
    return __uint_as_float((u + 0x7fff + ((u >> 16) & 1)) & 0xffff0000u);
}

template <typename T, int NT>
__device__ __forceinline__ void gemv_f(const T* __restrict__ W, int K, int M, const float* __restrict__ x,
                                       float* __restrict__ out, int ldo, int accumulate) {
    int lane = threadIdx.x & 31;
    int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (row >= M) return;
    size_t base = (size_t)row * K;
    float acc[NT];
#pragma unroll
    for (int t = 0; t < NT; t++) acc[t] = 0;
    for (int k = lane; k < K; k += 32) {
        float w = load_w(W, base + k);
#pragma unroll
        for (int t = 0; t < NT; t++) acc[t] += w * act(W, x[(size_t)t * K + k]);
    }
#pragma unroll
    for (int t = 0; t < NT; t++) {
        float v = warp_sum(acc[t]);
        if (lane == 0) {
            float* o = out + (size_t)t * ldo + row;
            *o = accumulate ? *o + v : v;
        }
    }
}

#define GEMV_Q(NAME, UNPACK, NT)                                                                        \
    extern "C" __global__ void gemv_##NAME##_##NT(                               \
        const u8* W, int rowBytes, int K, int M, const i8* qa, const float* ad, const float* as,       \
        float* out, int ldo, int accumulate) {                                                          \
        gemv_q<UNPACK, NT>(W, rowBytes, K, M, qa, ad, as, out, ldo, accumulate);                        \
    }
#define GEMV_F(NAME, T, NT)                                                                             \
    extern "C" __global__ void gemv_##NAME##_##NT(                               \
        const T* W, int K, int M, const float* x, float* out, int ldo, int accumulate) {                \
        gemv_f<T, NT>(W, K, M, x, out, ldo, accumulate);                                                \
    }
#define GEMV_ALL(M, NAME, X) M(NAME, X, 1) M(NAME, X, 2) M(NAME, X, 4) M(NAME, X, 8)

GEMV_ALL(GEMV_Q, q4_K, unpack_q4_K)
GEMV_ALL(GEMV_Q, q5_K, unpack_q5_K)
GEMV_ALL(GEMV_Q, q6_K, unpack_q6_K)
GEMV_ALL(GEMV_Q, q8_0, unpack_q8_0)
GEMV_ALL(GEMV_F, f32, float)
GEMV_ALL(GEMV_F, f16, u16)
GEMV_ALL(GEMV_F, bf16, bf16)

// ---- GEMM: batches of tokens, tiled --------------------------------------
//
// A block of 256 threads computes a tile of 64 weight rows by 64 tokens,
// each thread 4 rows (tx + 16i) by 4 tokens (ty + 16j). The K dimension goes
// in steps of 128 (four sub-blocks): each thread unpacks one (row,
// sub-block) of weights and copies one (token, sub-block) of activations
// into shared memory, then all multiply from there with __dp4a. This is a
// plain int8 SIMT GEMM, not the tensor cores (mma.sync): correct first; see
// the README for how far it is from llama.cpp's prefill.
#define TM 64
#define TN 64
#define TK_SUB 4
#define TK_INTS (TK_SUB * 8)

template <void (*UNPACK)(const u8*, int, Sub&)>
__device__ __forceinline__ void gemm_q(const u8* __restrict__ W, int rowBytes, int K, int M, int N,
                                       const i8* __restrict__ qa, const float* __restrict__ ad,
                                       const float* __restrict__ as, float* __restrict__ out, int ldo,
                                       int accumulate) {
    __shared__ int sw[TM][TK_INTS + 1];
    __shared__ float swa[TM][2 * TK_SUB], swb[TM][TK_SUB];
    __shared__ int sa[TN][TK_INTS + 1];
    __shared__ float sad[TN][TK_SUB], sas[TN][TK_SUB];

    int tid = threadIdx.x, tx = tid & 15, ty = tid >> 4;
    int row0 = blockIdx.x * TM, tok0 = blockIdx.y * TN;
    int nsub = K >> 5;
    float acc[4][4];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) acc[i][j] = 0;

    int lr = tid >> 2, ls = tid & 3;  // the (row or token, sub-block) this thread loads
    for (int k0 = 0; k0 < nsub; k0 += TK_SUB) {
        int sub = k0 + ls;
        Sub s;
        if (row0 + lr < M && sub < nsub) {
            UNPACK(W + (size_t)(row0 + lr) * rowBytes, sub, s);
        } else {
#pragma unroll
            for (int i = 0; i < 8; i++) s.q[i] = 0;
            s.a0 = s.a1 = s.b = 0;
        }
#pragma unroll
        for (int i = 0; i < 8; i++) sw[lr][8 * ls + i] = s.q[i];
        swa[lr][2 * ls] = s.a0;
        swa[lr][2 * ls + 1] = s.a1;
        swb[lr][ls] = s.b;
        int tok = tok0 + lr;
        if (tok < N && sub < nsub) {
            const int4* a = (const int4*)(qa + (size_t)tok * K + 32 * sub);
            int4 x0 = a[0], x1 = a[1];
            int* d = &sa[lr][8 * ls];
            d[0] = x0.x; d[1] = x0.y; d[2] = x0.z; d[3] = x0.w;
            d[4] = x1.x; d[5] = x1.y; d[6] = x1.z; d[7] = x1.w;
            sad[lr][ls] = ad[(size_t)tok * nsub + sub];
            sas[lr][ls] = as[(size_t)tok * nsub + sub];
        } else {
#pragma unroll
            for (int i = 0; i < 8; i++) sa[lr][8 * ls + i] = 0;
            sad[lr][ls] = sas[lr][ls] = 0;
        }
        __syncthreads();
#pragma unroll
        for (int sb = 0; sb < TK_SUB; sb++) {
#pragma unroll
            for (int h = 0; h < 2; h++) {
                int wq[4][4], aq[4][4];
#pragma unroll
                for (int i = 0; i < 4; i++)
#pragma unroll
                    for (int u = 0; u < 4; u++) {
                        wq[i][u] = sw[tx + 16 * i][8 * sb + 4 * h + u];
                        aq[i][u] = sa[ty + 16 * i][8 * sb + 4 * h + u];
                    }
#pragma unroll
                for (int i = 0; i < 4; i++)
#pragma unroll
                    for (int j = 0; j < 4; j++) {
                        int si = __dp4a(wq[i][0], aq[j][0], __dp4a(wq[i][1], aq[j][1],
                                 __dp4a(wq[i][2], aq[j][2], __dp4a(wq[i][3], aq[j][3], 0))));
                        acc[i][j] += swa[tx + 16 * i][2 * sb + h] * sad[ty + 16 * j][sb] * (float)si;
                    }
            }
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < 4; j++) acc[i][j] += swb[tx + 16 * i][sb] * sas[ty + 16 * j][sb];
        }
        __syncthreads();
    }
#pragma unroll
    for (int j = 0; j < 4; j++) {
        int tok = tok0 + ty + 16 * j;
        if (tok >= N) continue;
#pragma unroll
        for (int i = 0; i < 4; i++) {
            int row = row0 + tx + 16 * i;
            if (row >= M) continue;
            float* o = out + (size_t)tok * ldo + row;
            *o = accumulate ? *o + acc[i][j] : acc[i][j];
        }
    }
}

#define GEMM_Q(NAME, UNPACK)                                                                            \
    extern "C" __global__ void __launch_bounds__(256) gemm_##NAME(                                      \
        const u8* W, int rowBytes, int K, int M, int N, const i8* qa, const float* ad, const float* as, \
        float* out, int ldo, int accumulate) {                                                          \
        gemm_q<UNPACK>(W, rowBytes, K, M, N, qa, ad, as, out, ldo, accumulate);                         \
    }

GEMM_Q(q4_K, unpack_q4_K)
GEMM_Q(q5_K, unpack_q5_K)
GEMM_Q(q6_K, unpack_q6_K)
GEMM_Q(q8_0, unpack_q8_0)
