package smollm3

import (
	"context"
	"errors"
	"fmt"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/llama"
)

// newBackend returns the engine backend that runs llm on device ("" or
// "cpu").
func newBackend(llm *llama.Model, kv llama.CacheOptions, cfg engine.Config) (engine.Backend, error) {
	if cfg.Device != "" && cfg.Device != "cpu" {
		return nil, fmt.Errorf("device %q: this build runs on the CPU only", cfg.Device)
	}
	batch := cfg.BatchSize
	if batch == 0 {
		batch = llama.DefaultBatchSize
	}
	return &cpuBackend{llm: llm, kv: kv, batch: batch}, nil
}

// cpuBackend runs the sequences of a step one after the other through
// llama.Model.Forward.
type cpuBackend struct {
	llm   *llama.Model
	kv    llama.CacheOptions
	batch int
}

func (b *cpuBackend) Vocab() int     { return b.llm.Config.Vocab }
func (b *cpuBackend) BatchSize() int { return b.batch }

func (b *cpuBackend) NewCache() (engine.Cache, error) {
	c, err := b.llm.NewCache(b.kv)
	if err != nil {
		return nil, err
	}
	return &seqCache{c}, nil
}

func (b *cpuBackend) Step(ctx context.Context, batch []engine.Seq) error {
	V := b.llm.Config.Vocab
	for i, s := range batch {
		c, ok := s.Cache.(*seqCache)
		if !ok || c.Cache == nil {
			return b.undo(batch[:i], fmt.Errorf("sequence %d: a cache this backend did not make", i))
		}
		rows := len(s.Logits) / V
		out, err := b.llm.Forward(ctx, c.Cache, s.Tokens, c.Len(), rows > 1)
		if err != nil {
			return b.undo(batch[:i], fmt.Errorf("sequence %d: %w", i, err))
		}
		if rows > 0 {
			copy(s.Logits, out[len(out)-rows*V:])
		}
	}
	return nil
}

// undo takes the sequences that already ran back to where they were.
func (b *cpuBackend) undo(done []engine.Seq, err error) error {
	for _, s := range done {
		s.Cache.Truncate(s.Cache.Len() - len(s.Tokens))
	}
	return err
}

// seqCache is a llama.Cache as an engine.Cache.
type seqCache struct{ *llama.Cache }

func (c *seqCache) Close() error {
	c.Cache = nil
	return nil
}

func (c *seqCache) Clone(n int) (engine.Cache, error) {
	cc, err := c.Cache.Clone(n)
	if err != nil {
		return nil, err
	}
	return &seqCache{cc}, nil
}

func (c *seqCache) CopyFrom(src engine.Cache, from, to int) error {
	s, ok := src.(*seqCache)
	if !ok {
		return errors.New("smollm3: copying from a cache of another kind")
	}
	return c.Cache.CopyFrom(s.Cache, from, to)
}
