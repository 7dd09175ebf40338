package smollm3

import (
	"context"
	"fmt"
	"io"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/llama"
	"github.com/smolgo/smolgo/rope"
	"github.com/smolgo/smolgo/tokenizer"
)

// NoPEPeriod is SmolLM3's RoPE rule: layer i applies RoPE iff
// (i+1) % NoPEPeriod != 0, so layers 3, 7, 11, ... have no positional
// encoding. GGUF files have no key for it; llama.cpp hard-codes it too.
const NoPEPeriod = 4

// NoPEMask returns SmolLM3's NoPE mask for a model of the given depth.
func NoPEMask(layers int) rope.NoPE { return rope.EveryNth(layers, NoPEPeriod) }

func init() {
	// SmolLM3 files, and plain llama files run with SmolLM3's chat format
	// (for comparisons with llama.cpp on the same generic block).
	for _, arch := range []string{"smollm3", "llama"} {
		engine.Register(engine.Architecture{Name: arch, Load: func(f *gguf.File, cfg engine.Config) (engine.Loaded, error) {
			p, err := build(f, cfg)
			if err != nil {
				return engine.Loaded{}, err
			}
			return engine.Loaded{Backend: p.backend, Format: p.format, Close: p.close}, nil
		}})
	}
}

// Model is a loaded SmolLM3 (or plain llama) GGUF model ready for
// conversations: the generic llama block of package llama with SmolLM3's
// wiring, and SmolLM3's chat format, run by an engine.Model (whose methods,
// NewSession first, it has). Its weights stay in the file's memory mapping.
// It is safe for concurrent use; two models in one process are
// independent.
type Model struct {
	*engine.Model
	parts
}

// parts are what a model is made of besides the engine.
type parts struct {
	file    *gguf.File
	llm     *llama.Model
	kv      llama.CacheOptions
	backend engine.Backend
	format  *Format
}

// Load opens a GGUF file and builds the model: config from the smollm3.*
// (or llama.*) keys, the shape of every tensor checked, tied embeddings
// (output.weight when present, else token_embd.weight, not copied), the
// NoPE mask, and the engine with opts' settings (threads, KV cache type and
// length, prompt cache, batching). Close the model to release the file.
func Load(path string, opts ...engine.Option) (*Model, error) {
	cfg, err := engine.NewConfig(opts...)
	if err != nil {
		return nil, fmt.Errorf("smollm3: %w", err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("smollm3: %w", err)
	}
	m, err := newModel(f, cfg)
	if err != nil {
		f.Close()
		return nil, err
	}
	return m, nil
}

// New builds a model over an already open GGUF file, which the model then
// owns (Model.Close closes it).
func New(f *gguf.File, opts ...engine.Option) (*Model, error) {
	cfg, err := engine.NewConfig(opts...)
	if err != nil {
		return nil, fmt.Errorf("smollm3: %w", err)
	}
	return newModel(f, cfg)
}

func newModel(f *gguf.File, cfg engine.Config) (*Model, error) {
	p, err := build(f, cfg)
	if err != nil {
		return nil, err
	}
	em, err := engine.New(p.backend, p.format, cfg)
	if err != nil {
		p.llm.Close()
		return nil, fmt.Errorf("smollm3: %w", err)
	}
	return &Model{Model: em, parts: *p}, nil
}

// build wires the llama block, the backend and the format over f.
func build(f *gguf.File, cfg engine.Config) (*parts, error) {
	cfg2, err := llama.ConfigFromGGUF(f)
	if err != nil {
		return nil, fmt.Errorf("smollm3: %w", err)
	}
	var nope rope.NoPE
	if cfg2.Arch == "smollm3" {
		nope = NoPEMask(cfg2.Layers)
	}
	kvType, err := llama.ParseKVType(cfg.KVType)
	if err != nil {
		return nil, fmt.Errorf("smollm3: %w", err)
	}
	onCPU := cfg.Device == "" || cfg.Device == "cpu" // a GPU reads the file's layout
	llm, err := llama.New(f, llama.Options{Threads: cfg.Threads, NoPE: nope, BatchSize: cfg.BatchSize, KeepLayout: cfg.KeepLayout || !onCPU})
	if err != nil {
		return nil, fmt.Errorf("smollm3: %w", err)
	}
	kv := llama.CacheOptions{Type: kvType, MaxLen: cfg.Context}
	backend, err := newBackend(llm, kv, cfg)
	if err != nil {
		llm.Close()
		return nil, fmt.Errorf("smollm3: %w", err)
	}
	cfg.Logger.Debug("smollm3: model loaded", "arch", cfg2.Arch, "layers", cfg2.Layers, "embd", cfg2.Embd,
		"heads", cfg2.Heads, "kv_heads", cfg2.KVHeads, "vocab", cfg2.Vocab, "context", cfg2.Context,
		"tied", llm.TiedEmbeddings(), "threads", llm.Threads(), "device", cfg.Device)
	p := &parts{file: f, llm: llm, kv: kv, backend: backend, format: NewFormat(f)}
	return p, nil
}

// close releases the backend (a GPU's memory), the threads and the file.
func (p *parts) close() error {
	if c, ok := p.backend.(io.Closer); ok {
		c.Close()
	}
	p.llm.Close()
	return p.file.Close()
}

// Close stops the model: running generations end (see engine.Model.Close),
// then the threads stop and the file is unmapped.
func (m *Model) Close() error {
	err := m.Model.Close()
	if err2 := m.parts.close(); err == nil {
		err = err2
	}
	return err
}

// LLM returns the generic llama-family model underneath: its Config, its
// weights, and Forward for callers that want logits without sessions.
func (m *Model) LLM() *llama.Model { return m.llm }

// KVType returns the element type of the KV caches (engine.WithKVType).
func (m *Model) KVType() llama.KVType { return m.kv.Type }

// File returns the underlying GGUF file (metadata such as the tokenizer).
func (m *Model) File() *gguf.File { return m.file }

// Tokenizer returns the model's tokenizer, read from the GGUF file's
// tokenizer.* keys on first use and shared by every session.
func (m *Model) Tokenizer() (*tokenizer.Tokenizer, error) { return m.format.tokenizer() }

// NewCache returns an empty KV cache for Forward, with the KV type and
// length chosen at Load.
func (m *Model) NewCache() (*llama.Cache, error) { return m.llm.NewCache(m.kv) }

// Forward runs tokens at positions pos... through the model and returns the
// logits of the last token, or of every token with allLogits; see
// llama.Model.Forward for the contract (pos must equal cache.Len(); the
// returned slice is reused by the next call). Sessions do not go through
// it: they are batched by the engine.
func (m *Model) Forward(ctx context.Context, cache *llama.Cache, tokens []int32, pos int, allLogits bool) ([]float32, error) {
	return m.llm.Forward(ctx, cache, tokens, pos, allLogits)
}
