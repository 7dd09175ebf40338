package family

import (
	"cmp"
	"context"
	"fmt"
	"io"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/llama"
	"github.com/smolgo/smolgo/tokenizer"
)

// Parts are what a family's model is made of under the engine: its file,
// its block description and weights, the CPU runner that computes it (for
// Forward without sessions), the KV cache settings it was loaded with and
// its tokenizer. engine.Open makes them with the model; Of returns them.
// They live as long as the model (engine.Model.Close releases them) and
// are safe for concurrent use, each Forward with its own cache.
type Parts struct {
	file    *gguf.File
	weights *llama.Weights
	cpu     *llama.CPU // nil when the model runs on another device
	cache   llama.CacheOptions
	device  string
	backend engine.Backend
	format  engine.Format
}

// Of returns the parts of a model engine.Open loaded from a family's file,
// and false for any other model (an encoder's, or one made with
// engine.New). It is the one way to the parts under a family model, for
// tools and tests that need the logits without sessions, the weights or
// the file:
//
//	m, err := engine.Open("model.gguf")
//	...
//	p, _ := family.Of(m)
//	cache, err := p.NewCache()
//	logits, err := p.Forward(ctx, cache, tokens, 0, false)
func Of(m *engine.Model) (*Parts, bool) {
	p, ok := m.Parts().(*Parts)
	return p, ok
}

// load builds a model of family fam over f for engine.Open: the
// description for the file, resolved for the caches' length, the weights
// (checked against the description), the format, and the backend on the
// device cfg.Options names, made with those options unchanged.
func load(fam Family, f *gguf.File, cfg engine.Config) (engine.Loaded, error) {
	lcfg, arch, err := describe(fam, f)
	if err != nil {
		return engine.Loaded{}, err
	}
	// The caches' length picks a LongRoPE model's rotation, as llama.cpp's
	// context length does (0: the training context).
	arch = arch.ForContext(cmp.Or(cfg.Context, lcfg.Context))
	w, err := llama.LoadWeights(f, lcfg, arch)
	if err != nil {
		return engine.Loaded{}, err
	}
	format, err := fam.Format(f)
	if err != nil {
		return engine.Loaded{}, fmt.Errorf("%s: %w", fam.Arch, err)
	}
	if cfg.ChatTemplate != "" { // engine.WithChatTemplate replaces the file's template
		if format, err = TemplateFormat(f, cfg.ChatTemplate); err != nil {
			return engine.Loaded{}, err
		}
	}
	pooling, matryoshka, err := embedKeys(f)
	if err != nil {
		return engine.Loaded{}, fmt.Errorf("%s: %w", fam.Arch, err)
	}
	b, err := llama.NewBackend(w, cfg.Options)
	if err != nil {
		return engine.Loaded{}, err
	}
	p := &Parts{file: f, weights: w, cache: llama.CacheOptions{KVType: cfg.KVType, Context: cfg.Context},
		device: cfg.Device, backend: b, format: format}
	if c, ok := b.(interface{ CPU() *llama.CPU }); ok {
		p.cpu = c.CPU()
	}
	threads := 0
	if p.cpu != nil {
		threads = p.cpu.Threads()
	}
	cfg.Logger.Debug("family: model loaded", "arch", arch.Name, "features", arch.Features(), "layers", lcfg.Layers,
		"embd", lcfg.Embd, "heads", lcfg.Heads, "kv_heads", lcfg.KVHeads, "head_dim", lcfg.HeadDim, "vocab", lcfg.Vocab,
		"context", lcfg.Context, "tied", w.Tied(), "threads", threads, "device", cfg.Device)
	return engine.Loaded{Backend: b, Format: format, Pooling: pooling, Matryoshka: matryoshka, Parts: p, Close: p.close}, nil
}

// close releases the backend (its threads, a GPU's memory) and the file.
func (p *Parts) close() error {
	var err error
	if c, ok := p.backend.(io.Closer); ok {
		err = c.Close()
	}
	if err2 := p.file.Close(); err == nil {
		err = err2
	}
	return err
}

// Arch is the model's block description, resolved for its context length
// (llama.Arch.ForContext).
func (p *Parts) Arch() llama.Arch { return p.weights.Arch }

// Weights are the model's tensors as the file holds them.
func (p *Parts) Weights() *llama.Weights { return p.weights }

// CPU returns the CPU runner that computes the model (its Config, Forward
// for callers that want logits without sessions), or nil when the model
// runs on another device.
func (p *Parts) CPU() *llama.CPU { return p.cpu }

// KVType returns the element type of the KV caches (engine.WithKVType).
func (p *Parts) KVType() llama.KVType { return p.cache.KVType }

// File returns the underlying GGUF file (metadata such as the tokenizer).
func (p *Parts) File() *gguf.File { return p.file }

// Tokenizer returns the model's tokenizer, read from the GGUF file's
// tokenizer.* keys on first use and shared by every session.
func (p *Parts) Tokenizer() (*tokenizer.Tokenizer, error) {
	if f, ok := p.format.(*Format); ok {
		return f.tokenizer()
	}
	return tokenizer.FromGGUF(p.file)
}

// NewCache returns an empty KV cache for Forward, with the KV type and
// length chosen at load. It needs the CPU runner.
func (p *Parts) NewCache() (*llama.Cache, error) {
	if p.cpu == nil {
		return nil, fmt.Errorf("family: NewCache and Forward run on the CPU; this model runs on %s", p.device)
	}
	return p.cpu.NewCache(p.cache)
}

// Forward runs tokens at positions pos... through the model and returns the
// logits of the last token, or of every token with allLogits; see
// llama.CPU.Forward for the contract (pos must equal cache.Len(); the
// returned slice is reused by the next call). Sessions do not go through
// it: the engine batches them.
func (p *Parts) Forward(ctx context.Context, cache *llama.Cache, tokens []int32, pos int, allLogits bool) ([]float32, error) {
	if p.cpu == nil {
		return nil, fmt.Errorf("family: Forward runs on the CPU; this model runs on %s", p.device)
	}
	return p.cpu.Forward(ctx, cache, tokens, pos, allLogits)
}
