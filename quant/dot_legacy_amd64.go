//go:build gc && !purego

package quant

import "github.com/smolgo/smolgo/gguf"

// The 32-quant types q4_0, q4_1, q5_0, q5_1 and mxfp4, and q8_0 with
// AVX-512 (dot_legacy_avx2_amd64.s, dot_legacy_avx512_amd64.s, written by
// gen_legacy.go; the batched GEMMs are in gemm_legacy_amd64.go). q8_0's
// AVX2 kernels are dot_avx2_amd64.s's: VPMADDUBSW would saturate on its
// quants plus 128.
//
// llama.cpp's K-quant mixes store a tensor whose rows are not a multiple of
// 256 in a legacy type instead (q4_K → q5_0, q5_K → q5_1, q6_K → q8_0):
// Gemma 3's width of 1152 and 640 and Qwen2.5-0.5B's of 896 put most of
// those models' matrices in q5_0. Q4_0 files (Gemma 3's QAT releases among
// them) are q4_0 throughout. gpt-oss ships its experts in mxfp4: q4_0's
// layout with an E8M0 scale byte instead of the f16 and the nibbles
// indexing the E2M1 values (doubled, -12..12), which VPSHUFB looks up; the
// mv kernels and the GEMM panels take them plus 12, unsigned, and take
// 12·Σy back as q4_0's take 8·Σy.
//
// Unlike the other kernels, which keep eight float lanes per row and
// reduce them at the end, these give the Go twin's bits on every input:
// each block's integer sum is reduced to one lane (of a row in the mv
// kernels, which run four or eight rows at a time, and in the GEMMs; of a
// token in the x kernels), then scaled and added to that lane's sum with
// the twin's float operations in the twin's order (d_w·d_a, exact, times
// the sum, plus m·s_a, exact, for q4_1 and q5_1; no fused multiply-add).
// The reduction is cheap when four or eight lanes share it, about what the
// usual per-block broadcast of the scales costs. So MatVec, Dot and MatMul
// of any batch agree bit for bit, at every level. docs/legacy-kernels.md
// has the measurements.

//go:noescape
func mvQ4_0AVX2(w, a []byte, nb, nrows int, out []float32) float32

//go:noescape
func mvQ4_1AVX2(w, a []byte, nb, nrows int, out []float32) float32

//go:noescape
func mvQ5_0AVX2(w, a []byte, nb, nrows int, out []float32) float32

//go:noescape
func mvQ5_1AVX2(w, a []byte, nb, nrows int, out []float32) float32

//go:noescape
func mvMXFP4AVX2(w, a []byte, nb, nrows int, out []float32) float32

//go:noescape
func matMXFP4AVX2x4(w, a []byte, astride, nb int, out *float32, ostride int)

//go:noescape
func matMXFP4AVX2x2(w, a []byte, astride, nb int, out *float32, ostride int)

//go:noescape
func mvMXFP4AVX512(w, a []byte, nb, nrows int, out []float32) float32

//go:noescape
func matQ4_0AVX2x4(w, a []byte, astride, nb int, out *float32, ostride int)

//go:noescape
func matQ4_1AVX2x4(w, a []byte, astride, nb int, out *float32, ostride int)

//go:noescape
func matQ5_0AVX2x4(w, a []byte, astride, nb int, out *float32, ostride int)

//go:noescape
func matQ5_1AVX2x4(w, a []byte, astride, nb int, out *float32, ostride int)

//go:noescape
func matQ4_0AVX2x2(w, a []byte, astride, nb int, out *float32, ostride int)

//go:noescape
func matQ4_1AVX2x2(w, a []byte, astride, nb int, out *float32, ostride int)

//go:noescape
func matQ5_0AVX2x2(w, a []byte, astride, nb int, out *float32, ostride int)

//go:noescape
func matQ5_1AVX2x2(w, a []byte, astride, nb int, out *float32, ostride int)

//go:noescape
func mvQ4_0AVX512(w, a []byte, nb, nrows int, out []float32) float32

//go:noescape
func mvQ8_0AVX512(w, a []byte, nb, nrows int, out []float32) float32

//go:noescape
func mvQ4_1AVX512(w, a []byte, nb, nrows int, out []float32) float32

//go:noescape
func mvQ5_0AVX512(w, a []byte, nb, nrows int, out []float32) float32

//go:noescape
func mvQ5_1AVX512(w, a []byte, nb, nrows int, out []float32) float32

// legacyKernels are one level's kernels of one legacy type: the mv kernel,
// and one weight row times 4 and 2 tokens (AVX2 only: the AVX-512 mv kernel
// takes eight rows at a time and is faster per token than one-row x kernels
// were, 37 cpu-GB/s against 31 and 20 for q5_0; batches go to the GEMMs).
type legacyKernels struct {
	mv     mvKernel
	x4, x2 x4Kernel
}

// legacyKernelSet returns the kernels of level (nil below AVX2).
func legacyKernelSet(level isaLevel) map[gguf.Type]legacyKernels {
	switch {
	case level >= levelAVX512:
		return map[gguf.Type]legacyKernels{
			gguf.TypeQ4_0:  {mv: mvQ4_0AVX512},
			gguf.TypeQ4_1:  {mv: mvQ4_1AVX512},
			gguf.TypeQ5_0:  {mv: mvQ5_0AVX512},
			gguf.TypeQ5_1:  {mv: mvQ5_1AVX512},
			gguf.TypeQ8_0:  {mv: mvQ8_0AVX512},
			gguf.TypeMXFP4: {mv: mvMXFP4AVX512},
		}
	case level >= levelAVX2:
		return map[gguf.Type]legacyKernels{
			gguf.TypeQ4_0:  {mvQ4_0AVX2, matQ4_0AVX2x4, matQ4_0AVX2x2},
			gguf.TypeQ4_1:  {mvQ4_1AVX2, matQ4_1AVX2x4, matQ4_1AVX2x2},
			gguf.TypeQ5_0:  {mvQ5_0AVX2, matQ5_0AVX2x4, matQ5_0AVX2x2},
			gguf.TypeQ5_1:  {mvQ5_1AVX2, matQ5_1AVX2x4, matQ5_1AVX2x2},
			gguf.TypeMXFP4: {mvMXFP4AVX2, matMXFP4AVX2x4, matMXFP4AVX2x2},
		}
	}
	return nil
}

// addLegacyKernels installs the legacy types' kernels of level into k.
// MatMul goes to the GEMM of level (gemm_legacy_amd64.go) for matrices of a
// panel's rows or more, with AVX-512 to the AVX2 GEMM for 8 to 15 rows,
// and below that to the x4 and x2 kernels (AVX2) or MatVec (AVX-512).
func addLegacyKernels(k *kernelSet, level isaLevel) {
	for t, ks := range legacyKernelSet(level) {
		k.dots[t] = asmDot(t, ks.mv)
		k.matVecs[t] = asmMatVec(t, ks.mv)
		small := matMulByRows(t, k.matVecs[t])
		if ks.x4 != nil {
			small = matMulBy4(t, ks.x4, ks.x2, k.matVecs[t])
		}
		mm := small
		if gm, ok := legGemmSet(levelAVX2)[t]; ok { // not q8_0
			mm = matMulLegacyGEMM(t, gm, mm)
		}
		if level >= levelAVX512 {
			mm = matMulLegacyGEMM(t, legGemmSet(levelAVX512)[t], mm)
		}
		k.matMuls[t] = mm
	}
}
