package quant

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/smolgo/smolgo/gguf"
)

// TestMatMulBatches checks MatMul on prefill-sized batches, where the GEMM
// kernels (16 rows × 4 tokens from unpacked panels) take over, against Dot
// row by row, at every dispatch level: shapes with whole panels and
// leftovers of rows and tokens, every kind of block fill, and bit-identical
// results on the exact blocks.
func TestMatMulBatches(t *testing.T) {
	types := []gguf.Type{gguf.TypeQ4_K, gguf.TypeQ6_K, gguf.TypeQ5_K, gguf.TypeQ8_0, gguf.TypeQ4_0}
	shapes := []struct{ n, nrows, ntok, ldo int }{
		{256, 16, 24, 16},
		{512, 37, 31, 41},
		{768, 48, 26, 48},
		{512, 20, 9, 20}, // too few tokens: the x4 kernels
	}
	for _, level := range supportedLevels() {
		ks := newKernelSet(level)
		rng := rand.New(rand.NewPCG(7, uint64(level)))
		for _, wt := range types {
			vt, _ := VecDotType(wt)
			dot, _ := ks.dot(wt)
			mm, _ := ks.matMul(wt)
			for _, sh := range shapes {
				for _, f := range allFills {
					name := fmt.Sprintf("%v/%v/n=%d/%dx%d/%v", level, wt, sh.n, sh.nrows, sh.ntok, f)
					rb, _ := wt.RowBytes(sh.n)
					ab, _ := vt.RowBytes(sh.n)
					w := makeWeights(rng, wt, sh.n*sh.nrows, f)
					a := make([]byte, 0, ab*sh.ntok)
					for range sh.ntok {
						a = append(a, makeActs(t, rng, vt, sh.n, f)...)
					}
					out := make([]float32, (sh.ntok-1)*sh.ldo+sh.nrows)
					for i := range out {
						out[i] = float32(math.NaN())
					}
					mm(sh.n, w, sh.nrows, a, sh.ntok, out, sh.ldo)
					bad := 0
					for tok := range sh.ntok {
						for r := range sh.nrows {
							wr, ar := w[r*rb:(r+1)*rb], a[tok*ab:(tok+1)*ab]
							got, want := out[tok*sh.ldo+r], dot(sh.n, wr, ar)
							ok := got == want
							if f != fillExact || wt.BlockSize() == 1 {
								_, mag := refDot(t, wt, vt, sh.n, wr, ar)
								ok = math.Abs(float64(got)-float64(want)) <= 3e-6*mag+1e-30 &&
									math.IsNaN(float64(got)) == math.IsNaN(float64(want))
							}
							if !ok && bad < 5 {
								bad++
								t.Errorf("%s: tok %d row %d: got %g, Dot %g", name, tok, r, got, want)
							}
						}
					}
				}
			}
		}
	}
}
