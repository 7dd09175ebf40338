package sample

import "math"

// Speculative sampling (Leviathan et al. 2023, "Fast Inference from
// Transformers via Speculative Decoding") needs more of a sampler than one
// token: the probability with which it would draw each token (Probs), for
// the model that drafts and for the model that checks the draft, and draws
// of its random stream to accept a drafted token (Uniform) or to take
// another from what is left of the distribution (Draw). A draft model's own
// sampler also counts the same recent tokens for its penalties as the
// checking model's (CopyWindow), so that both sides sample with the same
// chain.

// Probs writes into dst (len(logits) values) the probability with which
// Sample would draw each token from logits now: the penalties, truncation
// and temperature of the chain, normalized, with 0 for every token the
// chain cuts. Greedy decoding puts all the mass on the token Sample picks.
// It returns false, with dst all 0, when no token can be chosen (where
// Sample returns NoToken). It does not touch the random stream.
//
// The weights are the ones Sample draws with (the same e^x, the same
// truncation), so drawing from Probs' dst with Draw and drawing with Sample
// have the same distribution.
func (s *Sampler) Probs(logits []float32, dst []float32) bool {
	dst = dst[:len(logits)]
	clear(dst)
	if len(logits) == 0 {
		return false
	}
	work := s.prepare(logits)
	best, maxv := argmax(work)
	if best < 0 {
		return false
	}
	if s.cfg.Temperature <= 0 || math.IsInf(float64(maxv), 1) || math.IsInf(1/float64(s.cfg.Temperature), 1) {
		dst[best] = 1
		return true
	}
	invT := 1 / float64(s.cfg.Temperature)
	sum := 0.0
	cands, explicit := s.truncate(work, maxv)
	if explicit {
		s.cands = cands[:0]
		if len(cands) == 1 {
			dst[cands[0].id] = 1
			return true
		}
		for _, c := range cands {
			w := expNeg(float64(c.logit-maxv) * invT)
			dst[c.id] = float32(w)
			sum += w
		}
	} else {
		cut := float32(minExp/invT) + maxv
		for i, l := range work {
			if l >= cut {
				w := expNeg(float64(l-maxv) * invT)
				dst[i] = float32(w)
				sum += w
			}
		}
	}
	inv := float32(1 / sum)
	for i, w := range dst {
		if w != 0 {
			dst[i] = w * inv
		}
	}
	return true
}

// Uniform returns a number in [0, 1) from the sampler's random stream (the
// stream Sample draws from).
func (s *Sampler) Uniform() float64 { return s.rng.Float64() }

// Draw draws a token with probability proportional to weights[id] (which
// need not add up to 1; negative and NaN weights count as 0) from the
// sampler's random stream, ignoring the chain. It returns NoToken when no
// weight is positive.
func (s *Sampler) Draw(weights []float32) int32 {
	sum := 0.0
	for _, w := range weights {
		if w > 0 {
			sum += float64(w)
		}
	}
	if !(sum > 0) || math.IsInf(sum, 1) {
		return NoToken
	}
	u := s.rng.Float64() * sum
	cum, last := 0.0, NoToken
	for i, w := range weights {
		if !(w > 0) {
			continue
		}
		cum += float64(w)
		last = int32(i)
		if cum > u {
			return int32(i)
		}
	}
	return last // rounding left u just above the last sum
}

// CopyWindow makes the tokens s's penalties count the ones src's count
// (the last accepted tokens, as Accept recorded them), so that a draft
// model's sampler starts each draft where the checking model's sampler
// stands. The two must have the same PenaltyWindow; otherwise s keeps the
// last of src's tokens that fit its own.
func (s *Sampler) CopyWindow(src *Sampler) {
	s.wpos, s.wlen = 0, 0
	if len(s.window) == 0 {
		return
	}
	// src's tokens, oldest first.
	start := src.wpos - src.wlen
	if start < 0 {
		start += len(src.window)
	}
	skip := max(0, src.wlen-len(s.window))
	for i := skip; i < src.wlen; i++ {
		s.Accept(src.window[(start+i)%len(src.window)])
	}
}
