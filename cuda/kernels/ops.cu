// ops.cu: the element-wise and per-row steps of a llama block, in package
// llama's order and float32 rounding (tensor.RMSNorm, tensor.SwiGLU,
// rope.Config.Rotate), and the rounding of activations to int8 blocks for
// matmul.cu.
#include "common.cuh"

// rmsnorm: out[i] = x[r] * (1/sqrt(mean(x[r]^2) + eps)) * w for row r =
// rows[i] (or i when rows is null), one block of 256 threads per row. The
// squares are rounded to float32 and summed in float64, as tensor.RMSNorm.
extern "C" __global__ void __launch_bounds__(256) rmsnorm(const float* __restrict__ x, const int* __restrict__ rows,
                                                          const float* __restrict__ w, float* __restrict__ out, int n,
                                                          float eps) {
    __shared__ double part[8];
    __shared__ float scale;
    int r = rows ? rows[blockIdx.x] : blockIdx.x;
    const float* xr = x + (size_t)r * n;
    double sum = 0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float v = xr[i];
        sum += (double)__fmul_rn(v, v);
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffff, sum, o);
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = sum;
    __syncthreads();
    if (threadIdx.x == 0) {
        double s = 0;
        for (int i = 0; i < (blockDim.x >> 5); i++) s += part[i];
        float mean = (float)(s / n);
        scale = __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(mean, eps)));
    }
    __syncthreads();
    float* o = out + (size_t)blockIdx.x * n;
    for (int i = threadIdx.x; i < n; i += blockDim.x) o[i] = __fmul_rn(__fmul_rn(xr[i], scale), w[i]);
}

// quantize_q8: x (nblocks blocks of 32 floats, back to back) to int8 quants
// qa with scale ad = max|x|/127 and as = ad * sum(quants) per block, one
// warp per block (the rounding of ggml's quantize_row_q8_1).
extern "C" __global__ void __launch_bounds__(256) quantize_q8(const float* __restrict__ x, i8* __restrict__ qa,
                                                              float* __restrict__ ad, float* __restrict__ as,
                                                              int nblocks) {
    int b = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (b >= nblocks) return;
    float v = x[(size_t)b * 32 + lane];
    float amax = warp_max(fabsf(v));
    float d = amax / 127.0f;
    int q = d == 0.0f ? 0 : (int)roundf(v / d);
    float sum = warp_sum((float)q);
    qa[(size_t)b * 32 + lane] = (i8)q;
    if (lane == 0) {
        ad[b] = d;
        as[b] = d * sum;
    }
}

// swiglu: g[i] = silu(g[i]) * u[i], silu(x) = x / (1 + e^-x).
extern "C" __global__ void __launch_bounds__(256) swiglu(float* __restrict__ g, const float* __restrict__ u, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = g[i];
    g[i] = __fmul_rn(__fdiv_rn(x, __fadd_rn(1.0f, expf(-x))), u[i]);
}

// rope rotates the first 2*half dimensions of every head of ntok rows of x
// (row stride ld, heads of hd floats) by the angles of each row's position:
// cos and sin hold half values per row, from rope.Config.Angles on the
// host. neox pairs dimension i with i+half; otherwise 2i with 2i+1.
extern "C" __global__ void __launch_bounds__(256) rope(float* __restrict__ x, const float* __restrict__ cosv,
                                                       const float* __restrict__ sinv, int ntok, int heads, int hd,
                                                       int ld, int half, int neox) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= ntok * heads * half) return;
    int i = idx % half, h = (idx / half) % heads, t = idx / (half * heads);
    float c = cosv[t * half + i], s = sinv[t * half + i];
    float* p = x + (size_t)t * ld + h * hd;
    int i0 = neox ? i : 2 * i, i1 = neox ? i + half : 2 * i + 1;
    float x0 = p[i0], x1 = p[i1];
    p[i0] = __fsub_rn(__fmul_rn(x0, c), __fmul_rn(x1, s));
    p[i1] = __fadd_rn(__fmul_rn(x0, s), __fmul_rn(x1, c));
}

// kv_append rounds n floats of new keys and values to float16 into the
// cache rows at dk and dv.
extern "C" __global__ void __launch_bounds__(256) kv_append(const float* __restrict__ k, const float* __restrict__ v,
                                                            u16* __restrict__ dk, u16* __restrict__ dv, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    dk[i] = f32_to_f16(k[i]);
    dv[i] = f32_to_f16(v[i]);
}
