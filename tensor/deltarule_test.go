package tensor

import (
	"math"
	"math/rand/v2"
	"testing"
)

// DeltaRule's assembly gives its Go twin's bits, and both compute the
// delta rule: checked against the update written out in float64.
func TestDeltaRule(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{8, 32, 40, 64, 128} {
		s := make([]float32, n*n)
		for i := range s {
			s[i] = float32(r.NormFloat64() * 0.3)
		}
		vec := func() []float32 {
			x := make([]float32, n)
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
			return x
		}
		q, k, v := vec(), vec(), vec()
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

		goS, goOut := append([]float32(nil), s...), make([]float32, n)
		deltaRuleGo(goS, q, k, v, goOut, decay, beta, scale)
		for j := range n {
			if d := math.Abs(float64(goOut[j]) - wantOut[j]); d > 1e-4*(1+math.Abs(wantOut[j])) {
				t.Fatalf("n=%d: out[%d] = %v, float64 says %v", n, j, goOut[j], wantOut[j])
			}
		}
		for i := range goS {
			if d := math.Abs(float64(goS[i]) - want[i]); d > 1e-5*(1+math.Abs(want[i])) {
				t.Fatalf("n=%d: state[%d] = %v, float64 says %v", n, i, goS[i], want[i])
			}
		}
		if !haveAttnKernels {
			continue
		}
		asmS, asmOut := append([]float32(nil), s...), make([]float32, n)
		deltaRule(asmS, q, k, v, asmOut, decay, beta, scale, true)
		for i := range asmS {
			if math.Float32bits(asmS[i]) != math.Float32bits(goS[i]) {
				t.Fatalf("n=%d: assembly state[%d] = %v, Go twin %v", n, i, asmS[i], goS[i])
			}
		}
		for j := range asmOut {
			if math.Float32bits(asmOut[j]) != math.Float32bits(goOut[j]) {
				t.Fatalf("n=%d: assembly out[%d] = %v, Go twin %v", n, j, asmOut[j], goOut[j])
			}
		}
	}
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

func BenchmarkDeltaRule128(b *testing.B) {
	const n = 128
	s, q, k, v, out := make([]float32, n*n), make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range k {
		q[i], k[i], v[i] = 0.01*float32(i), 0.02, 0.5
	}
	b.SetBytes(n * n * 4)
	for b.Loop() {
		DeltaRule(s, q, k, v, out, 0.99, 0.5, 0.088)
	}
}
