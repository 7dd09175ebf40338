package quant

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/smolgo/smolgo/gguf"
)

// TestInterleavedQ4KTwin checks the Go twin of the interleaved q4_K kernels
// against dotQ4_K on the file's layout: the same integers, scaled per row
// and block, so within a few float32 roundings per block.
func TestInterleavedQ4KTwin(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	for _, f := range []blockFill{fillRandom, fillMax, fillExact, fillNegScale, fillZero} {
		for _, n := range []int{256, 2048} {
			const rows = 16
			w := makeWeights(rng, gguf.TypeQ4_K, rows*n, f)
			a := makeActs(t, rng, gguf.TypeQ8_K, n, f)
			iw := make([]byte, len(w))
			interleaveQ4K(iw, w, rows, n/256)
			got := make([]float32, rows)
			interleavedMatMulGo(n, iw, rows, a, 1, got, rows)
			rb := len(w) / rows
			for r := range rows {
				want := dotQ4_K(n, w[r*rb:(r+1)*rb], a)
				if d := math.Abs(float64(got[r] - want)); d > 1e-5*math.Max(1, math.Abs(float64(want))) {
					t.Errorf("%v n=%d row %d: interleaved %g, file layout %g", f, n, r, got[r], want)
				}
			}
		}
	}
}

// TestInterleavedQ4KKernels checks each CPU kernel over interleaved q4_K
// weights against the Go twin, to the bit, for 1 to 9 tokens (each token
// through the 4-, 2- or 1-token kernel), so a token's result does not
// depend on how many share its call.
func TestInterleavedQ4KKernels(t *testing.T) {
	for _, level := range supportedLevels() {
		mm := newKernelSet(level).interleaved[gguf.TypeQ4_K]
		if mm == nil {
			continue
		}
		t.Run(level.String(), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(43, 44))
			for _, f := range []blockFill{fillRandom, fillMax, fillExact, fillNegScale} {
				for _, n := range []int{256, 2048, 11008 / 256 * 256} {
					const rows = 24
					w := makeWeights(rng, gguf.TypeQ4_K, rows*n, f)
					iw := make([]byte, len(w))
					interleaveQ4K(iw, w, rows, n/256)
					for _, ntok := range []int{1, 2, 3, 4, 5, 7, 9} {
						var a []byte
						for range ntok {
							a = append(a, makeActs(t, rng, gguf.TypeQ8_K, n, f)...)
						}
						const ldo = rows + 3
						got := make([]float32, ntok*ldo)
						want := make([]float32, ntok*ldo)
						mm(n, iw, rows, a, ntok, got, ldo)
						interleavedMatMulGo(n, iw, rows, a, ntok, want, ldo)
						for i := range got {
							if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
								t.Fatalf("%v n=%d ntok=%d: out[%d] = %g, Go twin %g", f, n, ntok, i, got[i], want[i])
							}
						}
					}
				}
			}
		})
	}
}

// BenchmarkInterleavedQ4K compares the interleaved q4_K kernels with the
// file-layout ones on the same weights (cache-resident, one thread), in ns
// per block of one row for 1 and 4 tokens.
func BenchmarkInterleavedQ4K(b *testing.B) {
	const n, rows = 2048, 32
	rng := rand.New(rand.NewPCG(45, 46))
	w := makeWeights(rng, gguf.TypeQ4_K, rows*n, fillRandom)
	iw := make([]byte, len(w))
	interleaveQ4K(iw, w, rows, n/256)
	var a []byte
	for range 4 {
		a = append(a, makeActs(b, rng, gguf.TypeQ8_K, n, fillRandom)...)
	}
	out := make([]float32, 4*rows)
	ks := best
	im := ks.interleaved[gguf.TypeQ4_K]
	if im == nil {
		b.Skip("no interleaved q4_K kernels on this CPU")
	}
	fm := ks.matMuls[gguf.TypeQ4_K]
	for _, ntok := range []int{1, 4} {
		for _, k := range []struct {
			name string
			mm   MatMulFunc
			w    []byte
		}{{"file", fm, w}, {"interleaved", im, iw}} {
			b.Run(fmt.Sprintf("tok=%d/%s", ntok, k.name), func(b *testing.B) {
				for b.Loop() {
					k.mm(n, k.w, rows, a, ntok, out, rows)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(rows*n/256), "ns/blk")
			})
		}
	}
}

// BenchmarkInterleaveQ4K is the cost of rearranging q4_K weights (MB/s of
// weights), which a model pays once at load.
func BenchmarkInterleaveQ4K(b *testing.B) {
	const n, rows = 2048, 512
	rng := rand.New(rand.NewPCG(47, 48))
	w := makeWeights(rng, gguf.TypeQ4_K, rows*n, fillRandom)
	iw := make([]byte, len(w))
	b.SetBytes(int64(len(w)))
	for b.Loop() {
		interleaveQ4K(iw, w, rows, n/256)
	}
}
