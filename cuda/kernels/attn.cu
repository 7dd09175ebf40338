// attn.cu: causal attention of new queries over one sequence's f16 KV cache.
//
// One warp per query row, one block per (group of queries, head, split of
// the positions). The block walks its positions in tiles of 64 keys and
// values copied into shared memory (flash attention's tiling), keeping per
// warp the running maximum m, the running sum l and the unnormalized output
// in registers (online softmax), so memory stays O(tile) at any context.
//
// Prefill runs one split. Decode (few queries) splits the positions over
// many blocks (split-K) so that a long cache keeps the GPU busy; each split
// writes (acc, m, l) to part and attn_combine merges them.
//
// Layout: q rows of ldq floats, head h at h*hd; the cache rows K[p] and V[p]
// hold kvd halves, KV head g at g*hd; query head h reads KV head h/group.
// Query i sits at position pos0+i and sees positions 0..pos0+i.
#include "common.cuh"

#define TILE 64

extern "C" __global__ void __launch_bounds__(256) attn(const float* __restrict__ q, int ldq,
                                                       const u16* __restrict__ K, const u16* __restrict__ V, int kvd,
                                                       int hd, int nq, int pos0, int group, float scale, int chunk,
                                                       float* __restrict__ out, float* __restrict__ part) {
    extern __shared__ float smem[];
    int nw = blockDim.x >> 5, w = threadIdx.x >> 5, lane = threadIdx.x & 31;
    int stride = hd + 2;  // halves per shared row: odd word count, no bank conflicts
    u16* ks = (u16*)smem;
    u16* vs = ks + TILE * stride;
    float* qs = (float*)(vs + TILE * stride);  // nw rows of hd floats

    int h = blockIdx.y, g = h / group, split = blockIdx.z;
    int qi = blockIdx.x * nw + w;
    bool live = qi < nq;
    int last = pos0 + min(qi, nq - 1);  // the last position this warp's query sees
    int start = split * chunk;
    int end = min(start + chunk, pos0 + min((int)(blockIdx.x + 1) * nw, nq));  // block's last position + 1

    for (int d = lane; d < hd; d += 32) qs[w * hd + d] = live ? q[(size_t)qi * ldq + h * hd + d] * scale : 0.0f;

    float m = -INFINITY, l = 0;
    float acc[8];  // dimensions lane + 32i, i < hd/32 <= 8
#pragma unroll
    for (int i = 0; i < 8; i++) acc[i] = 0;

    for (int t0 = start; t0 < end; t0 += TILE) {
        __syncthreads();
        // Copy the tile, two halves per thread per step; rows past end are zeros.
        int pairs = hd >> 1;
        for (int e = threadIdx.x; e < TILE * pairs; e += blockDim.x) {
            int r = e / pairs, c = 2 * (e % pairs), p = t0 + r;
            u32 kk = 0, vv = 0;
            if (p < end) {
                size_t off = (size_t)p * kvd + g * hd + c;
                kk = *(const u32*)(K + off);
                vv = *(const u32*)(V + off);
            }
            *(u32*)(ks + r * stride + c) = kk;
            *(u32*)(vs + r * stride + c) = vv;
        }
        __syncthreads();
        // Scores of keys lane and lane+32.
        float s[2];
#pragma unroll
        for (int u = 0; u < 2; u++) {
            int j = lane + 32 * u, p = t0 + j;
            const u16* kr = ks + j * stride;
            const float* qr = qs + w * hd;
            float dot = 0;
            for (int d = 0; d < hd; d += 2) {
                u32 kk = *(const u32*)(kr + d);
                dot += qr[d] * f16_to_f32((u16)kk) + qr[d + 1] * f16_to_f32((u16)(kk >> 16));
            }
            s[u] = (p <= last && p < end) ? dot : -INFINITY;
        }
        float mt = warp_max(fmaxf(s[0], s[1]));
        float mn = fmaxf(m, mt);
        if (mn == -INFINITY) continue;  // nothing visible yet
        float corr = expf(m - mn);
        float p0 = expf(s[0] - mn), p1 = expf(s[1] - mn);
        l = l * corr + warp_sum(p0 + p1);
        m = mn;
#pragma unroll
        for (int i = 0; i < 8; i++) acc[i] *= corr;
        for (int j = 0; j < TILE; j++) {
            float p = __shfl_sync(0xffffffff, j < 32 ? p0 : p1, j & 31);
            const u16* vr = vs + j * stride;
#pragma unroll
            for (int i = 0; i < 8; i++)
                if (lane + 32 * i < hd) acc[i] += p * f16_to_f32(vr[lane + 32 * i]);
        }
    }
    if (!live) return;
    if (part == nullptr) {
        float inv = l > 0 ? 1.0f / l : 0.0f;
#pragma unroll
        for (int i = 0; i < 8; i++)
            if (lane + 32 * i < hd) out[(size_t)qi * ldq + h * hd + lane + 32 * i] = acc[i] * inv;
        return;
    }
    float* pp = part + (((size_t)qi * gridDim.y + h) * gridDim.z + split) * (hd + 2);
#pragma unroll
    for (int i = 0; i < 8; i++)
        if (lane + 32 * i < hd) pp[lane + 32 * i] = acc[i];
    if (lane == 0) {
        pp[hd] = m;
        pp[hd + 1] = l;
    }
}

// attn_combine merges the splits of attn: out = sum_z acc_z e^(m_z - M) /
// sum_z l_z e^(m_z - M), one block of hd threads per (query, head).
extern "C" __global__ void __launch_bounds__(256) attn_combine(const float* __restrict__ part, int splits, int hd,
                                                               float* __restrict__ out, int ldq) {
    int qi = blockIdx.x, h = blockIdx.y, heads = gridDim.y, d = threadIdx.x;
    const float* pp = part + ((size_t)qi * heads + h) * splits * (hd + 2);
    float M = -INFINITY;
    for (int z = 0; z < splits; z++) M = fmaxf(M, pp[z * (hd + 2) + hd]);
    float L = 0, acc = 0;
    for (int z = 0; z < splits; z++) {
        const float* pz = pp + z * (hd + 2);
        if (pz[hd] == -INFINITY) continue;
        float e = expf(pz[hd] - M);
        L += pz[hd + 1] * e;
        acc += pz[d] * e;
    }
    if (d < hd) out[(size_t)qi * ldq + h * hd + d] = L > 0 ? acc / L : 0.0f;
}
