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
//
// A product needs a Scratch for its buffers; keep one per goroutine (per
// session) and reuse it so that steady-state decoding allocates nothing.
package tensor
