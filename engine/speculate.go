package engine

// Lookup speculative decoding (no draft model): the next tokens are guessed
// by finding the most recent earlier occurrence of the last few tokens in
// the prompt and the answer so far and copying what followed it, as
// llama.cpp's ngram-simple and the prompt-lookup method do. The guess is
// checked in the next step, which computes the sampled token and the draft
// together (one pass over the weights for all of them); each row of logits
// is sampled exactly as without a draft, and the draft is kept up to the
// first token the sampler disagrees with. Sampling a row and accepting the
// draft token only if the sample equals it is the standard speculative
// acceptance rule for a draft that proposes one token with certainty, so
// the output has the same distribution as plain decoding, and (with the same
// seed and batch-invariant kernels) is the same token for token: each
// position still takes one draw of the sampler's random stream.
//
// It pays when the answer repeats its input (editing code, quoting a
// document, structured output restating the question) and costs little
// otherwise: no draft is made when the last tokens never occurred before,
// and the draft length adapts to how much of it is confirmed.

// Draft lengths.
const (
	maxDraft   = 8  // tokens per draft
	probeAfter = 16 // steps without drafting before trying again
)

// drafter proposes continuations from the token history.
type drafter struct {
	hist []int32
	// last[n] maps an n-gram (n = 2, 3) to the index just after its most
	// recent occurrence that is not the end of the history.
	last  [4]map[uint64]int
	k     int // draft length now; 0 pauses drafting
	pause int // steps left before probing again
}

func newDrafter(prompt []int32) *drafter {
	d := &drafter{k: 4}
	for n := 2; n <= 3; n++ {
		d.last[n] = make(map[uint64]int)
	}
	for _, t := range prompt {
		d.push(t)
	}
	return d
}

// key packs the n tokens before index i (ids are below 2^21 for any
// vocabulary we load, so three fit in 64 bits).
func (d *drafter) key(i, n int) uint64 {
	var k uint64
	for _, t := range d.hist[i-n : i] {
		k = k<<21 | uint64(uint32(t)&(1<<21-1))
	}
	return k<<2 | uint64(n)
}

// push appends a token to the history. The n-grams ending just before it
// now have a continuation (this token), so they are indexed.
func (d *drafter) push(t int32) {
	i := len(d.hist)
	for n := 2; n <= 3; n++ {
		if i >= n {
			d.last[n][d.key(i, n)] = i
		}
	}
	d.hist = append(d.hist, t)
}

// draft appends up to min(k, room) guessed tokens that follow in after the
// history (in[0] is the token about to be computed; it is already part of
// the history through push).
func (d *drafter) draft(in []int32, room int) []int32 {
	if d.k == 0 {
		if d.pause--; d.pause > 0 {
			return in
		}
		d.k = 1 // probe
	}
	end := len(d.hist)
	for n := 3; n >= 2; n-- {
		if end < n {
			continue
		}
		at, ok := d.last[n][d.key(end, n)]
		if !ok {
			continue
		}
		for j := at; j < end && len(in)-1 < min(d.k, room); j++ {
			in = append(in, d.hist[j])
		}
		return in
	}
	return in
}

// observe adapts the draft length to the last check: drafted tokens, of
// which accepted were confirmed.
func (d *drafter) observe(drafted, accepted int) {
	switch {
	case accepted == drafted:
		d.k = min(maxDraft, max(1, 2*d.k))
	case accepted == 0:
		if d.k /= 2; d.k == 0 {
			d.pause = probeAfter
		}
	default:
		d.k = accepted + 1
	}
}
