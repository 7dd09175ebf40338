package engine

import (
	"fmt"
	"log/slog"
	"runtime"
)

// Config holds the settings of a loaded model. Some are for the
// architecture's loader (how to build the backend: threads, KV cache type,
// context length, device), the rest for the engine (prompt cache, batching,
// speculation). Open fills it from Options; New reads the engine's part.
type Config struct {
	// Threads is the number of CPU threads per forward step (default
	// runtime.NumCPU(); at most MaxThreads).
	Threads int
	// KVType is the KV cache element type by the name llama.cpp's -ctk/-ctv
	// flags use: "f16" (default), "f32" or "q8_0".
	KVType string
	// ChatTemplate, when set, is a Jinja chat template that replaces the
	// file's (WithChatTemplate).
	ChatTemplate string
	// Context bounds each sequence's cache to this many positions (default:
	// the model's trained context).
	Context int
	// BatchSize is the most tokens one forward step takes (llama.cpp's
	// n_ubatch; default 512).
	BatchSize int
	// Device runs the model on "cpu" (default) or "cuda:N" (a binary built
	// with -tags cuda).
	Device string
	// Logger receives load and scheduling messages (default slog.Default()).
	Logger *slog.Logger

	// PromptCacheBytes bounds the prompt cache shared by the sessions (see
	// PromptCache); 0 means none.
	PromptCacheBytes int64
	// PromptCacheDir keeps the prompt cache's snapshots on disk as well,
	// in a subdirectory of this directory per model and cache layout, so
	// that a restarted process (or another replica with the same model)
	// finds the prompts computed before (see PromptCache). It needs
	// PromptCacheBytes (snapshots are read into memory to be used), a
	// ModelID, and a backend whose caches implement Persister; without the
	// last the cache stays in memory, with a log line. "" means memory only.
	PromptCacheDir string
	// PromptCacheDiskBytes bounds the files of PromptCacheDir's
	// subdirectory, least recently used out first (default
	// DefaultPromptCacheDiskBytes).
	PromptCacheDiskBytes int64
	// ModelID identifies the weights, so that prompt-cache files computed
	// by other weights are never used: Open and package family set it to
	// the file's gguf.File.Fingerprint when PromptCacheDir is set. Callers
	// of New set it themselves.
	ModelID string
	// MaxSequences is the most generations computed together in one
	// forward step (continuous batching); more wait their turn in order of
	// arrival. Default DefaultMaxSequences.
	MaxSequences int
	// PrefillChunk is how many prompt tokens of one sequence a step
	// computes while other sequences decode (a multiple of 64; default
	// DefaultPrefillChunk). It bounds how long a long new prompt delays the
	// others' next token. Alone, a sequence computes up to BatchSize prompt
	// tokens per step, in whole chunks.
	PrefillChunk int
	// KeepLayout keeps the weights in the file's layout on the CPU. By
	// default the matrices whose type the CPU's kernels interleave (q4_K and
	// q6_K on AVX2) get an interleaved copy at load, in place of the file's
	// pages in memory: steps of several sequences and prefill run faster
	// and loading takes a second or two longer. A GPU always reads the
	// file's layout.
	KeepLayout bool
	// Speculation turns lookup speculative decoding on by default (see
	// GenerateOptions.Speculation): drafts copied from the prompt and the
	// answer so far, checked in one multi-token step.
	Speculation bool
	// Pooling is the model's own pooling for embeddings (Embed's default):
	// Open takes the file's <arch>.pooling_type unless this is set, which
	// overrides it as llama.cpp's --pooling does.
	Pooling Pooling
	// Matryoshka lists the widths the model's embeddings may be truncated
	// to (EmbedOptions.Dimensions): Open takes the file's (see
	// MatryoshkaKey) unless this is set.
	Matryoshka []int

	optErr error // an option's error, reported by normalize
}

// Defaults of Config.
const (
	DefaultMaxSequences = 4
	// DefaultPrefillChunk is the smallest chunk that keeps a prompt's
	// logits the same whether or not others decode beside it (a step of
	// 64 or more of a sequence's tokens takes the blocked attention path,
	// and whole chunks are merged when the prompt runs alone). Measured on
	// the 3B model with AVX2 (2 Zen 3 cores, two alternating rounds), a
	// 2,000-token prompt arriving while 3 streams decode froze them for at
	// most 3.5-3.7 s with 64 against 6.3-6.6 s with 128, and its own first
	// token came after 93-94 s against 87-89 s: the multi-token products
	// cost about the same per token at 64 as at 128 (only the weights are
	// read twice as often), and alone a prompt still runs in steps of up to
	// BatchSize tokens.
	DefaultPrefillChunk = 64
	// MaxThreads bounds Config.Threads.
	MaxThreads = 1024
	// DefaultPromptCacheDiskBytes bounds PromptCacheDir's files by
	// default: 8 GiB, about 70,000 positions of a 0.6B model's f16 cache or
	// 110,000 of SmolLM3-3B's.
	DefaultPromptCacheDiskBytes = 8 << 30
)

// An Option changes a Config.
type Option func(*Config)

// WithThreads sets the number of CPU threads per forward step.
func WithThreads(n int) Option { return func(c *Config) { c.Threads = n } }

// WithChatTemplate renders prompts with a Jinja chat template of your
// own instead of the file's tokenizer.chat_template (llama-server's
// --chat-template-file): the reasoning and tool-call markers are read
// from it as for any template the engine renders.
func WithChatTemplate(src string) Option { return func(c *Config) { c.ChatTemplate = src } }

// WithKVType sets the KV cache type: "f16", "f32" or "q8_0".
func WithKVType(t string) Option { return func(c *Config) { c.KVType = t } }

// WithContext bounds every sequence's cache to n positions.
func WithContext(n int) Option { return func(c *Config) { c.Context = n } }

// WithBatchSize sets the most tokens one forward step takes.
func WithBatchSize(n int) Option { return func(c *Config) { c.BatchSize = n } }

// WithDevice picks where the model runs: "cpu" or "cuda:N".
func WithDevice(d string) Option { return func(c *Config) { c.Device = d } }

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(c *Config) { c.Logger = l } }

// WithPromptCache gives the model a PromptCache of at most maxBytes of
// snapshots, shared by all its sessions.
func WithPromptCache(maxBytes int64) Option {
	return func(c *Config) { c.PromptCacheBytes = maxBytes }
}

// WithPromptCacheDir keeps the prompt cache's snapshots in dir too, at most
// maxBytes of files (0: DefaultPromptCacheDiskBytes), so that they survive a
// restart (see Config.PromptCacheDir).
func WithPromptCacheDir(dir string, maxBytes int64) Option {
	return func(c *Config) { c.PromptCacheDir, c.PromptCacheDiskBytes = dir, maxBytes }
}

// WithModelID sets the identity of the weights that prompt-cache files are
// checked against (see Config.ModelID).
func WithModelID(id string) Option { return func(c *Config) { c.ModelID = id } }

// WithMaxSequences sets how many generations share a forward step.
func WithMaxSequences(n int) Option { return func(c *Config) { c.MaxSequences = n } }

// WithPrefillChunk sets the prompt tokens per step of a sequence while
// others decode.
func WithPrefillChunk(n int) Option { return func(c *Config) { c.PrefillChunk = n } }

// WithKeepLayout keeps the weights in the file's layout (see
// Config.KeepLayout).
func WithKeepLayout(keep bool) Option { return func(c *Config) { c.KeepLayout = keep } }

// WithSpeculation turns lookup speculative decoding on or off by default.
func WithSpeculation(on bool) Option { return func(c *Config) { c.Speculation = on } }

// WithPooling sets the model's pooling for embeddings: "mean", "cls",
// "last" or "rank", overriding the file's (an unknown name is an error of
// NewConfig and Open).
func WithPooling(p string) Option {
	return func(c *Config) {
		v, err := ParsePooling(p)
		if err != nil {
			c.optErr = err
			return
		}
		c.Pooling = v
	}
}

// WithMatryoshka declares the widths the model's embeddings may be
// truncated to (see MatryoshkaKey), for a file that does not say.
func WithMatryoshka(dims ...int) Option {
	return func(c *Config) { c.Matryoshka = append([]int(nil), dims...) }
}

// NewConfig applies opts to the defaults and checks the result.
func NewConfig(opts ...Option) (Config, error) {
	var c Config
	for _, o := range opts {
		o(&c)
	}
	return c, c.normalize()
}

// normalize fills in defaults and reports settings out of range.
func (c *Config) normalize() error {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Threads == 0 {
		c.Threads = runtime.NumCPU()
	}
	if c.KVType == "" {
		c.KVType = "f16"
	}
	if c.Device == "" {
		c.Device = "cpu"
	}
	if c.MaxSequences == 0 {
		c.MaxSequences = DefaultMaxSequences
	}
	if c.PrefillChunk == 0 {
		c.PrefillChunk = DefaultPrefillChunk
	}
	if c.PromptCacheDir != "" && c.PromptCacheDiskBytes == 0 {
		c.PromptCacheDiskBytes = DefaultPromptCacheDiskBytes
	}
	for _, d := range c.Matryoshka {
		if d <= 0 {
			return fmt.Errorf("engine: Matryoshka width %d is not positive", d)
		}
	}
	switch {
	case c.optErr != nil:
		return fmt.Errorf("engine: %w", c.optErr)
	case c.Pooling < PoolDefault || c.Pooling > PoolRank:
		return fmt.Errorf("engine: unknown pooling %v", c.Pooling)
	case c.Threads < 0 || c.Threads > MaxThreads:
		return fmt.Errorf("engine: %d threads; use 1 to %d (0 for one per CPU)", c.Threads, MaxThreads)
	case c.Context < 0:
		return fmt.Errorf("engine: negative context length %d", c.Context)
	case c.BatchSize < 0:
		return fmt.Errorf("engine: negative batch size %d", c.BatchSize)
	case c.PromptCacheBytes < 0:
		return fmt.Errorf("engine: negative prompt cache size %d", c.PromptCacheBytes)
	case c.PromptCacheDiskBytes < 0:
		return fmt.Errorf("engine: negative prompt cache disk size %d", c.PromptCacheDiskBytes)
	case c.PromptCacheDir != "" && c.PromptCacheBytes == 0:
		return fmt.Errorf("engine: a prompt cache on disk (%s) needs a prompt cache in memory too: its snapshots are read into memory to be used", c.PromptCacheDir)
	case c.MaxSequences < 0 || c.MaxSequences > 1024:
		return fmt.Errorf("engine: %d sequences per step; use 1 to 1024", c.MaxSequences)
	case c.PrefillChunk < 0 || c.PrefillChunk%64 != 0:
		return fmt.Errorf("engine: prefill chunk %d is not a positive multiple of 64", c.PrefillChunk)
	}
	return nil
}
