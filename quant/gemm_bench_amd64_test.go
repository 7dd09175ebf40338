//go:build !purego

package quant

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/smolgo/smolgo/gguf"
)

// BenchmarkGEMM compares the prefill kernels on a batch of a prefill's
// size: "x4" is one weight row × 4 tokens (dot_*_amd64.s), "gemm" the
// 16-row × 4-token panels of gemm_amd64.go, panel unpacking included. Rates
// count the weights once per token (as if streamed per token), so they
// compare with MatVec's; tok/s is tokens per second of one core for a
// 2048×2048 matrix, like a 3B model's attention projections.
//
//	go test -run '^$' -bench GEMM ./quant/
func BenchmarkGEMM(b *testing.B) {
	if detectLevel() < levelAVX512 {
		b.Skip("no AVX-512 VNNI")
	}
	ks := newKernelSet(levelAVX512)
	const n, rows = 2048, 256
	variants := []struct {
		t    gguf.Type
		name string
		mm   MatMulFunc
	}{
		{gguf.TypeQ4_K, "x4", matMulBy4(gguf.TypeQ4_K, matQ4KAVX512x4, ks.matVecs[gguf.TypeQ4_K])},
		{gguf.TypeQ4_K, "gemm", ks.matMuls[gguf.TypeQ4_K]},
		{gguf.TypeQ6_K, "x4", matMulBy4(gguf.TypeQ6_K, matQ6KAVX512x4, ks.matVecs[gguf.TypeQ6_K])},
		{gguf.TypeQ6_K, "gemm", ks.matMuls[gguf.TypeQ6_K]},
	}
	for _, v := range variants {
		rng := rand.New(rand.NewPCG(15, 16))
		w := makeWeights(rng, v.t, n*rows, fillRandom)
		rb, _ := v.t.RowBytes(n)
		vt, _ := VecDotType(v.t)
		for _, ntok := range []int{64, 512} {
			a := make([]byte, 0, 0)
			for range ntok {
				a = append(a, makeActs(b, rng, vt, n, fillRandom)...)
			}
			out := make([]float32, rows*ntok)
			b.Run(fmt.Sprintf("%v/%s/tok=%d", v.t, v.name, ntok), func(b *testing.B) {
				bytes := int64(rows * rb * ntok)
				b.SetBytes(bytes)
				done := cpuRate(b, bytes)
				for b.Loop() {
					v.mm(n, w, rows, a, ntok, out, rows)
				}
				b.ReportMetric(float64(b.N*ntok)*float64(rows)/float64(n)/b.Elapsed().Seconds(), "tok/s")
				done()
			})
		}
	}
}
