package engine

import "github.com/smolgo/smolgo/backend"

// The step seam is package backend's; these names keep the engine's API in
// one place for callers that build sessions (engine.Backend is
// backend.Backend). See package backend for the contracts.
type (
	// Backend runs a model's forward pass over per-sequence caches.
	Backend = backend.Backend
	// Seq is one sequence's part of a forward step.
	Seq = backend.Seq
	// Cache is one sequence's memory on a Backend.
	Cache = backend.Cache
	// Snapshotter is implemented by caches whose prefixes can be copied.
	Snapshotter = backend.Snapshotter
	// Persister is implemented by caches that can be written to disk and
	// read back (the prompt cache on disk).
	Persister = backend.Persister
	// Shifter is implemented by caches that can drop a range of positions.
	Shifter = backend.Shifter
	// Rewinder is implemented by caches that cannot go back to every
	// earlier position (sliding-window and recurrent layers).
	Rewinder = backend.Rewinder
	// Checkpointer is implemented by caches that go back only to the
	// lengths they kept (recurrent layers).
	Checkpointer = backend.Checkpointer
	// Holder is implemented by Checkpointers that keep one more state
	// apart from their checkpoints (where a draft starts).
	Holder = backend.Holder
	// HiddenStates is implemented by backends whose steps return hidden
	// states (Seq.Hidden), which makes a decoder an embedding model.
	HiddenStates = backend.HiddenStates
	// Classifier is a decoder reranker's head.
	Classifier = backend.Classifier
	// Embedder is implemented by backends that take input rows in place of
	// token embeddings (an image's rows).
	Embedder = backend.Embedder
	// Position is a row's rotary position (M-RoPE's three streams).
	Position = backend.Position
)

// ErrContextFull is wrapped by errors for a sequence longer than its cache.
var ErrContextFull = backend.ErrContextFull
