package quant

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// smallBatch is the largest number of tokens for which MatMul promises the
// same bits per token as MatVec: below the GEMM threshold (24 tokens) every
// kernel computes each token's row as MatVec does, so a decode token's
// result does not depend on how many other tokens share its product. Package
// llama relies on it to batch sequences without changing their logits.
const smallBatch = 23

// TestMatMulSmallBatchesMatchMatVec checks that, at every dispatch level and
// for every weight type, MatMul over 2 to 23 tokens
// gives each token exactly (bit for bit) what MatVec gives that token
// alone, wherever it sits among the four-token groups.
func TestMatMulSmallBatchesMatchMatVec(t *testing.T) {
	for _, level := range supportedLevels() {
		ks := newKernelSet(level)
		rng := rand.New(rand.NewPCG(11, uint64(level)))
		for _, wt := range dotTypes {
			vt, _ := VecDotType(wt)
			mv, _ := ks.matVec(wt)
			mm, _ := ks.matMul(wt)
			for _, n := range testLengths(wt)[1:3] {
				for _, f := range []blockFill{fillRandom, fillNegScale} {
					const nrows = 21
					ab, _ := vt.RowBytes(n)
					w := makeWeights(rng, wt, n*nrows, f)
					a := make([]byte, 0, ab*smallBatch)
					for range smallBatch {
						a = append(a, makeActs(t, rng, vt, n, f)...)
					}
					want := make([]float32, smallBatch*nrows)
					for tok := range smallBatch {
						mv(n, w, a[tok*ab:(tok+1)*ab], want[tok*nrows:(tok+1)*nrows])
					}
					for _, ntok := range []int{2, 3, 4, 5, 8, 13, smallBatch} {
						name := fmt.Sprintf("%v/%v/n=%d/%v/%d tokens", level, wt, n, f, ntok)
						got := make([]float32, ntok*nrows)
						mm(n, w, nrows, a, ntok, got, nrows)
						for i, g := range got {
							if math.Float32bits(g) != math.Float32bits(want[i]) {
								t.Errorf("%s: token %d row %d: MatMul %g, MatVec %g", name, i/nrows, i%nrows, g, want[i])
								break
							}
						}
					}
				}
			}
		}
	}
}
