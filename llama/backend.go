package llama

import (
	"context"
	"fmt"

	"github.com/smolgo/smolgo/engine"
)

// BackendOptions configure NewBackend; the zero value means f16 caches as
// long as the model's context and the model's batch size.
type BackendOptions struct {
	KVType KVType // element type of every cache
	// MaxLen is each cache's length; 0 means Config.Context (a longer one
	// extrapolates positions: see CacheOptions.MaxLen).
	MaxLen int
	// BatchSize is the most tokens one Step takes in one pass, all
	// sequences together; 0 means the model's (Options.BatchSize).
	BatchSize int
}

// NewBackend returns m as an engine.Backend: Step runs one forward pass over
// all the sequences of a batch (continuous batching), reading each weight
// once per pass for all of them, with per-sequence KV caches, positions and
// attention. A batch of more than BatchSize tokens runs in several passes,
// each sequence cut at multiples of BatchSize as Forward cuts it.
//
// A sequence's logits are bit for bit those Forward gives it alone
// (step.go explains how), so batching changes no output. Two limits: the
// AVX-512 kernels of q4_0 weights, and of q8_0 rows of an odd number of
// blocks, still round differently with one row and with several (see
// quant.MatMulFunc); and a chunk of 24 or more tokens has its logits
// computed as Forward's only when it asks for one row or all of them.
//
// Its caches implement engine.Snapshotter and engine.Shifter. Steady-state
// steps allocate nothing: the work buffers belong to the backend and are
// reused (Step is called from one goroutine at a time, as engine.Backend
// requires).
func NewBackend(m *Model, opts BackendOptions) (engine.Backend, error) {
	if opts.BatchSize < 0 {
		return nil, fmt.Errorf("llama: negative batch size %d", opts.BatchSize)
	}
	b := &backend{m: m, kv: CacheOptions{Type: opts.KVType, MaxLen: opts.MaxLen}, batch: opts.BatchSize}
	if b.batch == 0 {
		b.batch = m.batch
	}
	// Check the options once, by making a cache.
	if _, err := m.NewCache(b.kv); err != nil {
		return nil, err
	}
	return b, nil
}

type backend struct {
	m     *Model
	kv    CacheOptions
	batch int
	work  buffers
	step  uint64 // counts Steps: marks the caches already in the batch
}

func (b *backend) Vocab() int     { return b.m.Config.Vocab }
func (b *backend) BatchSize() int { return b.batch }

func (b *backend) NewCache() (engine.Cache, error) {
	c, err := b.m.NewCache(b.kv)
	if err != nil {
		return nil, err
	}
	return &seqCache{Cache: c, b: b}, nil
}

// Step implements engine.Backend.
func (b *backend) Step(ctx context.Context, batch []engine.Seq) error {
	w := &b.work
	b.step++
	V := b.m.Config.Vocab
	jobs := w.jobs[:0]
	for i, s := range batch {
		c, ok := s.Cache.(*seqCache)
		switch {
		case !ok || c.b != b:
			return fmt.Errorf("llama: sequence %d: a cache this backend did not make", i)
		case c.closed:
			return fmt.Errorf("llama: sequence %d: the cache is closed", i)
		case c.step == b.step:
			return fmt.Errorf("llama: sequence %d: its cache is already in the batch", i)
		case len(s.Tokens) == 0:
			return fmt.Errorf("llama: sequence %d: no tokens", i)
		case len(s.Logits)%V != 0 || len(s.Logits) > len(s.Tokens)*V:
			return fmt.Errorf("llama: sequence %d: %d logits is not a whole number of rows of %d for at most %d tokens", i, len(s.Logits), V, len(s.Tokens))
		case c.n+len(s.Tokens) > c.maxLen:
			return fmt.Errorf("llama: sequence %d: %d cached + %d new tokens exceed the cache length %d: %w", i, c.n, len(s.Tokens), c.maxLen, ErrContextFull)
		}
		for k, t := range s.Tokens {
			if t < 0 || int(t) >= V {
				return fmt.Errorf("llama: sequence %d: token %d at index %d is outside the vocabulary [0, %d)", i, t, k, V)
			}
		}
		c.step = b.step
		jobs = append(jobs, job{c: c.Cache, tokens: s.Tokens, out: s.Logits})
	}
	w.jobs = jobs
	if err := ctx.Err(); err != nil {
		return err
	}
	err := b.m.run(ctx, w, jobs, b.batch)
	clear(jobs) // drop the references to the callers' memory
	clear(w.pieces[:cap(w.pieces)])
	return err
}

// seqCache is a Cache made by a backend, as an engine.Cache.
type seqCache struct {
	*Cache
	b      *backend
	step   uint64 // the last Step that took it
	closed bool
}

// Close frees the cache's memory; the backend refuses it afterwards.
func (c *seqCache) Close() error {
	if !c.closed {
		c.closed = true
		c.release()
	}
	return nil
}

// Clone implements engine.Snapshotter.
func (c *seqCache) Clone(n int) (engine.Cache, error) {
	if c.closed {
		return nil, fmt.Errorf("llama: cloning a closed cache")
	}
	d, err := c.Cache.Clone(n)
	if err != nil {
		return nil, err
	}
	return &seqCache{Cache: d, b: c.b}, nil
}

// CopyFrom implements engine.Snapshotter: src must be a cache of the same
// backend.
func (c *seqCache) CopyFrom(src engine.Cache, from, to int) error {
	s, ok := src.(*seqCache)
	switch {
	case !ok || s.b != c.b:
		return fmt.Errorf("llama: copying from a cache another backend made")
	case c.closed || s.closed:
		return fmt.Errorf("llama: copying with a closed cache")
	}
	return c.Cache.CopyFrom(s.Cache, from, to)
}

// Shift implements engine.Shifter (see Cache.Shift).
func (c *seqCache) Shift(keep, drop int) error {
	if c.closed {
		return fmt.Errorf("llama: shifting a closed cache")
	}
	return c.Cache.Shift(keep, drop)
}

// Truncate implements engine.Cache (see Cache.Truncate).
func (c *seqCache) Truncate(n int) error {
	if c.closed {
		return fmt.Errorf("llama: truncating a closed cache")
	}
	return c.Cache.Truncate(n)
}
