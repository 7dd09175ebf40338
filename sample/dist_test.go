package sample

import (
	"math"
	"testing"
)

// Probs gives the distribution Sample draws from, for every sampler of the
// chain: the draws' frequencies pass the chi-square test against it, and
// greedy decoding puts all the mass on Sample's pick.
func TestProbsIsWhatSampleDraws(t *testing.T) {
	probs := logitsOf(0.4, 0.25, 0.15, 0.1, 0.06, 0.04)
	for _, cfg := range []Config{
		{Temperature: 1},
		{Temperature: 0.5},
		{Temperature: 1.5, TopK: 4},
		{Temperature: 1, TopP: 0.7},
		{Temperature: 0.7, MinP: 0.3},
		{Temperature: 0.7, TopK: 4, TopP: 0.85, MinP: 0.3},
		SmolLM3Defaults(),
		{Temperature: 1, TopK: 1},
	} {
		t.Run(cfg.String(), func(t *testing.T) {
			s := New(cfg)
			dst := make([]float32, len(probs))
			if !s.Probs(probs, dst) {
				t.Fatal("Probs found no token")
			}
			want := make([]float64, len(dst))
			sum := 0.0
			for i, p := range dst {
				want[i] = float64(p)
				sum += want[i]
			}
			if math.Abs(sum-1) > 1e-5 {
				t.Fatalf("probabilities %v add up to %v", dst, sum)
			}
			checkDistribution(t, cfg, probs, want)
		})
	}
	s := New(Greedy())
	dst := make([]float32, 4)
	s.Probs([]float32{1, 3, 3, 2}, dst)
	if dst[1] != 1 || dst[0]+dst[2]+dst[3] != 0 {
		t.Errorf("greedy Probs %v, want all the mass on token 1 (Sample's pick)", dst)
	}
	if s.Probs([]float32{float32(math.Inf(-1)), float32(math.NaN())}, dst[:2]) {
		t.Errorf("Probs of logits that allow no token: %v, want false", dst[:2])
	}
}

// Probs applies the penalties of the accepted tokens, as Sample does.
func TestProbsPenalties(t *testing.T) {
	cfg := Config{Temperature: 1, RepeatPenalty: 2, PresencePenalty: 0.5}
	logits := []float32{2, 1, 0.5, -1}
	s := New(cfg)
	s.Accept(0)
	s.Accept(3)
	dst := make([]float32, 4)
	s.Probs(logits, dst)
	pen := []float32{2/2.0 - 0.5, 1, 0.5, -1*2 - 0.5}
	want := softmax(pen, 1, nil)
	for i := range want {
		if math.Abs(float64(dst[i])-want[i]) > 1e-6 {
			t.Fatalf("penalized Probs %v, want %v", dst, want)
		}
	}
}

// Draw follows its weights, which need not be normalized; none positive is
// NoToken.
func TestDraw(t *testing.T) {
	s := New(Config{Temperature: 1, Seed: 7})
	w := []float32{0, 3, 1, -2, float32(math.NaN()), 4}
	const n = 40000
	counts := make([]int, len(w))
	for range n {
		id := s.Draw(w)
		if id < 0 {
			t.Fatal("Draw returned NoToken for positive weights")
		}
		counts[id]++
	}
	for _, id := range []int{0, 3, 4} {
		if counts[id] != 0 {
			t.Fatalf("token %d of weight %v drawn %d times", id, w[id], counts[id])
		}
	}
	chi2 := 0.0
	for id, wt := range map[int]float64{1: 3, 2: 1, 5: 4} {
		e := wt / 8 * n
		chi2 += (float64(counts[id]) - e) * (float64(counts[id]) - e) / e
	}
	if chi2 > 13.82 { // 99.9% quantile, 2 degrees of freedom
		t.Errorf("Draw's counts %v against weights %v: chi-square %.2f", counts, w, chi2)
	}
	if id := s.Draw([]float32{0, -1}); id != NoToken {
		t.Errorf("Draw of no positive weight: %d, want NoToken", id)
	}
}

// A sampler whose window was copied penalizes as the original does, also
// once the original's window has wrapped around.
func TestCopyWindow(t *testing.T) {
	cfg := Config{Temperature: 1, RepeatPenalty: 1.5, FrequencyPenalty: 0.3, PenaltyWindow: 4}
	logits := []float32{1, 2, 3, 4, 5, 6}
	src, dst := New(cfg), New(cfg)
	dst.Accept(5)
	for _, n := range []int{0, 2, 4, 7} {
		src = New(cfg)
		for i := range n {
			src.Accept(int32(i % 3))
		}
		dst.CopyWindow(src)
		a, b := make([]float32, 6), make([]float32, 6)
		src.Probs(logits, a)
		dst.Probs(logits, b)
		for i := range a {
			if a[i] != b[i] {
				t.Fatalf("after %d accepted tokens: copied window gives %v, original %v", n, b, a)
			}
		}
	}
}
