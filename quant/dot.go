package quant

import (
	"fmt"

	"github.com/smolgo/smolgo/gguf"
)

// The kernel boundary.
//
// A matrix product W·x in a llama model multiplies a weight matrix kept in its
// stored block format (q4_K, q8_0, f16, ...) by an f32 activation vector. Like
// llama.cpp, this package never widens the weights: it first rounds the
// activation row to the weight type's "vec dot type" (VecDotType,
// QuantizeActivations), then multiplies block by block with integer sums
// (DotFunc). Everything that knows how a weight block type meets an activation
// lives in the files dot*.go, act*.go and the assembly next to them.

// VecDotType returns the type the activations must be converted to before they
// can be multiplied with weights of type w: Q8_K for q2_K..q6_K, Q8_0 for q4_0,
// q5_0, q8_0, iq4_nl and mxfp4, Q8_1 for q4_1 and q5_1, and the weight's own type for
// f32, f16 and bf16. This is llama.cpp's CPU table (type_traits_cpu).
func VecDotType(w gguf.Type) (gguf.Type, error) {
	switch w {
	case gguf.TypeQ2_K, gguf.TypeQ3_K, gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ6_K:
		return gguf.TypeQ8_K, nil
	case gguf.TypeQ4_0, gguf.TypeQ5_0, gguf.TypeQ8_0, gguf.TypeIQ4_NL, gguf.TypeMXFP4:
		return gguf.TypeQ8_0, nil
	case gguf.TypeQ4_1, gguf.TypeQ5_1:
		return gguf.TypeQ8_1, nil
	case gguf.TypeF32, gguf.TypeF16, gguf.TypeBF16:
		return w, nil
	}
	return 0, fmt.Errorf("quant: no dot product for weights of type %v", w)
}

// DotFunc computes the dot product of one weight row and one activation row of
// n elements each. w holds the row in the weight's block format and a the
// activations in the weight type's VecDotType (see QuantizeActivations). Both
// must hold at least the bytes of n elements and n must be a multiple of the
// block size; Dot's callers check shapes once per tensor, so a DotFunc does not
// validate them again and panics (index out of range) on short slices.
//
// The result is llama.cpp's: exact integer sums inside each block, scaled by
// d_weight·d_activation in float32 and accumulated in float32 (the summation
// order may differ between kernels, so results agree to float rounding, not
// bit for bit).
type DotFunc func(n int, w, a []byte) float32

// Dot returns the dot-product kernel for weights of type w, the fastest one
// this CPU supports (see Path). Pick it once per tensor and call it per row.
//
// For one output element of y = W·x with q4_K weights in rows of n:
//
//	at, _ := quant.VecDotType(gguf.TypeQ4_K) // Q8_K
//	ab, _ := at.RowBytes(n)
//	act := make([]byte, ab)
//	_ = quant.QuantizeActivations(at, x, act)
//	dot, _ := quant.Dot(gguf.TypeQ4_K)
//	wb, _ := gguf.TypeQ4_K.RowBytes(n)
//	y[r] = dot(n, w[r*wb:(r+1)*wb], act)
func Dot(w gguf.Type) (DotFunc, error) { return best.dot(w) }

// MatVecFunc computes out[r] = (row r of w) · a for r in [0, len(out)): w holds
// len(out) consecutive weight rows of n elements each (row r starts at byte
// r*RowBytes(n) of the weight type) and a one activation row in the vec dot
// type. Like DotFunc it trusts its caller's shapes.
//
// A thread pool splits a matrix by rows: each worker passes its own slice of
// w and out. Kernels may compute several rows at once, reusing the
// activations held in registers, so a MatVecFunc over many rows is never
// slower than calling the DotFunc per row.
type MatVecFunc func(n int, w, a []byte, out []float32)

// MatVec returns the multi-row kernel for weights of type w.
func MatVec(w gguf.Type) (MatVecFunc, error) { return best.matVec(w) }

// MatMulFunc multiplies nrows weight rows by ntok activation rows (a batch of
// tokens, as in prefill): out[t*ldo+r] = (row r of w) · (row t of a) for
// r < nrows and t < ntok. Weight rows are RowBytes(n) of the weight type
// apart, activation rows RowBytes(n) of the vec dot type apart; out must hold
// at least (ntok-1)*ldo+nrows elements. A thread pool gives each worker a
// range of weight rows (w and out sliced to it, the same ldo). Kernels reuse
// each weight block across several tokens, so the weights are streamed from
// memory about once per call instead of once per token.
//
// Under 24 tokens each token's outputs are bit for bit MatVec's for that
// token alone, so a batch of sequences gets the same numbers as each
// sequence run by itself. From 24 tokens on, the K-quant GEMM sums in
// another order. On amd64 the 32-quant types q4_0, q4_1, q5_0, q5_1, mxfp4
// (and q8_0 with AVX-512) give MatVec's bits for any number of tokens:
// every kernel of theirs computes its Go twin's bits.
type MatMulFunc func(n int, w []byte, nrows int, a []byte, ntok int, out []float32, ldo int)

// MatMul returns the batched kernel for weights of type w.
func MatMul(w gguf.Type) (MatMulFunc, error) { return best.matMul(w) }

// Path names the kernel set in use on this CPU: on amd64 "avx512" (AVX-512
// F, BW and VL with VNNI) or "avx2" (AVX2 with FMA and F16C); on arm64
// "dotprod" (Advanced SIMD with SDOT) or "neon" (Advanced SIMD of ARMv8.0);
// or "generic" (the pure Go reference, which the purego build tag forces and
// other architectures use). The CPU's features are read once, at start-up,
// with golang.org/x/sys/cpu, which honours GODEBUG: GODEBUG=cpu.avx512f=off
// selects the AVX2 kernels, cpu.avx2=off the pure Go ones; on arm64
// cpu.asimddp=off selects the NEON kernels, cpu.asimd=off the pure Go ones.
// Tools such as examples/bench print it.
//
// Assembly kernels exist for these weight types (the others run the pure Go
// code on every path):
//
//	q4_K, q5_K, q6_K, q8_0              MatVec/Dot, and MatMul four tokens at a time
//	                                    (q8_0: AVX2 only, AVX-512 takes the next row)
//	q4_0, q4_1, q5_0, q5_1, mxfp4,      MatVec/Dot (several rows at a time), MatMul
//	q8_0                                two and four tokens at a time and, from two
//	                                    tokens, a GEMM of 8-row (AVX2) or 16-row
//	                                    (AVX-512) panels; all of them bit for bit
//	                                    the Go twin's (dot_legacy_amd64.go; q8_0
//	                                    with AVX-512 only)
//	q2_K, q3_K, f16, bf16, f32          MatVec/Dot (f16/bf16/f32 rows of a multiple of 32);
//	                                    f16 and bf16 MatMul four tokens at a time with
//	                                    AVX-512 (matf16_amd64.go)
//	iq4_nl                              none: pure Go
//
// and for QuantizeActivations to q8_K and q8_0. On arm64 the assembly
// kernels are the q4_K, q5_K, q6_K, q8_0 and q4_0 MatVec/Dot and MatMul
// (four tokens at a time; q8_0 and q4_0 with SMMLA where the CPU has i8mm),
// and the q2_K, q3_K, f16, bf16 and f32 MatVec/Dot; see ARM64.md (q4_1,
// q5_0 and q5_1 run the pure Go code there). With AVX-512, MatMul of
// q4_K, q5_K and q6_K weights by 24 tokens or more (prefill) goes through a
// GEMM that unpacks 16 weight rows at a time into a scratch panel, per call,
// and multiplies them by 8 tokens at once (gemm_amd64.go): about twice the
// four-token kernels' speed.
func Path() string { return best.name }
