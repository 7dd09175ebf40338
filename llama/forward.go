package llama

import (
	"context"
	"fmt"

	"github.com/smolgo/smolgo/tensor"
)

// Forward runs the model on tokens placed at positions pos, pos+1, ... and
// returns their next-token logits: one row of Config.Vocab values for the
// last token, or, with allLogits, len(tokens) rows back to back (row t
// predicts the token after tokens[t]).
//
// pos must equal c.Len(): the cache holds exactly the positions before the
// new tokens (call Truncate to go back). Several tokens at once is a prefill;
// one token is a decode step. On success the cache grows by len(tokens). A
// sequence longer than the cache's MaxLen is an error wrapping
// ErrContextFull; a cancelled ctx (checked between layers) returns ctx's
// error and leaves the cache as it was (a recurrent model's cache keeps its
// length but not its state: it goes back to a checkpoint, Floor, before it
// runs again).
//
// The returned slice belongs to the cache and is overwritten by its next
// Forward call; copy it to keep it.
func (m *CPU) Forward(ctx context.Context, c *Cache, tokens []int32, pos int, allLogits bool) ([]float32, error) {
	cfg := &m.Config
	n := len(tokens)
	switch {
	case c == nil || c.model != m:
		return nil, fmt.Errorf("llama: forward with a cache made for another model")
	case n == 0:
		return nil, fmt.Errorf("llama: forward with no tokens")
	case pos != c.n:
		return nil, fmt.Errorf("llama: forward at position %d, but the cache holds %d positions (Truncate it first)", pos, c.n)
	case pos+n > c.maxLen:
		return nil, fmt.Errorf("llama: %d cached + %d new tokens exceed the cache length %d: %w", pos, n, c.maxLen, ErrContextFull)
	case c.recurrent() && !c.valid:
		return nil, errInterrupted
	}
	for i, t := range tokens {
		if t < 0 || int(t) >= cfg.Vocab {
			return nil, fmt.Errorf("llama: token %d at index %d is outside the vocabulary [0, %d)", t, i, cfg.Vocab)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	V := cfg.Vocab
	rows := 1
	if allLogits {
		rows = n
	}
	b := &c.buf
	b.logits1 = grow(b.logits1, rows*V)
	// Long prompts run in micro-batches of at most BatchSize tokens, like
	// llama.cpp's n_ubatch, which bounds the work buffers.
	// The tokens are copied so that the caller's slice does not escape.
	b.tokens = append(b.tokens[:0], tokens...)
	b.jobs = append(b.jobs[:0], job{c: c, tokens: b.tokens, out: b.logits1})
	err := m.run(ctx, b, b.jobs, m.batch)
	b.jobs[0] = job{}
	if err != nil {
		return nil, err
	}
	return b.logits1, nil
}

func rmsNorm(dst, x, w []float32, eps float32) { tensor.RMSNorm(dst, x, w, eps) }
