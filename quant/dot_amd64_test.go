//go:build gc && !purego

package quant

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/smolgo/smolgo/gguf"
)

// TestAVX512GFNIVariants checks both AVX-512 kernels of q4_K and q6_K
// against the Go twin, whichever of them this CPU's dispatch picks
// (TestKernelVariants covers only that one): the plain ones, and the GFNI
// ones where the CPU has GFNI.
func TestAVX512GFNIVariants(t *testing.T) {
	if detectLevel() < levelAVX512 {
		t.Skip("no AVX-512 on this CPU")
	}
	tests := []struct {
		name string
		wt   gguf.Type
		kern mvKernel
		gfni bool
	}{
		{"q4_K/plain", gguf.TypeQ4_K, mvQ4KAVX512, false},
		{"q4_K/gfni", gguf.TypeQ4_K, mvQ4KAVX512GFNI, true},
		{"q6_K/plain", gguf.TypeQ6_K, mvQ6KAVX512, false},
		{"q6_K/gfni", gguf.TypeQ6_K, mvQ6KAVX512GFNI, true},
	}
	const n, rows = 1024, 5
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.gfni && !hasGFNI() {
				t.Skip("no GFNI on this CPU")
			}
			twin := genericDots[tt.wt]
			rb, _ := tt.wt.RowBytes(n)
			mv := asmMatVec(tt.wt, tt.kern)
			rng := rand.New(rand.NewPCG(5, 6))
			for _, f := range allFills {
				w := makeWeights(rng, tt.wt, n*rows, f)
				a := makeActs(t, rng, gguf.TypeQ8_K, n, f)
				got := make([]float32, rows)
				mv(n, w, a, got)
				for r := range rows {
					wr := w[r*rb : (r+1)*rb]
					want := twin(n, wr, a)
					_, mag := refDot(t, tt.wt, gguf.TypeQ8_K, n, wr, a)
					if f == fillExact && got[r] != want || math.Abs(float64(got[r]-want)) > 3e-6*mag {
						t.Errorf("%v row %d: got %g, Go twin %g (magnitude %g)", f, r, got[r], want, mag)
					}
				}
			}
		})
	}
}

// TestWideMatMulMatchesMatVec checks the AVX-512 four-token f16 and bf16
// MatMul bit for bit against MatVec at lengths of an even and an odd number
// of 32-value blocks (the odd one takes the kernels' tail) and one that is
// not whole blocks (MatMul then goes row by row), for 1 to 9 tokens.
func TestWideMatMulMatchesMatVec(t *testing.T) {
	if detectLevel() < levelAVX512 {
		t.Skip("no AVX-512 on this CPU")
	}
	ks := newKernelSet(levelAVX512)
	for _, wt := range []gguf.Type{gguf.TypeF16, gguf.TypeBF16} {
		mv, _ := ks.matVec(wt)
		mm, _ := ks.matMul(wt)
		rng := rand.New(rand.NewPCG(17, uint64(wt)))
		for _, n := range []int{32, 96, 1024, 1056, 1000} {
			const nrows, maxTok = 7, 9
			w := makeWeights(rng, wt, n*nrows, fillRandom)
			var a []byte
			for range maxTok {
				a = append(a, makeActs(t, rng, wt, n, fillRandom)...)
			}
			ab := 2 * n
			want := make([]float32, maxTok*nrows)
			for tok := range maxTok {
				mv(n, w, a[tok*ab:(tok+1)*ab], want[tok*nrows:(tok+1)*nrows])
			}
			for ntok := 1; ntok <= maxTok; ntok++ {
				got := make([]float32, ntok*nrows)
				mm(n, w, nrows, a, ntok, got, nrows)
				for i, g := range got {
					if math.Float32bits(g) != math.Float32bits(want[i]) {
						t.Errorf("%v n=%d, %d tokens: token %d row %d: MatMul %g, MatVec %g", wt, n, ntok, i/nrows, i%nrows, g, want[i])
						break
					}
				}
			}
		}
	}
}
