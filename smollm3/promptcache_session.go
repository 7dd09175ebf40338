package smollm3

import "fmt"

// WithPromptCache gives the model a PromptCache of at most maxBytes of
// snapshots, shared by all its sessions (see PromptCache). Size it in
// prompts: Config().KVBytes(kvType, n) is the size of an n-token prompt
// (for SmolLM3-3B with an f16 cache, 147 MB per 2,000 tokens). 0 (the
// default) means no prompt cache.
func WithPromptCache(maxBytes int64) Option {
	return func(o *options) { o.promptCache = max(0, maxBytes) }
}

// PromptCache returns the model's prompt cache, or nil if it has none.
func (m *Model) PromptCache() *PromptCache { return m.pc }

// prefixStore is implemented by caches backed by a PromptCache.
type prefixStore interface {
	// restore makes the cache hold the longest prefix of prompt that a
	// snapshot shares with it, if that is longer than have (the prefix the
	// cache holds already); it returns the length now held (have if
	// nothing was restored) and the logits after it when the snapshot is
	// exactly the whole prompt.
	restore(prompt []int32, have int) (n int, logits []float32, err error)
	// save keeps a snapshot of the cache's first len(prompt) positions.
	save(prompt []int32, logits []float32) error
}

func (c *modelCache) restore(prompt []int32, have int) (int, []float32, error) {
	if c.m.pc == nil {
		return have, nil, nil
	}
	e, n := c.m.pc.lookup(prompt, have)
	if e == nil {
		return have, nil, nil
	}
	if err := c.c.CopyFrom(e.kv, min(have, c.c.Len()), n); err != nil {
		return have, nil, err
	}
	var logits []float32
	if n == len(e.tokens) && n == len(prompt) {
		logits = e.logits
	}
	return n, logits, nil
}

func (c *modelCache) save(prompt []int32, logits []float32) error {
	if c.m.pc == nil {
		return nil
	}
	cfg := c.m.Config()
	return c.m.pc.save(prompt, c.c, cfg.KVBytes(c.c.Type(), len(prompt)), logits)
}

// restorePrefix brings in a shared prefix longer than the common prefix
// the session's cache holds, and returns the new common length.
func (g *generation) restorePrefix(ps prefixStore, prompt []int32, common int) (int, error) {
	s := g.s
	n, logits, err := ps.restore(prompt, common)
	if err != nil {
		return common, fmt.Errorf("smollm3: reusing a shared prompt prefix: %w", err)
	}
	if n <= common {
		return common, nil
	}
	s.tokens = append(s.tokens[:common], prompt[common:n]...)
	s.promptEnd = -1
	if logits != nil {
		s.promptLogits = append(s.promptLogits[:0], logits...)
		s.promptEnd = n
	}
	g.stats.SharedCachedTokens = n - common
	return n, nil
}

var _ prefixStore = (*modelCache)(nil)
