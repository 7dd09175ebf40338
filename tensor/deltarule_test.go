package tensor

import (
	"math"
	"math/rand/v2"
	"testing"
)

// DeltaRule computes the delta rule: checked against the update written
// out in float64.
func TestDeltaRule(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{8, 32, 40, 64, 128} {
		s := randomFloats(r, n*n, 0.3)
		q, k, v := randomFloats(r, n, 1), randomFloats(r, n, 1), randomFloats(r, n, 1)
		decay, beta, scale := float32(0.87), float32(0.6), 1/float32(math.Sqrt(float64(n)))

		// The float64 reference, with S[i][j] = s[j*n+i].
		want := make([]float64, n*n)
		for i, x := range s {
			want[i] = float64(x) * float64(decay)
		}
		wantOut := make([]float64, n)
		for j := range n {
			var sk float64
			for i := range n {
				sk += want[j*n+i] * float64(k[i])
			}
			d := float64(beta) * (float64(v[j]) - sk)
			var sq float64
			for i := range n {
				want[j*n+i] += float64(k[i]) * d
				sq += want[j*n+i] * float64(q[i])
			}
			wantOut[j] = float64(scale) * sq
		}
		out := make([]float32, n)
		DeltaRule(s, q, k, v, out, decay, beta, scale)
		for j := range n {
			if d := math.Abs(float64(out[j]) - wantOut[j]); d > 1e-4*(1+math.Abs(wantOut[j])) {
				t.Fatalf("n=%d: out[%d] = %v, float64 says %v", n, j, out[j], wantOut[j])
			}
		}
		for i := range s {
			if d := math.Abs(float64(s[i]) - want[i]); d > 1e-5*(1+math.Abs(want[i])) {
				t.Fatalf("n=%d: state[%d] = %v, float64 says %v", n, i, s[i], want[i])
			}
		}
	}
}

// DeltaRuleTokens gives the bits of one DeltaRule call per token, with
// every kernel (the assembly ones where the CPU has them), strided inputs
// and outputs included.
func TestDeltaRuleTokens(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{8, 32, 40, 128} {
		for _, ntok := range []int{1, 2, 7} {
			stride, ostride, gstride := 3*n+5, 2*n, 3
			s0 := randomFloats(r, n*n, 0.3)
			q, k, v := randomFloats(r, ntok*stride, 1), randomFloats(r, ntok*stride, 1), randomFloats(r, ntok*stride, 1)
			decay, beta := make([]float32, ntok*gstride), make([]float32, ntok*gstride)
			for i := range decay {
				decay[i], beta[i] = float32(0.5+0.5*r.Float64()), float32(r.Float64())
			}
			scale := 1 / float32(math.Sqrt(float64(n)))

			// One token at a time through the Go twin.
			want, wantOut := append([]float32(nil), s0...), make([]float32, ntok*ostride)
			for tk := range ntok {
				deltaTokensGo(want, q[tk*stride:tk*stride+n], k[tk*stride:tk*stride+n], v[tk*stride:tk*stride+n], wantOut[tk*ostride:tk*ostride+n],
					n, n, decay[tk*gstride:tk*gstride+1], beta[tk*gstride:tk*gstride+1], 1, 1, scale)
			}
			for _, kernel := range []struct {
				name string
				id   int
				have bool
			}{{"Go", deltaGo, true}, {"AVX2", deltaAVX2, haveAttnKernels}, {"AVX-512", deltaAVX512, attnAVX512}} {
				if !kernel.have {
					continue
				}
				got, out := append([]float32(nil), s0...), make([]float32, ntok*ostride)
				deltaRuleTokens(got, q, k, v, out, stride, ostride, decay, beta, gstride, ntok, scale, kernel.id)
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("n=%d, %d tokens: %s state[%d] = %v, token by token %v", n, ntok, kernel.name, i, got[i], want[i])
					}
				}
				for i := range out {
					if math.Float32bits(out[i]) != math.Float32bits(wantOut[i]) {
						t.Fatalf("n=%d, %d tokens: %s out[%d] = %v, token by token %v", n, ntok, kernel.name, i, out[i], wantOut[i])
					}
				}
			}
		}
	}
}

func randomFloats(r *rand.Rand, n int, std float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64() * std)
	}
	return x
}

// dotGGML sums in ggml's AVX2 order, which is not the order of a plain
// loop: a vector whose terms cancel only in that grouping tells them apart.
func TestDotGGMLOrder(t *testing.T) {
	a := make([]float32, 32)
	b := make([]float32, 32)
	for i := range b {
		b[i] = 1
	}
	// Lane 0 of chunks 0 and 2 cancel before anything else is added.
	a[0], a[16], a[1] = 1e8, -1e8, 1
	if got := dotGGML(a, b); got != 1 {
		t.Errorf("dotGGML = %v, want 1 ((1e8 + -1e8) + 1)", got)
	}
	// Plain left-to-right order: 1e8 + 1 rounds to 1e8, then -1e8 gives 0.
	var plain float32
	for i := range a {
		plain += a[i] * b[i]
	}
	if plain != 0 {
		t.Fatalf("plain order = %v, the vector does not tell orders apart", plain)
	}
}

// One token of a 128×128 head (Qwen3.5's), and 64 tokens of one.
func BenchmarkDeltaRule128(b *testing.B) {
	for _, ntok := range []int{1, 64} {
		b.Run(map[int]string{1: "token", 64: "64tokens"}[ntok], func(b *testing.B) {
			const n = 128
			s := make([]float32, n*n)
			q, k, v, out := make([]float32, ntok*n), make([]float32, ntok*n), make([]float32, ntok*n), make([]float32, ntok*n)
			decay, beta := make([]float32, ntok), make([]float32, ntok)
			for i := range q {
				q[i], k[i], v[i] = 0.01*float32(i%n), 0.02, 0.5
			}
			for i := range decay {
				decay[i], beta[i] = 0.99, 0.5
			}
			b.SetBytes(int64(ntok * n * n * 4))
			for b.Loop() {
				DeltaRuleTokens(s, q, k, v, out, n, n, decay, beta, 1, ntok, 0.088)
			}
		})
	}
}
