// Package backend is the seam between the engine, which schedules sequences,
// samples and streams text, and the code that computes a model's forward
// pass: a Backend runs steps over per-sequence Caches. It defines the
// interfaces only, as database/sql/driver does for database/sql, and imports
// nothing but the standard library, so that a compute package (package
// llama's CPU block, package cuda) depends on this small contract and not on
// the engine with its grammars, samplers and tokenizers.
//
// Package engine re-exports these types under the same names
// (engine.Backend is backend.Backend), so code that builds sessions need not
// import this package.
package backend

import (
	"context"
	"errors"
	"io"
)

// A Backend runs a model's forward pass: it owns the weights (in a file's
// memory mapping, or uploaded to a GPU) and makes the KV caches that hold each
// sequence's state.
//
// The engine calls Step from one goroutine at a time per Backend; NewCache,
// Vocab and BatchSize may be called from any goroutine.
type Backend interface {
	// Vocab is the number of logits per token.
	Vocab() int
	// BatchSize is the most tokens one Step takes, all sequences together
	// (llama.cpp's n_ubatch). The engine never passes more.
	BatchSize() int
	// NewCache returns an empty cache for one sequence.
	NewCache() (Cache, error)
	// Step runs one forward pass over a batch of sequences. For each Seq
	// its Tokens are placed at positions Cache.Len(), Cache.Len()+1, ... of
	// its own cache (each sequence attends only to itself), the cache grows
	// by len(Tokens), and the logits asked for are written to Logits.
	//
	// Each Cache appears at most once in a batch and was made by this
	// backend. A sequence that would outgrow its cache's MaxLen is an error
	// wrapping ErrContextFull. On any error (ctx cancelled included) every
	// cache of the batch is left as it was before the call, but for a
	// recurrent layer's state that a step cut short left half moved on:
	// such a cache keeps its length, its Rewinder.Floor then reaches only
	// its checkpoints, and it must go back to one before the next step.
	Step(ctx context.Context, batch []Seq) error
}

// Seq is one sequence's part of a forward step.
type Seq struct {
	// Cache is the sequence's state; the new tokens go at positions
	// Cache.Len() onwards.
	Cache Cache
	// Tokens are the new tokens: a chunk of a prompt, a sampled token, or a
	// sampled token followed by a speculative draft. At least one.
	Tokens []int32
	// Logits receives the next-token predictions of the last
	// len(Logits)/Vocab tokens, row after row (the row of Tokens[i]
	// predicts the token after it): nil for a prompt chunk whose prediction
	// nobody needs, Vocab values for the last token, or up to len(Tokens)
	// rows to check a draft. Its length must be a multiple of Vocab.
	Logits []float32
	// Hidden receives the final hidden states (after the output norm, the
	// vectors the logits are projected from) of the last
	// len(Hidden)/HiddenStates.HiddenDim() tokens, row after row: what a
	// decoder's embeddings are pooled from. Only backends that implement
	// HiddenStates fill it; the others refuse a Seq that asks. Nil for
	// none; a Seq may ask for hidden states and logits together.
	Hidden []float32
	// Embeds, when not nil, are the inputs of the new positions in place
	// of their tokens' embeddings: len(Tokens) rows of EmbedWidth values,
	// as a vision projector makes them for an image. Tokens then only
	// count the rows (their values are not read). Only backends that
	// implement Embedder take it; the others refuse such a Seq.
	Embeds []float32
	// Bidirectional makes the new rows attend to each other in both
	// directions (and, as always, to every earlier position): Gemma 3's
	// image rows. Such a Seq is computed in one pass, so it holds at
	// most BatchSize rows. Only with Embedder.
	Bidirectional bool
	// Pos, when not nil, gives each new row (len(Tokens) of them) its
	// position for the rotary embedding instead of its place in the cache:
	// after an image whose rows advance the positions by fewer than their
	// count (M-RoPE), the places and the positions part. Only with
	// Embedder.
	Pos []Position
}

// A Position is where a row sits for a rotary embedding: T is its place
// in the sequence; Y and X are, for models whose rotation has height and
// width sections (M-RoPE: Qwen2-VL), its line and column in an image's
// grid. A text row has Y = X = T.
type Position struct{ T, Y, X int32 }

// Embedder is implemented by backends whose Step takes input rows in place
// of token embeddings (Seq.Embeds, Seq.Bidirectional, Seq.Pos): a vision
// model's text side.
type Embedder interface {
	// EmbedWidth is the width of an input row (the embedding width).
	EmbedWidth() int
	// MRoPE reports whether the rotation reads Position.Y and X (M-RoPE);
	// without it only T counts.
	MRoPE() bool
}

// Cache is one sequence's memory on a Backend: the keys and values of the
// positions it has seen. A Cache is used by one goroutine at a time.
//
// Caches may also implement Snapshotter (needed by the prompt cache),
// Persister (needed by the prompt cache on disk), Shifter (needed by
// context shifting) and Rewinder (caches that cannot go back to every
// earlier position); the engine checks.
type Cache interface {
	// Len is the number of positions held: where the next tokens go.
	Len() int
	// MaxLen is the most positions the cache can hold.
	MaxLen() int
	// Truncate forgets positions n and after, keeping [0, n).
	Truncate(n int) error
	// Bytes is the memory the cache holds now (allocated, not only used).
	Bytes() int64
	// Close frees the cache's memory (a GPU backend's device memory); the
	// cache must not be used afterwards. Closing twice is harmless.
	Close() error
}

// Snapshotter is implemented by caches whose prefixes can be copied, which is
// how the prompt cache shares a computed prompt between sessions.
type Snapshotter interface {
	// Clone returns a new cache of the same kind holding a copy of
	// positions [0, n) (and memory for only those).
	Clone(n int) (Cache, error)
	// CopyFrom copies positions [from, to) of src, a cache of the same
	// backend and kind, and makes the cache hold to positions. Its first
	// from positions are kept, so they must already hold the same tokens.
	CopyFrom(src Cache, from, to int) error
}

// Persister is implemented by caches whose positions can be written to a
// file and read back by another process that runs the same model: the
// prompt cache on disk (engine.Config.PromptCacheDir) keeps snapshots of
// computed prompts across restarts this way. A cache in device memory need
// not implement it (the engine then keeps its prompt cache in memory only).
//
// The bytes are the backend's own business. Layout names what they mean;
// the engine stores it beside them and gives a saved snapshot only to a
// cache whose Layout is the same, together with the model's identity (a
// cache does not know which weights computed its keys and values) and a
// checksum of the whole file. LoadFrom must still never panic, nor allocate
// more than a cache of n positions holds, whatever r gives it: a file can
// be damaged in ways a checksum does not catch, or written by an attacker.
type Persister interface {
	// Layout describes everything a cache reading the saved bytes must
	// share with the cache that wrote them, in a form the backend chooses:
	// its format version, element type, layers and their widths, and the
	// rings of sliding-window layers. Two caches of one backend made with
	// the same options have the same Layout.
	Layout() string
	// SaveTo writes the positions the cache holds (all Len of them, as a
	// sliding-window layer still holds them) to w.
	SaveTo(w io.Writer) error
	// LoadFrom makes the cache hold n positions read from r, as SaveTo
	// wrote them from a cache of the same Layout that held n. It reads
	// exactly what SaveTo wrote. On error (a short read, values that no
	// cache of this layout could hold, n beyond MaxLen) the cache is left
	// empty.
	LoadFrom(r io.Reader, n int) error
}

// Shifter is implemented by caches that can drop a range of positions and
// move the later ones down (llama.cpp's context shift).
type Shifter interface {
	// Shift drops positions [keep, keep+drop) and moves the positions after
	// them down by drop. An error wrapping ErrCannotShift leaves the cache
	// as it was: this shift needs positions the cache no longer holds (a
	// sliding window's ring), and the caller recomputes instead.
	Shift(keep, drop int) error
}

// ErrCannotShift is wrapped by a Shifter's error when the cache cannot make
// this shift but is unchanged and usable.
var ErrCannotShift = errors.New("the cache cannot make this shift")

// Rewinder is implemented by caches that cannot go back to every earlier
// length: sliding-window attention keeps a ring of the window plus one
// batch, so once older positions are overwritten Truncate, Clone and
// CopyFrom cannot go back to them; a recurrent layer (a short convolution,
// Mamba-2, Gated DeltaNet) keeps one state per sequence, which goes back
// only to the lengths the cache kept a copy of (see Checkpointer).
type Rewinder interface {
	// Floor is the largest m <= n that Truncate(m) and Clone(m) accept now
	// (0, an empty cache, always is; n itself for a cache that goes back
	// anywhere). CopyFrom(src, from, to) keeps the cache's first from
	// positions only where its Floor(from) is from, and needs
	// src.Floor(to) == to.
	Floor(n int) int
}

// Checkpointer is implemented by caches whose state at a length can be
// kept only by copying it (recurrent layers): Checkpoint keeps the state at
// the cache's current length, so that Truncate and Clone can come back to
// it later (Rewinder.Floor then reaches it). The engine takes one at the
// end of every prompt and every CheckpointInterval tokens of a long one;
// a cache keeps a bounded number, the oldest dropped first. The rows of a
// step whose logits were asked for (a draft being checked) are kept until
// the next step without a checkpoint.
type Checkpointer interface {
	Checkpoint() error
}

// Holder is implemented by Checkpointers that can keep one more state at
// a time besides their checkpoints: Hold keeps the state at the cache's
// current length until the next Hold, or a Truncate below it, and never
// pushes a checkpoint out (Rewinder.Floor reaches it). The engine holds a
// draft model's cache where a draft starts: the draft is computed one
// token per step, and the part of it that the target model rejects is
// dropped by going back to the hold.
type Holder interface {
	Hold() error
}

// NextNer is implemented by backends of models that carry a
// multi-token-prediction (MTP) block (Qwen3.5's nextn_predict_layers): a
// block that predicts one token further than the model, from a token and
// the model's final hidden state at the position before it.
type NextNer interface {
	// NextN returns the block as a Backend of its own, with its own caches
	// (one attention layer: they go back to any length). Its Step takes,
	// for each Seq, the tokens at positions Cache.Len()... and in Embeds
	// the model's final hidden states (Seq.Hidden of this backend) at the
	// positions before each of them, len(Tokens) rows of the model's
	// hidden width. Its Logits predict the token after each token (one
	// further than the model's prediction from the hidden state given), its
	// Hidden is the block's own final hidden state: with the token its
	// logits predict, the input of the next position of a draft. Close it
	// (it is an io.Closer) before the model's backend.
	NextN() (Backend, error)
}

// ErrContextFull is wrapped by errors for a sequence longer than its cache
// (the context length, or the length chosen at load).
var ErrContextFull = errors.New("context full")
