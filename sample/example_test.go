package sample_test

import (
	"fmt"

	"github.com/smolgo/smolgo/sample"
)

// A sampler picks tokens from logits. Greedy sampling always takes the most
// likely token; with a temperature and a seed the picks are random but
// repeatable, and top-p keeps them inside the nucleus.
func Example() {
	logits := []float32{1.0, 3.0, 2.5, -1.0, 0.5}

	greedy := sample.New(sample.Greedy())
	fmt.Println("greedy:", greedy.Sample(logits))

	cfg := sample.SmolLM3Defaults() // temperature 0.6, top-p 0.95
	cfg.Seed = 7
	s := sample.New(cfg)
	counts := make([]int, len(logits))
	for range 1000 {
		tok := s.Sample(logits)
		s.Accept(tok) // feeds the penalty window (no penalties configured here)
		counts[tok]++
	}
	fmt.Println("tokens drawn:", counts[1] > counts[2], counts[2] > counts[0], counts[3] == 0)
	fmt.Println("chain:", s.Config())
	// Output:
	// greedy: 1
	// tokens drawn: true true true
	// chain: top-p 0.95 → temperature 0.6 → dist(seed 7)
}

// Penalties discourage repetition: after token 0 was accepted, a repeat
// penalty of 1.5 divides its logit 3.0 down to 2.0, below token 1's 2.5.
func ExampleSampler_Accept() {
	s := sample.New(sample.Config{RepeatPenalty: 1.5}) // temperature 0: greedy
	logits := []float32{3.0, 2.5, 1.0}
	first := s.Sample(logits)
	s.Accept(first)
	fmt.Println(first, s.Sample(logits))
	// Output: 0 1
}
