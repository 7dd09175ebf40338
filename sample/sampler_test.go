package sample

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// logitsOf returns logits whose softmax at temperature 1 is probs.
func logitsOf(probs ...float64) []float32 {
	l := make([]float32, len(probs))
	for i, p := range probs {
		l[i] = float32(math.Log(p))
	}
	return l
}

// softmax returns exp(l/T) normalized, with the tokens not in keep set to 0
// (keep nil means every token).
func softmax(l []float32, T float64, keep []int) []float64 {
	p := make([]float64, len(l))
	m := math.Inf(-1)
	for _, v := range l {
		m = max(m, float64(v))
	}
	sum := 0.0
	for i, v := range l {
		if keep != nil && !slices.Contains(keep, i) {
			continue
		}
		p[i] = math.Exp((float64(v) - m) / T)
		sum += p[i]
	}
	for i := range p {
		p[i] /= sum
	}
	return p
}

// checkDistribution draws n tokens and compares their frequencies with want
// by Pearson's chi-square test. Tokens with probability 0 must never be drawn.
// The seed is fixed, so the test is deterministic; the critical value is the
// 99.9% quantile, so a correct sampler passes with any seed but a wrong
// distribution (off by a few percent at these counts) fails.
func checkDistribution(t *testing.T, cfg Config, logits []float32, want []float64) {
	t.Helper()
	if msg := distributionMismatch(cfg, logits, want); msg != "" {
		t.Fatal(msg)
	}
}

// distributionMismatch does the work of checkDistribution and returns what
// is wrong, or "".
func distributionMismatch(cfg Config, logits []float32, want []float64) string {
	const n = 40000
	if cfg.Seed == 0 {
		cfg.Seed = 42
	}
	s := New(cfg)
	counts := make([]int, len(logits))
	for range n {
		id := s.Sample(logits)
		if id < 0 || int(id) >= len(logits) {
			return fmt.Sprintf("Sample returned %d for %d logits", id, len(logits))
		}
		counts[id]++
	}
	chi2, df := 0.0, -1
	for i, p := range want {
		if p == 0 {
			if counts[i] != 0 {
				return fmt.Sprintf("token %d has probability 0 but was drawn %d times (counts %v)", i, counts[i], counts)
			}
			continue
		}
		e := p * n
		chi2 += (float64(counts[i]) - e) * (float64(counts[i]) - e) / e
		df++
	}
	if df <= 0 {
		return "" // a single possible token: the zero checks above are the test
	}
	// 99.9% quantiles of chi-square for df = 1..9.
	crit := []float64{10.83, 13.82, 16.27, 18.47, 20.52, 22.46, 24.32, 26.12, 27.88}[df-1]
	if chi2 > crit {
		return fmt.Sprintf("chi-square %.2f > %.2f (df %d): counts %v, want probabilities %v", chi2, crit, df, counts, want)
	}
	return ""
}

func TestDistributions(t *testing.T) {
	probs := logitsOf(0.4, 0.25, 0.15, 0.1, 0.06, 0.04)
	ramp := []float32{0, 0.5, 1, 1.5, 2, 2.5, 3}
	tests := []struct {
		name   string
		cfg    Config
		logits []float32
		want   []float64
	}{
		{"temperature 1", Config{Temperature: 1}, probs, softmax(probs, 1, nil)},
		{"temperature 0.5 sharpens", Config{Temperature: 0.5}, ramp, softmax(ramp, 0.5, nil)},
		{"temperature 2 flattens", Config{Temperature: 2}, ramp, softmax(ramp, 2, nil)},
		{"top-k 3", Config{Temperature: 1, TopK: 3}, probs, softmax(probs, 1, []int{0, 1, 2})},
		{"top-k 3 unsorted input", Config{Temperature: 1, TopK: 3}, []float32{1, 3, 0, 2.5, 2},
			softmax([]float32{1, 3, 0, 2.5, 2}, 1, []int{1, 3, 4})},
		{"top-k larger than vocabulary", Config{Temperature: 1, TopK: 1000}, probs, softmax(probs, 1, nil)},
		// cumulative 0.4, 0.65, 0.8, 0.9: p=0.7 keeps the crossing token (3 kept).
		{"top-p 0.7", Config{Temperature: 1, TopP: 0.7}, probs, softmax(probs, 1, []int{0, 1, 2})},
		{"top-p 0.3 keeps at least one", Config{Temperature: 1, TopP: 0.3}, probs, softmax(probs, 1, []int{0})},
		{"top-p 1 is off", Config{Temperature: 1, TopP: 1}, probs, softmax(probs, 1, nil)},
		// min-p 0.3: threshold 0.12 keeps 0.4, 0.25, 0.15.
		{"min-p 0.3", Config{Temperature: 1, MinP: 0.3}, probs, softmax(probs, 1, []int{0, 1, 2})},
		{"min-p 1 keeps the top only", Config{Temperature: 1, MinP: 1}, probs, softmax(probs, 1, []int{0})},
		// Chain order: top-p sees temperature-1 probabilities, then temperature
		// 3 flattens only the survivors.
		{"top-p before temperature", Config{Temperature: 3, TopP: 0.5}, probs, softmax(probs, 3, []int{0, 1})},
		{"top-k, top-p, min-p, temperature", Config{Temperature: 0.7, TopK: 4, TopP: 0.85, MinP: 0.3},
			probs, softmax(probs, 0.7, []int{0, 1, 2})},
		{"SmolLM3 defaults", SmolLM3Defaults(), probs, softmax(probs, 0.6, []int{0, 1, 2, 3, 4})},
		{"NaN and -Inf never drawn", Config{Temperature: 1},
			[]float32{float32(math.NaN()), 0, float32(math.Inf(-1)), 0},
			[]float64{0, 0.5, 0, 0.5}},
		{"NaN in the first k is never drawn", Config{Temperature: 1, TopK: 2},
			[]float32{float32(math.NaN()), 0, 0, -1},
			[]float64{0, 0.5, 0.5, 0}},
		{"NaN with top-p over the whole vocabulary", Config{Temperature: 1, TopP: 0.99},
			[]float32{float32(math.NaN()), 0, float32(math.NaN()), 0},
			[]float64{0, 0.5, 0, 0.5}},
		{"top-k includes -Inf when k exceeds the finite tokens", Config{Temperature: 1, TopK: 3},
			[]float32{float32(math.Inf(-1)), 1, float32(math.Inf(-1)), 1},
			[]float64{0, 0.5, 0, 0.5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkDistribution(t, tt.cfg, tt.logits, tt.want)
		})
	}
}

// TestChiSquareCatchesWrongDistribution makes sure the distribution test has
// teeth: the temperature-1 draws must fail against temperature-1.2 odds.
func TestChiSquareCatchesWrongDistribution(t *testing.T) {
	ramp := []float32{0, 0.5, 1, 1.5, 2, 2.5, 3}
	if distributionMismatch(Config{Temperature: 1}, ramp, softmax(ramp, 1.2, nil)) == "" {
		t.Fatal("chi-square test accepted temperature-1 draws as temperature 1.2")
	}
	if distributionMismatch(Config{Temperature: 1, TopK: 3}, ramp, softmax(ramp, 1, []int{4, 5, 6, 3})) == "" {
		t.Fatal("chi-square test accepted top-3 draws as top-4")
	}
}

func TestGreedy(t *testing.T) {
	inf := float32(math.Inf(1))
	nan := float32(math.NaN())
	tests := []struct {
		name   string
		cfg    Config
		logits []float32
		want   int32
	}{
		{"argmax", Greedy(), []float32{0.1, 2, -3, 1.9}, 1},
		{"ties go to the lowest id", Greedy(), []float32{1, 5, 5, 5}, 1},
		{"zero config is greedy", Config{}, []float32{-1, -2, -0.5}, 2},
		{"temperature 0 ignores top-k/p", Config{TopK: 1, TopP: 0.1, MinP: 0.5, Seed: 3}, []float32{0, 9, 1}, 1},
		{"negative temperature is greedy", Config{Temperature: -1}, []float32{0, 9, 1}, 1},
		{"NaN temperature is greedy", Config{Temperature: nan}, []float32{0, 9, 1}, 1},
		{"denormal temperature is greedy", Config{Temperature: 1e-45}, []float32{0, 9, 1}, 1},
		{"NaN is never the argmax", Greedy(), []float32{nan, -5, nan}, 1},
		{"+Inf wins", Config{Temperature: 1}, []float32{0, 1e30, inf, inf}, 2},
		{"all -Inf", Config{Temperature: 1}, []float32{-inf, -inf}, NoToken},
		{"all NaN", Greedy(), []float32{nan, nan}, NoToken},
		{"empty", Greedy(), nil, NoToken},
		{"single token", Config{Temperature: 1, TopK: 5, TopP: 0.5}, []float32{-3}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(tt.cfg)
			for range 3 {
				if got := s.Sample(tt.logits); got != tt.want {
					t.Fatalf("Sample(%v) = %d, want %d", tt.logits, got, tt.want)
				}
			}
		})
	}
}

func TestSampleDoesNotModifyLogits(t *testing.T) {
	logits := []float32{1, 2, float32(math.NaN()), 3}
	s := New(Config{Temperature: 0.8, TopK: 2, RepeatPenalty: 1.5, PresencePenalty: 1})
	s.Accept(3)
	s.Sample(logits)
	if logits[0] != 1 || logits[1] != 2 || logits[2] == logits[2] || logits[3] != 3 {
		t.Fatalf("logits changed to %v", logits)
	}
}

func TestPenalties(t *testing.T) {
	tests := []struct {
		name     string
		cfg      Config
		accepted []int32
		logits   []float32
		want     []float32
	}{
		{
			// repeat 2: positive logits halve, negative ones double; token 2 unseen.
			name: "repeat", cfg: Config{RepeatPenalty: 2},
			accepted: []int32{0, 1, 0, 3},
			logits:   []float32{4, -1, 5, 0},
			want:     []float32{2, -2, 5, 0},
		},
		{
			name: "presence once, frequency per occurrence", cfg: Config{PresencePenalty: 0.5, FrequencyPenalty: 0.25},
			accepted: []int32{0, 1, 0, 0},
			logits:   []float32{4, -1, 5, 0},
			want:     []float32{4 - 0.5 - 3*0.25, -1 - 0.5 - 0.25, 5, 0},
		},
		{
			name: "all three", cfg: Config{RepeatPenalty: 1.25, PresencePenalty: 1, FrequencyPenalty: 0.5},
			accepted: []int32{2, 2},
			logits:   []float32{4, -1, 5, 0},
			want:     []float32{4, -1, 5/1.25 - 1 - 2*0.5, 0},
		},
		{
			name: "window forgets old tokens", cfg: Config{FrequencyPenalty: 1, PenaltyWindow: 2},
			accepted: []int32{0, 0, 0, 1, 2},
			logits:   []float32{4, 4, 4, 4},
			want:     []float32{4, 3, 3, 4},
		},
		{
			name: "negative window turns penalties off", cfg: Config{FrequencyPenalty: 1, PenaltyWindow: -1},
			accepted: []int32{0, 1},
			logits:   []float32{4, 4},
			want:     []float32{4, 4},
		},
		{
			name: "out-of-range tokens are ignored", cfg: Config{PresencePenalty: 1},
			accepted: []int32{-7, 99, 1},
			logits:   []float32{4, 4},
			want:     []float32{4, 3},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(tt.cfg)
			for _, a := range tt.accepted {
				s.Accept(a)
			}
			got := s.prepare(tt.logits)
			for i := range got {
				if math.Abs(float64(got[i]-tt.want[i])) > 1e-6 {
					t.Fatalf("penalized logits %v, want %v", got, tt.want)
				}
			}
			s.Reset()
			if got := s.prepare(tt.logits); !slices.Equal(got, tt.logits) {
				t.Fatalf("after Reset logits are still penalized: %v", got)
			}
		})
	}
}

// TestPenaltyChangesGreedyChoice checks penalties end to end: a repeated
// token loses its lead.
func TestPenaltyChangesGreedyChoice(t *testing.T) {
	s := New(Config{RepeatPenalty: 1.5})
	logits := []float32{3, 2.5, 1}
	if got := s.Sample(logits); got != 0 {
		t.Fatalf("first pick %d, want 0", got)
	}
	s.Accept(0)
	if got := s.Sample(logits); got != 1 {
		t.Fatalf("after accepting 0 picked %d, want 1 (3/1.5 = 2 < 2.5)", got)
	}
}

func TestDeterminism(t *testing.T) {
	logits := make([]float32, 1000)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range logits {
		logits[i] = float32(r.NormFloat64() * 2)
	}
	draw := func(s *Sampler, n int) []int32 {
		out := make([]int32, n)
		for i := range out {
			out[i] = s.Sample(logits)
			s.Accept(out[i])
		}
		return out
	}
	cfg := Config{Temperature: 1.2, TopK: 200, TopP: 0.98, RepeatPenalty: 1.1, Seed: 1234}
	a := New(cfg)
	first := draw(a, 200)
	if got := draw(New(cfg), 200); !slices.Equal(first, got) {
		t.Fatal("same seed gave different tokens")
	}
	a.Reset()
	if got := draw(a, 200); !slices.Equal(first, got) {
		t.Fatal("Reset did not replay the same tokens")
	}
	cfg.Seed = 1235
	if got := draw(New(cfg), 200); slices.Equal(first, got) {
		t.Fatal("different seeds gave the same 200 tokens")
	}
	// A random seed can be read back and replayed.
	r1 := New(Config{Temperature: 1})
	if r1.Seed() == 0 {
		t.Fatal("Seed() is 0 for a random seed")
	}
	x := draw(r1, 100)
	if got := draw(New(Config{Temperature: 1, Seed: r1.Seed()}), 100); !slices.Equal(x, got) {
		t.Fatal("replaying Seed() gave different tokens")
	}
}

// TestTopPFullMatchesSort compares the staged selection over a large
// vocabulary with a plain full sort, for peaked and flat distributions.
func TestTopPFullMatchesSort(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for _, tc := range []struct {
		name  string
		sd    float64
		p     float32
		vocab int
	}{
		{"peaked", 4, 0.95, 20000},
		{"medium", 1.5, 0.9, 20000},
		{"flat", 0.01, 0.5, 20000},
		{"with ties", 0, 0.3, 500},
		{"flat, tiny p", 0.01, 0.001, 20000},
		{"flat, p near 1", 0.01, 0.999, 20000},
		{"small vocabulary", 1, 0.9, 40},
		{"peaked like a model", -1, 0.95, 128256},
		{"wide nucleus, real vocabulary", 1, 0.95, 128256},
		{"wide nucleus, small p", 1, 0.2, 128256},
		{"two values", -2, 0.5, 5000},
		{"peaked, tiny p", -1, 0.01, 128256},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logits := make([]float32, tc.vocab)
			for i := range logits {
				logits[i] = float32(r.NormFloat64() * tc.sd)
			}
			switch tc.sd {
			case -1:
				logits = benchLogits(tc.vocab, 2)
			case -2:
				for i := range logits {
					logits[i] = float32(i % 2)
				}
			}
			s := New(Config{Temperature: 1, TopP: tc.p})
			_, maxv := argmax(logits)
			got := slices.Clone(s.topPFull(logits, maxv, tc.p))

			all := make([]candidate, len(logits))
			for i, l := range logits {
				all[i] = candidate{int32(i), l}
			}
			slices.SortFunc(all, byRank)
			want := topPSorted(all, maxv, tc.p)
			if len(got) != len(want) {
				t.Fatalf("kept %d tokens, full sort keeps %d", len(got), len(want))
			}
			slices.SortFunc(got, byRank) // the flat path returns the set unordered
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("candidate %d = %+v, full sort has %+v", i, got[i], want[i])
				}
			}
		})
	}
}

func TestSelectTop(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	logits := make([]float32, 5000)
	for i := range logits {
		logits[i] = float32(r.IntN(50)) // many ties
	}
	s := New(Config{})
	for _, k := range []int{1, 2, 40, 999, 4999, 5000, 6000} {
		got := slices.Clone(s.selectTop(logits, k))
		all := make([]candidate, len(logits))
		for i, l := range logits {
			all[i] = candidate{int32(i), l}
		}
		slices.SortFunc(all, byRank)
		want := all[:min(k, len(all))]
		if !slices.Equal(got, want) {
			t.Fatalf("k=%d: selection differs from full sort", k)
		}
	}
}

func TestAllocationFree(t *testing.T) {
	logits := benchLogits(128256, 2)
	for _, cfg := range benchConfigs {
		s := New(cfg.cfg)
		s.Accept(5)
		s.Sample(logits) // warm up buffers
		allocs := testing.AllocsPerRun(5, func() {
			s.Accept(s.Sample(logits))
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per token", cfg.name, allocs)
		}
	}
}

func TestValidate(t *testing.T) {
	nan := float32(math.NaN())
	tests := []struct {
		cfg  Config
		want string // "" means valid
	}{
		{Config{}, ""},
		{SmolLM3Defaults(), ""},
		{Config{Temperature: 0.7, TopK: 40, TopP: 1, MinP: 0.05, RepeatPenalty: 1.1, PresencePenalty: -0.5}, ""},
		{Config{Temperature: -0.1}, "Temperature"},
		{Config{Temperature: nan}, "Temperature"},
		{Config{TopP: 1.5}, "TopP"},
		{Config{MinP: -0.1}, "MinP"},
		{Config{RepeatPenalty: -1}, "RepeatPenalty"},
		{Config{FrequencyPenalty: float32(math.Inf(1))}, "FrequencyPenalty"},
		{Config{TopK: -1}, "TopK"},
	}
	for _, tt := range tests {
		err := tt.cfg.Validate()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%+v: unexpected error %v", tt.cfg, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%+v: error %v, want one naming %s", tt.cfg, err, tt.want)
		}
	}
}

func TestConfigString(t *testing.T) {
	if got := Greedy().String(); got != "greedy" {
		t.Errorf("Greedy().String() = %q", got)
	}
	got := Config{Temperature: 0.6, TopP: 0.95, TopK: 20, Seed: 9}.String()
	want := "top-k 20 → top-p 0.95 → temperature 0.6 → dist(seed 9)"
	if got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func TestExpNeg(t *testing.T) {
	worst := 0.0
	for x := float64(minExp); x <= 0; x += 0.00731 {
		want := math.Exp(x)
		worst = max(worst, math.Abs(expNeg(x)-want)/want)
	}
	if worst > 1e-8 {
		t.Errorf("expNeg relative error %g > 1e-8", worst)
	}
	for _, x := range []float64{minExp - 0.001, -1000, math.Inf(-1), math.NaN()} {
		if got := expNeg(x); got != 0 {
			t.Errorf("expNeg(%v) = %v, want 0", x, got)
		}
	}
	if got := expNeg(0); got != 1 {
		t.Errorf("expNeg(0) = %v, want 1", got)
	}
}
