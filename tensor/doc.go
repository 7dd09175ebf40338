// Package tensor holds the float32 operations of a transformer forward pass
// and the product of a stored (quantized) weight matrix with float32
// activations, computed the way llama.cpp's CPU backend does so that results
// agree to float noise.
//
// The pieces:
//
//   - Pool: a fixed set of worker goroutines, reused by every product; the
//     thread count is chosen once (NewPool(0) = all cores). Work is cut into
//     small chunks taken from a shared counter, so a late or descheduled
//     thread delays a product by one chunk, not by half of it.
//   - Matrix: a weight tensor left in its stored type (often a slice of a
//     memory-mapped GGUF file). Matrix.Mul multiplies it by one activation
//     row (decode) or many (prefill), converting each activation row once to
//     the weight's dot type and sharing the output rows among the pool's
//     threads. MulInto fuses products of one input (a layer's Q, K and V)
//     and MulSwiGLU the feed-forward gate and up projections with their
//     activation, so the threads meet once per fused product. The block
//     dot products themselves live in package quant.
//   - RMSNorm, SwiGLU, Softmax, Add and Expf: element-wise operations with
//     ggml's rounding (RMSNorm sums squares in float64 and adds eps inside the
//     float32 square root; Expf is ggml's vectorized exp polynomial).
//   - The kernels of attention over a KV cache, as llama.cpp's
//     flash-attention kernel computes them: scores of a query against key
//     rows and weighted sums of value rows, in f16 (DotF16, DotsF16, MadF16,
//     MadSeqF16, with an accumulator rounded to float16 like llama.cpp's),
//     in f32 (DotF32, DotsF32x4, AxpyF32, WeightedSumF32) and over Q8_0 rows
//     (QuantizeQ8_0, DotQ8_0, DequantizeQ8_0, MadQ8_0, MadSeqQ8_0), plus the
//     float16 conversions (ToF16, FromF16, RoundF16). Package llama drives
//     them with its online softmax; the sequence kernels (DotsF16,
//     MadSeqF16, MadSeqQ8_0) take a whole block of positions per call so
//     that the accumulator stays in registers.
//   - For encoders (package bert): Packed, F32 and F16 matrices copied into
//     slabs of 32 rows for a register-blocked prefill GEMM (32 rows × 12
//     tokens per micro-kernel call, in AVX-512 or AVX2 form, each weight
//     read once per 12 tokens or per 3), with bias, GELU and a residual
//     added in the same pass;
//     FullAttention, one head of a sequence whose tokens all see each other,
//     on the same micro-kernel; LayerNorm, GELUs and RoundF16s with ggml's
//     rounding.
//
// Every kernel with an assembly version (amd64 with AVX2, FMA and F16C) has
// a pure Go twin that gives the same bits; the assembly's declarations quote
// the Go loop each one computes, and the tests run both. The CPU features
// are read once at start-up (GODEBUG=cpu.avx2=off and the purego build tag
// select the twins); Path names the set in use.
//
// A product needs a Scratch for its buffers; keep one per goroutine (per
// session) and reuse it so that steady-state decoding allocates nothing.
package tensor
