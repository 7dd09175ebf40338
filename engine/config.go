package engine

import (
	"fmt"
	"log/slog"
	"runtime"

	"github.com/smolgo/smolgo/backend"
)

// Config holds the settings of a loaded model: the Options that say how
// the architecture's loader puts the weights to work (device, threads,
// batch size, KV cache type and length, layout), which it hands to the
// device unchanged, and the engine's own (prompt cache, batching,
// speculation, embeddings). Open fills it from Options (WithThreads,
// WithKVType, ...); New reads the engine's part.
type Config struct {
	// Options go to the architecture's loader and from it to the device
	// (backend.Options: Device, Threads, BatchSize, KVType, Context,
	// KeepLayout, Logger). NewConfig sets Threads to runtime.NumCPU(),
	// Device to "cpu" and Logger to slog.Default() where they are unset;
	// the engine logs scheduling messages to Logger too.
	backend.Options
	// ChatTemplate, when set, is a Jinja chat template that replaces the
	// file's (WithChatTemplate).
	ChatTemplate string
	// Projector, when set, is the path of a vision projector (an mmproj
	// GGUF) that Open loads beside the text model, so that messages can
	// carry images (WithProjector).
	Projector string
	// MaxImagePixels is the most pixels an image may have, read from its
	// header before it is decoded (0: the projector's default, 2^25).
	MaxImagePixels int

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
	// by other weights are never used: Open sets it to the file's
	// gguf.File.Fingerprint when PromptCacheDir is set. Callers of New set
	// it themselves.
	ModelID string
	// MaxSequences is the most generations computed together in one
	// forward step (continuous batching); more wait their turn in order of
	// arrival. Default DefaultMaxSequences.
	MaxSequences int
	// CheckpointInterval is how often, in prompt tokens, a model with
	// recurrent layers (whose caches go back only to where they kept
	// their state: Checkpointer) keeps its state while computing a
	// prompt, besides at the prompt's end; 0 means
	// DefaultCheckpointInterval, a negative number only at the end. A
	// conversation or a shared prompt whose next use diverges from the
	// cached tokens resumes from the last checkpoint before the
	// divergence.
	CheckpointInterval int
	// PrefillChunk is how many prompt tokens of one sequence a step
	// computes while other sequences decode (a multiple of 64; default
	// DefaultPrefillChunk). It bounds how long a long new prompt delays the
	// others' next token. Alone, a sequence computes up to BatchSize prompt
	// tokens per step, in whole chunks.
	PrefillChunk int
	// Speculation turns lookup speculative decoding on by default (see
	// GenerateOptions.Speculation): drafts copied from the prompt and the
	// answer so far, checked in one multi-token step.
	Speculation bool
	// Draft is a second model, of the same vocabulary and smaller, that
	// drafts the next tokens for this one (speculative decoding with a
	// draft model, WithDraft): each step the draft model proposes up to
	// DraftMax tokens one by one, and this model checks them all in one
	// step, keeping what it confirms (see GenerateOptions.Drafter). The
	// answers are those of this model alone: the same tokens greedily, the
	// same distribution sampled. The caller opened the draft and closes it
	// after this model. New refuses a draft whose vocabulary differs.
	Draft *Model
	// MTP drafts with the model's own multi-token-prediction block
	// (WithMTP; a Qwen3.5 file's nextn_predict_layers, on a backend that
	// implements backend.NextNer): each step the block proposes up to
	// DraftMax tokens one by one, checked as a draft model's are. New
	// refuses it for a model without such a block.
	MTP bool
	// DraftMax is the most tokens a draft model proposes per step
	// (llama-server's --spec-draft-n-max; default DefaultDraftMax, at most
	// MaxDraft); DraftMin the fewest worth checking, a shorter draft being
	// dropped (--spec-draft-n-min, default 0); DraftPMin ends a draft
	// before a token that the draft model gives a probability below it
	// (--spec-draft-p-min, default 0: never), its confidence at
	// temperature 1 after the logit bias and the constraint.
	DraftMax, DraftMin int
	DraftPMin          float32
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
	// DefaultCheckpointInterval keeps a recurrent model's state every 1024
	// prompt tokens (two of llama.cpp's default micro-batches).
	DefaultCheckpointInterval = 1024
	// DefaultPrefillChunk is the smallest chunk that keeps a prompt's
	// logits the same whether or not others decode beside it (a step of
	// 64 or more of a sequence's tokens takes the blocked attention path,
	// and whole chunks are merged when the prompt runs alone). A smaller
	// chunk than the previous default of 128 halves how long a long new
	// prompt holds up the streams decoding beside it, for a first token of
	// its own that comes a few percent later: the multi-token products
	// cost about the same per token at 64 as at 128 (only the weights are
	// read twice as often), and alone a prompt still runs in steps of up
	// to BatchSize tokens. examples/bench -parallel 3 -arrive 2000 measures
	// both (arrive_max_gap_ms, arrive_first_token_s); docs/speed.md has
	// the runs.
	DefaultPrefillChunk = 64
	// MaxThreads bounds Config.Threads (backend.MaxThreads).
	MaxThreads = backend.MaxThreads
	// DefaultPromptCacheDiskBytes bounds PromptCacheDir's files by
	// default: 8 GiB, about 70,000 positions of a 0.6B model's f16 cache or
	// 110,000 of SmolLM3-3B's.
	DefaultPromptCacheDiskBytes = 8 << 30
	// DefaultDraftMax is llama-server's default draft length for a draft
	// model (--spec-draft-n-max 3).
	DefaultDraftMax = 3
	// MaxDraft bounds Config.DraftMax: a draft and the token before it are
	// checked in one step whose every row a recurrent cache keeps.
	MaxDraft = 16
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

// WithProjector loads the vision projector (mmproj) file at path beside the
// text model, which then takes images (Message.Images). Open refuses a
// projector that does not fit the text model (its row width or its type),
// naming both.
func WithProjector(path string) Option { return func(c *Config) { c.Projector = path } }

// WithMaxImagePixels sets the pixel budget of an image (Config.MaxImagePixels).
func WithMaxImagePixels(n int) Option { return func(c *Config) { c.MaxImagePixels = n } }

// WithKVType sets the KV cache type by its llama.cpp name: "f16" (the
// default), "f32" or "q8_0" (an unknown name is an error of NewConfig and
// Open).
func WithKVType(name string) Option {
	return func(c *Config) {
		t, err := backend.ParseKVType(name)
		if err != nil {
			c.optErr = err
			return
		}
		c.KVType = t
	}
}

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

// WithCheckpointInterval sets how often, in prompt tokens, a recurrent
// model keeps its state (see Config.CheckpointInterval).
func WithCheckpointInterval(n int) Option { return func(c *Config) { c.CheckpointInterval = n } }

// WithPrefillChunk sets the prompt tokens per step of a sequence while
// others decode.
func WithPrefillChunk(n int) Option { return func(c *Config) { c.PrefillChunk = n } }

// WithKeepLayout keeps the weights in the file's layout (see
// Config.KeepLayout).
func WithKeepLayout(keep bool) Option { return func(c *Config) { c.KeepLayout = keep } }

// WithSpeculation turns lookup speculative decoding on or off by default.
func WithSpeculation(on bool) Option { return func(c *Config) { c.Speculation = on } }

// WithDraft makes draft, a second opened model of the same vocabulary, draft
// tokens for the model being opened (see Config.Draft). Close the model
// first, then the draft.
func WithDraft(draft *Model) Option { return func(c *Config) { c.Draft = draft } }

// WithMTP makes the model draft with its own multi-token-prediction block
// (Config.MTP).
func WithMTP() Option { return func(c *Config) { c.MTP = true } }

// WithDraftLimits sets how a draft model drafts: at most max tokens per
// step (0: DefaultDraftMax), drafts shorter than min dropped, and a draft
// ended before a token the draft model gives a probability below pMin
// (llama-server's --spec-draft-n-max, --spec-draft-n-min and
// --spec-draft-p-min; see Config.DraftMax).
func WithDraftLimits(max, min int, pMin float32) Option {
	return func(c *Config) { c.DraftMax, c.DraftMin, c.DraftPMin = max, min, pMin }
}

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
	if c.Device == "" {
		c.Device = "cpu"
	}
	if c.MaxSequences == 0 {
		c.MaxSequences = DefaultMaxSequences
	}
	if c.CheckpointInterval == 0 {
		c.CheckpointInterval = DefaultCheckpointInterval
	}
	if c.PrefillChunk == 0 {
		c.PrefillChunk = DefaultPrefillChunk
	}
	if c.DraftMax == 0 {
		c.DraftMax = DefaultDraftMax
	}
	if c.PromptCacheDir != "" && c.PromptCacheDiskBytes == 0 {
		c.PromptCacheDiskBytes = DefaultPromptCacheDiskBytes
	}
	for _, d := range c.Matryoshka {
		if d <= 0 {
			return fmt.Errorf("engine: Matryoshka width %d is not positive", d)
		}
	}
	if c.optErr != nil {
		return fmt.Errorf("engine: %w", c.optErr)
	}
	if err := c.Options.Check(); err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	switch {
	case c.Pooling < PoolDefault || c.Pooling > PoolRank:
		return fmt.Errorf("engine: unknown pooling %v", c.Pooling)
	case c.PromptCacheBytes < 0:
		return fmt.Errorf("engine: negative prompt cache size %d", c.PromptCacheBytes)
	case c.PromptCacheDiskBytes < 0:
		return fmt.Errorf("engine: negative prompt cache disk size %d", c.PromptCacheDiskBytes)
	case c.PromptCacheDir != "" && c.PromptCacheBytes == 0:
		return fmt.Errorf("engine: a prompt cache on disk (%s) needs a prompt cache in memory too: its snapshots are read into memory to be used", c.PromptCacheDir)
	case c.MaxSequences < 0 || c.MaxSequences > 1024:
		return fmt.Errorf("engine: %d sequences per step; use 1 to 1024", c.MaxSequences)
	case c.DraftMax < 0 || c.DraftMax > MaxDraft:
		return fmt.Errorf("engine: draft length %d; use 1 to %d", c.DraftMax, MaxDraft)
	case c.DraftMin < 0 || c.DraftMin > c.DraftMax:
		return fmt.Errorf("engine: shortest draft %d; use 0 to the draft length %d", c.DraftMin, c.DraftMax)
	case !(c.DraftPMin >= 0 && c.DraftPMin <= 1):
		return fmt.Errorf("engine: draft probability floor %g is not between 0 and 1", c.DraftPMin)
	case c.PrefillChunk < 0 || c.PrefillChunk%64 != 0:
		return fmt.Errorf("engine: prefill chunk %d is not a positive multiple of 64", c.PrefillChunk)
	}
	return nil
}
