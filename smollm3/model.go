package smollm3

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/llama"
	"github.com/smolgo/smolgo/rope"
	"github.com/smolgo/smolgo/tokenizer"
)

// ErrContextFull is wrapped by errors for a sequence longer than the
// context (or the cache length chosen with WithContext).
var ErrContextFull = llama.ErrContextFull

// NoPEPeriod is SmolLM3's RoPE rule: layer i applies RoPE iff
// (i+1) % NoPEPeriod != 0, so layers 3, 7, 11, ... have no positional
// encoding. GGUF files have no key for it; llama.cpp hard-codes it too.
const NoPEPeriod = 4

// NoPEMask returns SmolLM3's NoPE mask for a model of the given depth.
func NoPEMask(layers int) rope.NoPE { return rope.EveryNth(layers, NoPEPeriod) }

// Model is a loaded SmolLM3 (or plain llama) GGUF model. Its weights stay
// in the file's memory mapping. A Model is safe for concurrent use; each
// sequence (session) needs its own cache from NewCache.
type Model struct {
	file *gguf.File
	llm  *llama.Model
	opts options
	pc   *PromptCache // shared by the sessions; nil without WithPromptCache

	// The tokenizer is built on first use (reading SmolLM3's 128K-token
	// vocabulary takes a fraction of a second; Load stays fast).
	tokOnce sync.Once
	tok     *tokenizer.Tokenizer
	tokErr  error
}

// Tokenizer returns the model's tokenizer, read from the GGUF file's
// tokenizer.* keys on the first call and shared by every session.
func (m *Model) Tokenizer() (*tokenizer.Tokenizer, error) {
	m.tokOnce.Do(func() {
		m.tok, m.tokErr = tokenizer.FromGGUF(m.file)
		if m.tokErr != nil {
			m.tokErr = fmt.Errorf("smollm3: loading the tokenizer: %w", m.tokErr)
		}
	})
	return m.tok, m.tokErr
}

type options struct {
	threads int
	kvType  llama.KVType
	context int
	batch   int
	nope    rope.NoPE
	nopeSet bool
	logger  *slog.Logger
	// promptCache bounds the shared prompt cache (bytes); 0: none.
	promptCache int64
}

// An Option changes how Load builds a Model.
type Option func(*options)

// WithThreads sets the number of threads per matrix product
// (default runtime.NumCPU()).
func WithThreads(n int) Option { return func(o *options) { o.threads = n } }

// WithKVType sets the KV cache element type of caches made by NewCache
// (default llama.KVF16, like llama.cpp). llama.KVQ8_0 halves the cache's
// memory (llama.cpp's -ctk q8_0 -ctv q8_0) for long contexts, at the cost of
// logits that move about as much as a quantized model's do (see
// llama.KVQ8_0).
func WithKVType(t llama.KVType) Option { return func(o *options) { o.kvType = t } }

// WithContext bounds the caches made by NewCache to n positions (default:
// the model's context length). Cache memory grows with use up to this bound.
func WithContext(n int) Option { return func(o *options) { o.context = n } }

// WithNoPE overrides which layers skip RoPE (default: SmolLM3's rule for the
// smollm3 architecture, none for llama). A nil mask rotates every layer.
func WithNoPE(mask rope.NoPE) Option {
	return func(o *options) { o.nope, o.nopeSet = mask, true }
}

// WithBatchSize sets the most tokens one pass through the layers takes
// (llama.cpp's n_ubatch, default llama.DefaultBatchSize = 512); longer
// prompts run in several passes.
func WithBatchSize(n int) Option { return func(o *options) { o.batch = n } }

// WithLogger sets the logger for load-time messages (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// Load opens a GGUF file and builds the model: config from the smollm3.*
// (or llama.*) keys, shapes of every tensor checked, tied embeddings
// (output.weight when present, else token_embd.weight, not copied) and the
// NoPE mask. Close the model to release the file.
func Load(path string, opts ...Option) (*Model, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if o.logger == nil {
		o.logger = slog.Default()
	}
	if o.context < 0 {
		return nil, fmt.Errorf("smollm3: negative context %d", o.context)
	}
	f, err := gguf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("smollm3: %w", err)
	}
	m, err := New(f, opts...)
	if err != nil {
		f.Close()
		return nil, err
	}
	return m, nil
}

// New builds a model over an already open GGUF file, which the model then
// owns (Model.Close closes it).
func New(f *gguf.File, opts ...Option) (*Model, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if o.logger == nil {
		o.logger = slog.Default()
	}
	cfg, err := llama.ConfigFromGGUF(f)
	if err != nil {
		return nil, fmt.Errorf("smollm3: %w", err)
	}
	nope := o.nope
	if !o.nopeSet && cfg.Arch == "smollm3" {
		nope = NoPEMask(cfg.Layers)
	}
	llm, err := llama.New(f, llama.Options{Threads: o.threads, NoPE: nope, BatchSize: o.batch})
	if err != nil {
		return nil, fmt.Errorf("smollm3: %w", err)
	}
	o.logger.Debug("smollm3: model loaded", "arch", cfg.Arch, "layers", cfg.Layers, "embd", cfg.Embd,
		"heads", cfg.Heads, "kv_heads", cfg.KVHeads, "vocab", cfg.Vocab, "context", cfg.Context,
		"tied", llm.TiedEmbeddings(), "threads", llm.Threads())
	m := &Model{file: f, llm: llm, opts: o}
	if o.promptCache > 0 {
		m.pc = newPromptCache(o.promptCache)
	}
	return m, nil
}

// Close stops the model's threads and unmaps the file. Call it only after
// every Forward (and every session's generation) has returned: the weights
// live in the mapping.
func (m *Model) Close() error {
	m.llm.Close()
	return m.file.Close()
}

// Config returns the model's hyper-parameters.
func (m *Model) Config() llama.Config { return m.llm.Config }

// File returns the underlying GGUF file (metadata such as the tokenizer).
func (m *Model) File() *gguf.File { return m.file }

// LLM returns the generic llama-family model underneath.
func (m *Model) LLM() *llama.Model { return m.llm }

// KVType returns the element type of the caches NewCache makes (WithKVType).
func (m *Model) KVType() llama.KVType { return m.opts.kvType }

// NewCache returns an empty KV cache for one sequence, with the KV type and
// length chosen at Load.
func (m *Model) NewCache() (*llama.Cache, error) {
	return m.llm.NewCache(llama.CacheOptions{Type: m.opts.kvType, MaxLen: m.opts.context})
}

// Forward runs tokens at positions pos... through the model and returns the
// logits of the last token, or of every token with allLogits; see
// llama.Model.Forward for the contract (pos must equal cache.Len(); the
// returned slice is reused by the next call).
func (m *Model) Forward(ctx context.Context, cache *llama.Cache, tokens []int32, pos int, allLogits bool) ([]float32, error) {
	return m.llm.Forward(ctx, cache, tokens, pos, allLogits)
}
