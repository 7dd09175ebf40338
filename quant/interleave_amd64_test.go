//go:build gc && !purego

package quant

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/smolgo/smolgo/gguf"
)

// ilvVariant is one assembly kernel over interleaved weights: a group of
// rows rows times ntok tokens, on CPUs of level or above.
type ilvVariant struct {
	name       string
	t          gguf.Type
	level      isaLevel
	rows, ntok int
	kernel     x4Kernel
}

func ilvVariants() []ilvVariant {
	var vs []ilvVariant
	for _, k := range []struct {
		t     gguf.Type
		name  string
		level isaLevel
		ks    ilvKernels
	}{
		{gguf.TypeQ4_K, "q4Kx8AVX2", levelAVX2, q4KAVX2},
		{gguf.TypeQ6_K, "q6Kx8AVX2", levelAVX2, q6KAVX2},
		{gguf.TypeQ4_K, "q4Kx16AVX512", levelAVX512, q4KAVX512},
		{gguf.TypeQ6_K, "q6Kx16AVX512", levelAVX512, q6KAVX512},
	} {
		for n, f := range k.ks.k {
			if f != nil {
				vs = append(vs, ilvVariant{fmt.Sprintf("%sx%d", k.name, n+1), k.t, k.level, k.ks.rows, n + 1, f})
			}
		}
	}
	return vs
}

// TestInterleavedKernelVariants calls every assembly kernel over
// interleaved weights on its own (not through the dispatch) and holds each
// output to the Go twin's bits, with every kind of block fill, for lengths
// of one block up to a 3B model's FFN width. Kernels the CPU cannot run are
// skipped, saying why.
func TestInterleavedKernelVariants(t *testing.T) {
	for _, v := range ilvVariants() {
		t.Run(v.name, func(t *testing.T) {
			if detectLevel() < v.level {
				t.Skipf("%s needs the %v level; this CPU (or GODEBUG) gives %v", v.name, v.level, detectLevel())
			}
			rng := rand.New(rand.NewPCG(51, uint64(v.ntok)))
			for _, f := range allFills {
				for _, n := range []int{256, 768, 11008} {
					nb := n / 256
					rows := v.rows
					w := makeWeights(rng, v.t, rows*n, f)
					iw := make([]byte, len(w))
					for _, it := range interleaveTypes {
						if it.t == v.t {
							it.interleave(iw, w, rows, nb, rows)
						}
					}
					var a []byte
					for range v.ntok {
						a = append(a, makeActs(t, rng, gguf.TypeQ8_K, n, f)...)
					}
					const ldo = 19
					got := make([]float32, v.ntok*ldo)
					for i := range got {
						got[i] = float32(math.NaN())
					}
					want := make([]float32, v.ntok*ldo)
					arb := nb * 292
					v.kernel(iw, a, arb, nb, &got[0], 4*ldo)
					interleavedMatMulGo(v.t, rows)(n, iw, rows, a, v.ntok, want, ldo)
					for tok := range v.ntok {
						for r := range rows {
							g, w := got[tok*ldo+r], want[tok*ldo+r]
							if math.Float32bits(g) != math.Float32bits(w) {
								t.Fatalf("%v n=%d: token %d row %d: %g, Go twin %g", f, n, tok, r, g, w)
							}
						}
						for r := rows; r < ldo && tok < v.ntok-1; r++ {
							if !math.IsNaN(float64(got[tok*ldo+r])) {
								t.Fatalf("%v n=%d: token %d: wrote past its %d rows", f, n, tok, rows)
							}
						}
					}
				}
			}
		})
	}
}

// ilvBenchKernels are the interleaved products this CPU runs, by kernel
// family: "avx2" (groups of 8 rows), "avx512" (groups of 16). Neither
// includes the GEMM of larger batches.
func ilvBenchKernels(t gguf.Type) []ilvBench {
	var bs []ilvBench
	avx2, avx512 := q4KAVX2, q4KAVX512
	if t == gguf.TypeQ6_K {
		avx2, avx512 = q6KAVX2, q6KAVX512
	}
	if detectLevel() >= levelAVX2 {
		bs = append(bs, ilvBench{"avx2", avx2.rows, interleavedMatMul(t, avx2)})
	}
	if detectLevel() >= levelAVX512 {
		bs = append(bs, ilvBench{"avx512", avx512.rows, interleavedMatMul(t, avx512)})
	}
	return bs
}
