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
// error and leaves the cache as it was.
//
// The returned slice belongs to the cache and is overwritten by its next
// Forward call; copy it to keep it.
func (m *Model) Forward(ctx context.Context, c *Cache, tokens []int32, pos int, allLogits bool) ([]float32, error) {
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
	}
	for i, t := range tokens {
		if t < 0 || int(t) >= cfg.Vocab {
			return nil, fmt.Errorf("llama: token %d at index %d is outside the vocabulary [0, %d)", t, i, cfg.Vocab)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.reserve(pos + n)
	V := cfg.Vocab
	if allLogits {
		c.buf.logits = grow(c.buf.logits, n*V)
	} else {
		c.buf.logits = grow(c.buf.logits, V)
	}
	// Long prompts run in micro-batches of at most BatchSize tokens, like
	// llama.cpp's n_ubatch, which bounds the work buffers.
	for i := 0; i < n; i += m.batch {
		j := min(n, i+m.batch)
		var out []float32
		switch {
		case allLogits:
			out = c.buf.logits[i*V : j*V]
		case j == n:
			out = c.buf.logits[:V]
		}
		if err := m.forward(ctx, c, tokens[i:j], pos+i, out); err != nil {
			c.n = pos // forget the micro-batches already done
			return nil, err
		}
	}
	return c.buf.logits, nil
}

// forward runs one micro-batch and, if out is not nil, writes the logits of
// its last len(out)/Vocab tokens there.
func (m *Model) forward(ctx context.Context, c *Cache, tokens []int32, pos int, out []float32) error {
	cfg := &m.Config
	n := len(tokens)
	b := &c.buf
	b.ensure(cfg, n)
	E := cfg.Embd

	x := b.x[:n*E]
	for t, tok := range tokens {
		if err := m.embd.Row(int(tok), x[t*E:(t+1)*E]); err != nil {
			return fmt.Errorf("llama: embedding: %w", err)
		}
	}
	half := cfg.Rope.Dims / 2
	for t := range n {
		cfg.Rope.Angles(pos+t, b.cos[t*half:(t+1)*half], b.sin[t*half:(t+1)*half])
	}
	for l := range m.layers {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := m.layer(c, l, n, pos); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	c.n = pos + n
	if out == nil {
		return nil
	}
	// Output: final norm and projection of the rows asked for.
	rows := len(out) / cfg.Vocab
	first := n - rows
	xb := b.xb[:rows*E]
	for t := range rows {
		tensor.RMSNorm(xb[t*E:(t+1)*E], x[(first+t)*E:(first+t+1)*E], m.outNorm, cfg.RMSEps)
	}
	if err := m.output.Mul(m.pool, &b.mm, out, xb, rows); err != nil {
		return fmt.Errorf("llama: output: %w", err)
	}
	return nil
}

// layer runs transformer block l on the n rows of c.buf.x.
func (m *Model) layer(c *Cache, l, n, pos int) error {
	cfg := &m.Config
	b := &c.buf
	w := &m.layers[l]
	E, Q, KV := cfg.Embd, cfg.QDim(), cfg.KVDim()
	x, xb := b.x[:n*E], b.xb[:n*E]

	// Attention.
	for t := range n {
		tensor.RMSNorm(xb[t*E:(t+1)*E], x[t*E:(t+1)*E], w.AttnNorm, cfg.RMSEps)
	}
	q, k, v := b.q[:n*Q], b.k[:n*KV], b.v[:n*KV]
	if err := tensor.MulInto(m.pool, &b.mm, xb, n, tensor.Out{M: w.Q, Dst: q}, tensor.Out{M: w.K, Dst: k}, tensor.Out{M: w.V, Dst: v}); err != nil {
		return fmt.Errorf("llama: layer %d: %w", l, err)
	}
	if m.nope.Rotates(l) {
		half, hd := cfg.Rope.Dims/2, cfg.HeadDim
		for t := range n {
			cos, sin := b.cos[t*half:(t+1)*half], b.sin[t*half:(t+1)*half]
			for h := range cfg.Heads {
				cfg.Rope.Rotate(q[t*Q+h*hd:t*Q+(h+1)*hd], cos, sin)
			}
			for h := range cfg.KVHeads {
				cfg.Rope.Rotate(k[t*KV+h*hd:t*KV+(h+1)*hd], cos, sin)
			}
		}
	}
	c.rotateIn(q, k, b.v[:n*KV]) // q8_0 cache: Hadamard rotations (cache_q8.go)
	c.store(l, pos, n)
	att := b.att[:n*Q]
	b.attn = attnJob{m: m, c: c, layer: l, pos: pos, n: n, q: q, out: att,
		tiled: c.typ == KVF32 || (n >= tileKV && c.typ == KVF16), runM: b.runM, runS: b.runS}
	// Hand a thread at least ~64K multiply-adds of attention (decode over a
	// short cache is less work than a wake-up is worth).
	grain := max(1, (1<<16)/((pos+n)*cfg.HeadDim*2))
	m.pool.Run(b.attn.units(), grain, &b.attn)
	b.attn = attnJob{}
	c.rotateOut(att)
	proj := b.proj[:n*E]
	if err := w.O.Mul(m.pool, &b.mm, proj, att, n); err != nil {
		return fmt.Errorf("llama: layer %d: %w", l, err)
	}
	tensor.Add(x, proj)

	// Feed-forward.
	for t := range n {
		tensor.RMSNorm(xb[t*E:(t+1)*E], x[t*E:(t+1)*E], w.FFNNorm, cfg.RMSEps)
	}
	F := cfg.FFN
	gate, up := b.gate[:n*F], b.up[:n*F]
	if err := tensor.MulSwiGLU(m.pool, &b.mm, gate, gate, up, w.Gate, w.Up, xb, n); err != nil {
		return fmt.Errorf("llama: layer %d: %w", l, err)
	}
	if err := w.Down.Mul(m.pool, &b.mm, proj, gate, n); err != nil {
		return fmt.Errorf("llama: layer %d: %w", l, err)
	}
	tensor.Add(x, proj)
	return nil
}

// store writes the n new keys and values of layer l at positions pos...
func (c *Cache) store(l, pos, n int) {
	kv := c.model.Config.KVDim()
	k, v := c.buf.k[:n*kv], c.buf.v[:n*kv]
	switch c.typ {
	case KVQ8_0:
		c.storeQ8(l, pos, k, v)
		return
	case KVF32:
		copy(c.k32[l][pos*kv:], k)
		copy(c.v32[l][pos*kv:], v)
		return
	}
	dk, dv := c.k16[l][pos*kv:(pos+n)*kv], c.v16[l][pos*kv:(pos+n)*kv]
	for i := range k {
		dk[i] = toF16(k[i])
		dv[i] = toF16(v[i])
	}
}

func rmsNorm(dst, x, w []float32, eps float32) { tensor.RMSNorm(dst, x, w, eps) }
