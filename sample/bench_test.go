package sample

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// benchLogits returns n logits shaped like a language model's: noise around 0
// with a few candidates 20-25 above it, so the nucleus is small.
func benchLogits(n int, sd float64) []float32 {
	r := rand.New(rand.NewPCG(11, 12))
	l := make([]float32, n)
	for i := range l {
		l[i] = float32(r.NormFloat64() * sd)
	}
	for i, boost := range []float32{25, 23.5, 22, 20} {
		l[(i+1)*9973%n] += boost
	}
	return l
}

var benchConfigs = []struct {
	name string
	cfg  Config
}{
	{"greedy", Greedy()},
	{"smollm3-defaults", SmolLM3Defaults()},
	{"llama.cpp-defaults", Config{Temperature: 0.8, TopK: 40, TopP: 0.95, MinP: 0.05, Seed: 1}},
	{"temperature-only", Config{Temperature: 0.8, Seed: 1}},
	{"min-p", Config{Temperature: 0.8, MinP: 0.05, Seed: 1}},
	{"penalties+defaults", Config{Temperature: 0.6, TopP: 0.95, RepeatPenalty: 1.1, PresencePenalty: 0.2, FrequencyPenalty: 0.2, Seed: 1}},
}

// benchVocabs are the vocabulary sizes of the families: SmolLM3 and Llama
// 3 (128,256), Qwen2.5 and Qwen3 (151,936), Gemma 3 (262,144).
var benchVocabs = []int{128256, 151936, 262144}

// BenchmarkSample measures the cost of one token on each family's
// vocabulary for common configurations.
func BenchmarkSample(b *testing.B) {
	for _, v := range benchVocabs {
		logits := benchLogits(v, 2)
		for _, bc := range benchConfigs {
			b.Run(fmt.Sprintf("vocab=%d/%s", v, bc.name), func(b *testing.B) {
				s := New(bc.cfg)
				for i := range 64 {
					s.Accept(int32(i * 31))
				}
				b.ReportAllocs()
				for b.Loop() {
					s.Accept(s.Sample(logits))
				}
			})
		}
	}
}

// BenchmarkSampleFlat is the worst case for top-p: a nearly flat
// distribution whose nucleus is most of the vocabulary.
func BenchmarkSampleFlat(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	logits := make([]float32, 128256)
	for i := range logits {
		logits[i] = float32(r.NormFloat64() * 0.01)
	}
	s := New(SmolLM3Defaults())
	b.ReportAllocs()
	for b.Loop() {
		s.Sample(logits)
	}
}

// BenchmarkSampleWide has a nucleus of thousands of tokens, like a model
// unsure how to go on (the start of a story): top-p needs every weight.
func BenchmarkSampleWide(b *testing.B) {
	r := rand.New(rand.NewPCG(2, 2))
	logits := make([]float32, 128256)
	for i := range logits {
		logits[i] = float32(r.NormFloat64())
	}
	s := New(SmolLM3Defaults())
	b.ReportAllocs()
	for b.Loop() {
		s.Sample(logits)
	}
}
