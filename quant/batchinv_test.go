package quant

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/smolgo/smolgo/gguf"
)

// smallBatch is the largest number of tokens for which MatMul promises the
// same bits per token as MatVec: below the GEMM threshold (24 tokens) every
// kernel computes each token's row as MatVec does, so a decode token's
// result does not depend on how many other tokens share its product. Package
// llama relies on it to batch sequences without changing their logits.
const smallBatch = 23

// notBatchInvariant names the kernels whose MatMul sums in another order
// than their MatVec even below the GEMM threshold: AVX-512 q8_0 rows of an
// odd number of blocks (the four-token kernel is then the AVX2 one). Their
// results differ in the last bits.
func notBatchInvariant(level isaLevel, wt gguf.Type, n int) bool {
	return level == levelAVX512 && wt == gguf.TypeQ8_0 && n/32%2 == 1
}

// TestMatMulSmallBatchesMatchMatVec checks that, at every dispatch level and
// for every weight type (but notBatchInvariant), MatMul over 2 to 23 tokens
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
				if notBatchInvariant(level, wt, n) {
					continue
				}
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
