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

// Model is a loaded model of any registered family, ready for
// conversations: an engine.Model (whose methods, NewSession first, it has)
// over its family's block on the chosen device and its family's format,
// plus the parts underneath for callers that want them (the weights, the
// CPU runner for Forward, the file). It is safe for concurrent use; two
// models in one process are independent.
type Model struct {
	*engine.Model
	parts
}

// parts are what a model is made of besides the engine.
type parts struct {
	file    *gguf.File
	weights *llama.Weights
	cpu     *llama.CPU // nil when the model runs on another device
	kv      llama.CacheOptions
	backend engine.Backend
	format  engine.Format

	pooling    engine.Pooling // the file's pooling_type
	matryoshka []int          // the file's engine.MatryoshkaKey
}

// Load opens a GGUF file of any registered family and builds the model:
// config from the file's keys, the family's block description, every
// tensor checked, the device and engine settings of opts (threads, KV cache
// type and length, prompt cache, batching). Close the model to release the
// file.
func Load(path string, opts ...engine.Option) (*Model, error) {
	cfg, err := engine.NewConfig(opts...)
	if err != nil {
		return nil, fmt.Errorf("family: %w", err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("family: %w", err)
	}
	m, err := newModel(f, cfg)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// New builds a model over an already open GGUF file, which the model then
// owns (Model.Close closes it).
func New(f *gguf.File, opts ...engine.Option) (*Model, error) {
	cfg, err := engine.NewConfig(opts...)
	if err != nil {
		return nil, fmt.Errorf("family: %w", err)
	}
	return newModel(f, cfg)
}

func newModel(f *gguf.File, cfg engine.Config) (*Model, error) {
	arch, err := f.Architecture()
	if err != nil {
		return nil, fmt.Errorf("family: %w", err)
	}
	fam, ok := Lookup(arch)
	if !ok {
		return nil, unsupported(arch)
	}
	p, err := build(fam, f, cfg)
	if err != nil {
		return nil, err
	}
	if cfg.Pooling == engine.PoolDefault {
		cfg.Pooling = p.pooling
	}
	if cfg.Matryoshka == nil {
		cfg.Matryoshka = p.matryoshka
	}
	if cfg.PromptCacheDir != "" && cfg.ModelID == "" {
		cfg.ModelID = f.Fingerprint() // prompt-cache files are for these weights only
	}
	em, err := engine.New(p.backend, p.format, cfg)
	if err != nil {
		p.closeBackend()
		return nil, fmt.Errorf("family: %w", err)
	}
	return &Model{Model: em, parts: *p}, nil
}

// build reads the description and the weights and puts them on the device.
func build(fam Family, f *gguf.File, cfg engine.Config) (*parts, error) {
	lcfg, err := llama.ConfigFromGGUF(f)
	if err != nil {
		return nil, err
	}
	arch, err := fam.Describe(f, lcfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", fam.Arch, err)
	}
	if arch.Name == "" {
		arch.Name = fam.Arch
	}
	// The caches' length picks a LongRoPE model's rotation, as llama.cpp's
	// context length does (0: the training context).
	arch = arch.ForContext(cmp.Or(cfg.Context, lcfg.Context))
	w, err := llama.LoadWeights(f, lcfg, arch)
	if err != nil {
		return nil, err
	}
	kvType, err := llama.ParseKVType(cfg.KVType)
	if err != nil {
		return nil, err
	}
	format, err := fam.Format(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", fam.Arch, err)
	}
	if cfg.ChatTemplate != "" { // engine.WithChatTemplate replaces the file's template
		if format, err = TemplateFormat(f, cfg.ChatTemplate); err != nil {
			return nil, err
		}
	}
	pooling, matryoshka, err := embedKeys(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", fam.Arch, err)
	}
	b, err := llama.NewBackend(w, llama.DeviceOptions{Device: cfg.Device, Threads: cfg.Threads, BatchSize: cfg.BatchSize,
		KVType: kvType, MaxLen: cfg.Context, KeepLayout: cfg.KeepLayout, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	p := &parts{file: f, weights: w, kv: llama.CacheOptions{Type: kvType, MaxLen: cfg.Context}, backend: b, format: format,
		pooling: pooling, matryoshka: matryoshka}
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
	return p, nil
}

// closeBackend releases the backend (its threads, a GPU's memory).
func (p *parts) closeBackend() error {
	if c, ok := p.backend.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// close releases the backend and the file.
func (p *parts) close() error {
	err := p.closeBackend()
	if err2 := p.file.Close(); err == nil {
		err = err2
	}
	return err
}

// Close stops the model: running generations end (see engine.Model.Close),
// then the backend stops and the file is unmapped.
func (m *Model) Close() error {
	err := m.Model.Close()
	if err2 := m.parts.close(); err == nil {
		err = err2
	}
	return err
}

// Arch is the model's block description.
func (m *Model) Arch() llama.Arch { return m.weights.Arch }

// Weights are the model's tensors as the file holds them.
func (m *Model) Weights() *llama.Weights { return m.weights }

// LLM returns the CPU runner underneath (its Config, Forward for callers
// that want logits without sessions), or nil when the model runs on another
// device.
func (m *Model) LLM() *llama.CPU { return m.cpu }

// KVType returns the element type of the KV caches (engine.WithKVType).
func (m *Model) KVType() llama.KVType { return m.kv.Type }

// File returns the underlying GGUF file (metadata such as the tokenizer).
func (m *Model) File() *gguf.File { return m.file }

// Tokenizer returns the model's tokenizer, read from the GGUF file's
// tokenizer.* keys on first use and shared by every session.
func (m *Model) Tokenizer() (*tokenizer.Tokenizer, error) {
	if f, ok := m.format.(*Format); ok {
		return f.tokenizer()
	}
	return tokenizer.FromGGUF(m.file)
}

// NewCache returns an empty KV cache for Forward, with the KV type and
// length chosen at load. It needs the CPU runner.
func (m *Model) NewCache() (*llama.Cache, error) {
	if m.cpu == nil {
		return nil, fmt.Errorf("family: NewCache and Forward run on the CPU; this model runs on %s", m.Config().Device)
	}
	return m.cpu.NewCache(m.kv)
}

// Forward runs tokens at positions pos... through the model and returns the
// logits of the last token, or of every token with allLogits; see
// llama.CPU.Forward for the contract (pos must equal cache.Len(); the
// returned slice is reused by the next call). Sessions do not go through
// it: they are batched by the engine.
func (m *Model) Forward(ctx context.Context, cache *llama.Cache, tokens []int32, pos int, allLogits bool) ([]float32, error) {
	if m.cpu == nil {
		return nil, fmt.Errorf("family: Forward runs on the CPU; this model runs on %s", m.Config().Device)
	}
	return m.cpu.Forward(ctx, cache, tokens, pos, allLogits)
}
