// Package sample turns a model's logits into the next token.
//
// A language model produces one logit per vocabulary entry; softmax of the
// logits is its probability distribution over the next token. Sampling picks
// a token from that distribution, usually after reshaping it: penalties push
// down tokens that were just used, truncation (top-k, top-p, min-p) removes
// the unlikely tail, and temperature makes the rest sharper (< 1) or flatter
// (> 1). Temperature 0 is greedy decoding: always the most likely token.
//
// # Configuring
//
// A Config names the samplers and their settings; its zero value is greedy.
// Two presets cover the common cases:
//
//	sample.Greedy()          // deterministic, for tests and benchmarks
//	sample.SmolLM3Defaults() // temperature 0.6, top-p 0.95, as recommended for SmolLM3
//
// The samplers always run in llama.cpp's default order, so that the same
// settings mean the same thing in both programs:
//
//	penalties → top-k → top-p → min-p → temperature → random draw
//
// (llama.cpp's DRY, typical-p, top-n-sigma and XTC samplers sit between
// these in its chain; they are off by default there and not implemented
// here.) Note that top-p and min-p see the temperature-1 probabilities.
//
// # Using a Sampler
//
// New builds a Sampler; Sample picks a token from one row of logits; Accept
// records the token that was actually used, so that the repetition,
// presence and frequency penalties can count it over the last
// Config.PenaltyWindow tokens; Reset starts over with the same seed:
//
//	s := sample.New(sample.SmolLM3Defaults())
//	for {
//		tok := s.Sample(logits)
//		s.Accept(tok)
//		...
//	}
//
// With the same Config.Seed, the same logits give the same tokens (the
// random source is math/rand/v2's PCG). Seed 0 picks a random seed, which
// Sampler.Seed reports so that a run can be replayed.
//
// # Cost
//
// Sample allocates nothing after its first call and never sorts the whole
// vocabulary in the common case: top-k keeps a k-entry heap in one pass,
// top-p grows a sorted head (64, then 1024 tokens) until it holds the
// nucleus, and min-p is a threshold on the logits. Top-p needs the total
// probability mass only when bounds on it (the head's mass, plus the rest
// at most as likely as the head's last token) leave the nucleus in doubt;
// then, like plain temperature sampling, it computes e^x of every logit
// with a polynomial accurate to 1e-8 relative, and a wide nucleus is found
// with a histogram of the logits, sorting only the bucket where it ends.
// See BenchmarkSample, BenchmarkSampleWide and BenchmarkSampleFlat for the
// per-token cost on SmolLM3's 128,256-entry vocabulary.
package sample
