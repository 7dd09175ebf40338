package sample

import (
	"math"
	"math/rand/v2"
	"slices"
)

// NoToken is what Sample returns when no token can be chosen: the logits are
// empty, or every one of them is -Inf or NaN.
const NoToken int32 = -1

// A Sampler picks the next token from a model's logits with the chain that
// its Config describes. It keeps the state that makes sampling repeatable
// and history-aware: the random generator and the window of recent tokens
// that the penalties count.
//
// A Sampler reuses its buffers, so after the first call Sample allocates
// nothing. It is not safe for concurrent use; give each generation its own.
type Sampler struct {
	cfg  Config // normalized
	seed uint64 // the effective seed (never 0)
	pcg  *rand.PCG
	rng  *rand.Rand

	work    []float32   // the logits after penalties
	cands   []candidate // explicit survivors of the truncating samplers
	edge    []candidate // topPHistogram's boundary bucket
	hist    *[histBuckets]float64
	window  []int32 // ring buffer of the last cfg.PenaltyWindow accepted tokens
	wpos    int     // next write position in window
	wlen    int     // number of valid entries in window
	scratch []int32 // sorted copy of the window, for counting
}

// candidate is a token that survived truncation so far.
type candidate struct {
	id    int32
	logit float32
}

// New returns a Sampler for cfg. Settings outside their range are treated as
// "off" (see Config; use Config.Validate to reject them instead).
func New(cfg Config) *Sampler {
	n := cfg.normalized()
	s := &Sampler{cfg: n, seed: n.Seed}
	for s.seed == 0 {
		s.seed = rand.Uint64()
	}
	s.cfg.Seed = s.seed
	s.pcg = rand.NewPCG(0, 0)
	s.rng = rand.New(s.pcg)
	if n.penalized() {
		s.window = make([]int32, n.PenaltyWindow)
		s.scratch = make([]int32, 0, n.PenaltyWindow)
	}
	s.Reset()
	return s
}

// Config returns the sampler's configuration as normalized by New, with the
// effective seed filled in.
func (s *Sampler) Config() Config { return s.cfg }

// Seed returns the seed in use. When Config.Seed was 0 it is the random seed
// New picked; passing it back as Config.Seed reproduces the run.
func (s *Sampler) Seed() uint64 { return s.seed }

// Reset forgets the accepted tokens and rewinds the random generator to its
// seed, so the sampler behaves exactly as when it was new.
func (s *Sampler) Reset() {
	s.pcg.Seed(s.seed, s.seed^0x9e3779b97f4a7c15)
	s.wpos, s.wlen = 0, 0
}

// Accept records a token as generated (or as part of the prompt) so that the
// penalties see it. Generation loops call it after every sampled token. It
// does nothing when no penalty is configured.
func (s *Sampler) Accept(token int32) {
	if len(s.window) == 0 {
		return
	}
	s.window[s.wpos] = token
	s.wpos++
	if s.wpos == len(s.window) {
		s.wpos = 0
	}
	if s.wlen < len(s.window) {
		s.wlen++
	}
}

// Sample returns the id of the next token, drawn from logits (one value per
// vocabulary entry) by the sampler chain. logits is not modified.
//
// NaN logits are treated as -Inf: such tokens are never chosen. If one or
// more logits are +Inf, the lowest such id is returned. If nothing can be
// chosen (no logits, or all -Inf/NaN), Sample returns NoToken.
func (s *Sampler) Sample(logits []float32) int32 {
	n := len(logits)
	if n == 0 {
		return NoToken
	}
	work := s.prepare(logits)
	best, maxv := argmax(work)
	if best < 0 || s.cfg.Temperature <= 0 || math.IsInf(float64(maxv), 1) ||
		math.IsInf(1/float64(s.cfg.Temperature), 1) {
		return best
	}

	cands, explicit := s.truncate(work, maxv)
	if explicit {
		s.cands = cands[:0]
		return s.drawCandidates(cands, maxv)
	}
	return s.drawAll(work, maxv)
}

// truncate runs the truncating samplers in llama.cpp's order over work
// (whose largest value is maxv). Until a sampler needs an explicit list,
// the candidates are implicitly "every token" in work: explicit is false
// when none of them ran, and cands is then empty.
func (s *Sampler) truncate(work []float32, maxv float32) (cands []candidate, explicit bool) {
	n := len(work)
	cands = s.cands[:0]
	if k := s.cfg.TopK; k > 0 && k < n {
		cands, explicit = s.selectTop(work, k), true
	}
	if p := s.cfg.TopP; p > 0 {
		if explicit {
			cands = topPSorted(cands, maxv, p)
		} else {
			cands, explicit = s.topPFull(work, maxv, p), true
		}
	}
	if mp := s.cfg.MinP; mp > 0 {
		threshold := maxv + float32(math.Log(float64(mp)))
		if explicit {
			kept := cands[:0]
			for _, c := range cands {
				if c.logit >= threshold {
					kept = append(kept, c)
				}
			}
			cands = kept
		} else {
			for i, l := range work {
				if l >= threshold {
					cands = append(cands, candidate{int32(i), l})
				}
			}
			explicit = true
		}
	}
	return cands, explicit
}

// prepare returns the logits the chain works on: logits itself, or, when
// penalties apply, a penalized copy. NaN logits stay NaN; every stage below
// is written so that a NaN compares as "never chosen" (comparisons with NaN
// are false, and expNeg(NaN) is 0).
func (s *Sampler) prepare(logits []float32) []float32 {
	if s.wlen == 0 {
		return logits
	}
	if cap(s.work) < len(logits) {
		s.work = make([]float32, len(logits))
	}
	work := s.work[:len(logits)]
	copy(work, logits)
	s.applyPenalties(work)
	return work
}

// argmax returns the lowest index of the largest value, or -1 if every value
// is -Inf or NaN. It keeps four running maxima so the comparisons of
// neighbouring elements do not wait on each other, then finds the first
// index holding the maximum.
func argmax(v []float32) (int32, float32) {
	negInf := float32(math.Inf(-1))
	m0, m1, m2, m3 := negInf, negInf, negInf, negInf
	i := 0
	for ; i+4 <= len(v); i += 4 {
		if v[i] > m0 {
			m0 = v[i]
		}
		if v[i+1] > m1 {
			m1 = v[i+1]
		}
		if v[i+2] > m2 {
			m2 = v[i+2]
		}
		if v[i+3] > m3 {
			m3 = v[i+3]
		}
	}
	for ; i < len(v); i++ {
		if v[i] > m0 {
			m0 = v[i]
		}
	}
	m := max(m0, m1, m2, m3) // none is NaN
	if m == negInf {
		return -1, m
	}
	for j, x := range v {
		if x == m {
			return int32(j), m
		}
	}
	return -1, m // unreachable
}

// applyPenalties changes the logits of the tokens in the window the way
// llama.cpp's penalties sampler does: for a token seen c > 0 times,
//
//	logit = logit * repeat   if logit <= 0
//	logit = logit / repeat   otherwise
//	logit -= c*frequency + presence
func (s *Sampler) applyPenalties(work []float32) {
	counts := append(s.scratch[:0], s.window[:s.wlen]...)
	slices.Sort(counts)
	rp, fp, pp := s.cfg.RepeatPenalty, s.cfg.FrequencyPenalty, s.cfg.PresencePenalty
	for i := 0; i < len(counts); {
		t := counts[i]
		j := i + 1
		for j < len(counts) && counts[j] == t {
			j++
		}
		c := float32(j - i)
		i = j
		if t < 0 || int(t) >= len(work) {
			continue
		}
		l := work[t]
		if l <= 0 {
			l *= rp
		} else {
			l /= rp
		}
		work[t] = l - c*fp - pp
	}
	s.scratch = counts[:0]
}

// better reports whether candidate a ranks above b: a higher logit, or the
// same logit and a lower id.
func better(a, b candidate) bool {
	return a.logit > b.logit || (a.logit == b.logit && a.id < b.id)
}

// byRank orders candidates best first.
func byRank(a, b candidate) int {
	switch {
	case better(a, b):
		return -1
	case better(b, a):
		return 1
	}
	return 0
}

// selectTop returns the k best tokens of work, best first, in s.cands. It
// scans once with a k-entry min-heap, so its cost is about one comparison per
// token when k is small next to the vocabulary.
func (s *Sampler) selectTop(work []float32, k int) []candidate {
	if k >= len(work) {
		h := s.cands[:0]
		for i, l := range work {
			h = append(h, candidate{int32(i), notNaN(l)})
		}
		slices.SortFunc(h, byRank)
		s.cands = h
		return h
	}
	h := s.cands[:0]
	for i := range k {
		h = append(h, candidate{int32(i), notNaN(work[i])})
	}
	// Build a min-heap: h[0] is the worst kept candidate.
	for i := k/2 - 1; i >= 0; i-- {
		siftDown(h, i)
	}
	for i := k; i < len(work); i++ {
		// Ids only grow, so a tie with the root is never better.
		if l := work[i]; l > h[0].logit {
			h[0] = candidate{int32(i), l}
			siftDown(h, 0)
		}
	}
	slices.SortFunc(h, byRank)
	s.cands = h
	return h
}

// notNaN maps NaN to -Inf, so that candidates can be ordered.
func notNaN(l float32) float32 {
	if l != l {
		return float32(math.Inf(-1))
	}
	return l
}

func siftDown(h []candidate, i int) {
	n := len(h)
	for {
		w := i
		l, r := 2*i+1, 2*i+2
		if l < n && better(h[w], h[l]) {
			w = l
		}
		if r < n && better(h[w], h[r]) {
			w = r
		}
		if w == i {
			return
		}
		h[i], h[w] = h[w], h[i]
		i = w
	}
}

// topPSorted keeps the shortest prefix of cands (sorted best first) whose
// probabilities, normalized over cands at temperature 1, reach p.
func topPSorted(cands []candidate, maxv, p float32) []candidate {
	sum := 0.0
	for _, c := range cands {
		sum += expNeg(float64(c.logit - maxv))
	}
	return nucleus(cands, maxv, float64(p)*sum)
}

// nucleus returns the shortest prefix of cands whose unnormalized weights
// exp(logit-maxv) add up to target, or nil if they never do.
func nucleus(cands []candidate, maxv float32, target float64) []candidate {
	cum := 0.0
	for i, c := range cands {
		cum += expNeg(float64(c.logit - maxv))
		if cum >= target {
			return cands[:i+1]
		}
	}
	return nil
}

// topPFull is top-p over the whole vocabulary. The nucleus of a real model is
// usually a handful of tokens, so instead of sorting 128K logits it takes the
// best 64, then the best 1024, and checks whether they hold the nucleus.
// That check usually does not even need the total mass (e^x of every logit,
// the costly part): with the best k tokens known, the total lies between
// their mass and that plus (n-k) times the k-th token's weight. The nucleus
// only grows with the total, so if both bounds give the same nucleus, it is
// the exact one. A wide nucleus goes to topPHistogram.
func (s *Sampler) topPFull(work []float32, maxv, p float32) []candidate {
	for _, k := range [...]int{64, 1024} {
		if k >= len(work) {
			break
		}
		top := s.selectTop(work, k)
		mass := 0.0
		for _, c := range top {
			mass += expNeg(float64(c.logit - maxv))
		}
		tail := float64(len(work)-k) * expNeg(float64(top[k-1].logit-maxv))
		lo := nucleus(top, maxv, float64(p)*mass)
		hi := nucleus(top, maxv, float64(p)*(mass+tail))
		if hi != nil && len(lo) == len(hi) {
			return hi
		}
	}
	return s.topPHistogram(work, maxv, p)
}

// histBuckets is the resolution of topPHistogram.
const histBuckets = 4096

// topPHistogram finds a nucleus of any size in three passes and no full
// sort: it buckets the tokens by logit (over the range of logits that have
// weight, so a nearly flat distribution is spread over all buckets too) and
// sums each bucket's mass; the bucket where the running mass from the top
// crosses p holds the boundary. The buckets above it are kept whole, and
// only the boundary bucket's tokens are sorted to place the cut exactly.
// The kept tokens come back in no particular order.
func (s *Sampler) topPHistogram(work []float32, maxv, p float32) []candidate {
	cut := maxv + minExp // lighter tokens have weight 0 (see expNeg)
	lowest := maxv
	for _, l := range work {
		if l >= cut && l < lowest {
			lowest = l
		}
	}
	span := maxv - lowest
	if span <= 0 { // every weighted token ties with the top one
		span = 1
	}
	scale := float32(histBuckets) / span
	bucket := func(l float32) int { return min(int((maxv-l)*scale), histBuckets-1) }

	if s.hist == nil {
		s.hist = new([histBuckets]float64)
	}
	mass := s.hist
	*mass = [histBuckets]float64{}
	total := 0.0
	for _, l := range work {
		if l >= cut {
			w := expNeg(float64(l - maxv))
			mass[bucket(l)] += w
			total += w
		}
	}
	target := float64(p) * total
	b, above := 0, 0.0
	for b < histBuckets-1 && above+mass[b] < target {
		above += mass[b]
		b++
	}

	kept, edge := s.cands[:0], s.edge[:0]
	for i, l := range work {
		if l >= cut {
			switch bi := bucket(l); {
			case bi < b:
				kept = append(kept, candidate{int32(i), l})
			case bi == b:
				edge = append(edge, candidate{int32(i), l})
			}
		}
	}
	slices.SortFunc(edge, byRank)
	if n := nucleus(edge, maxv, target-above); n != nil {
		edge = n // else rounding kept the sum just short of p: keep the bucket
	}
	kept = append(kept, edge...)
	s.cands, s.edge = kept, edge[:0]
	return kept
}

// drawCandidates draws one of cands with probability proportional to
// exp((logit-maxv)/T).
func (s *Sampler) drawCandidates(cands []candidate, maxv float32) int32 {
	if len(cands) == 1 {
		return cands[0].id
	}
	invT := 1 / float64(s.cfg.Temperature)
	sum := 0.0
	for _, c := range cands {
		sum += expNeg(float64(c.logit-maxv) * invT)
	}
	u := s.rng.Float64() * sum
	cum, last := 0.0, cands[0].id
	for _, c := range cands {
		w := expNeg(float64(c.logit-maxv) * invT)
		cum += w
		if w > 0 {
			last = c.id
		}
		if cum > u {
			return c.id
		}
	}
	return last
}

// drawAll is drawCandidates over every token of work.
func (s *Sampler) drawAll(work []float32, maxv float32) int32 {
	invT := 1 / float64(s.cfg.Temperature)
	u := s.rng.Float64() * sumExp(work, maxv, invT)
	cut := float32(minExp/invT) + maxv
	cum, last := 0.0, int32(0)
	for i, l := range work {
		if !(l >= cut) {
			continue
		}
		w := expNeg(float64(l-maxv) * invT)
		cum += w
		if w > 0 {
			last = int32(i)
		}
		if cum > u {
			return int32(i)
		}
	}
	return last
}
