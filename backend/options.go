package backend

import (
	"fmt"
	"log/slog"
)

// Options say how a model's weights are put to work: on which device, with
// how many threads, in passes of how many tokens, with KV caches of which
// type and length. It is the one value that goes from a program's settings
// (engine.Config holds it; engine.WithThreads, WithDevice, WithKVType, ...
// set it) to the device that runs the model, unchanged: package llama's
// NewBackend hands it to the device (the CPU runner, or a registered GPU),
// which reads the fields it has a use for. The zero value means the CPU,
// one thread per CPU, DefaultBatchSize, f16 caches as long as the model's
// trained context, and the weights interleaved where the CPU's kernels
// want them.
type Options struct {
	// Device names where the model runs: "" or "cpu" for the CPU, "cuda"
	// or "cuda:N" for a GPU registered by importing package cuda.
	Device string
	// Threads is the number of CPU threads that share each step's work
	// (0: one per CPU; at most MaxThreads).
	Threads int
	// BatchSize is the most tokens one pass through the layers takes, all
	// sequences together (llama.cpp's n_ubatch; 0: DefaultBatchSize).
	// Longer prompts run in several passes, which bounds the work buffers.
	BatchSize int
	// KVType is the element type of the KV caches.
	KVType KVType
	// Context is the most positions each sequence's cache holds (0: the
	// model's trained context). A longer one is allowed, as llama.cpp
	// allows it: positions past the trained context are extrapolated,
	// which a model may handle well or badly.
	Context int
	// KeepLayout keeps every weight matrix in the file's layout on the
	// CPU. By default the matrices whose type the CPU's kernels interleave
	// (q4_K and q6_K on AVX2 and AVX-512) get an interleaved copy at load,
	// in place of the file's pages in memory: steps of several sequences
	// and prefill run faster and loading takes longer. A GPU always reads
	// the file's layout.
	KeepLayout bool
	// Logger receives load messages (nil: slog.Default()).
	Logger *slog.Logger
}

// DefaultBatchSize is the default of Options.BatchSize, llama.cpp's
// n_ubatch.
const DefaultBatchSize = 512

// MaxThreads bounds Options.Threads: far more cores than any machine this
// runs on has (each thread is a goroutine with its own work buffers).
const MaxThreads = 1024

// Check reports a setting out of range: a negative batch size or context,
// a thread count outside 0 to MaxThreads, a KV type that does not exist.
// The device's name is its registry's business.
func (o Options) Check() error {
	switch {
	case o.Threads < 0 || o.Threads > MaxThreads:
		return fmt.Errorf("%d threads; use 1 to %d (0 for one per CPU)", o.Threads, MaxThreads)
	case o.BatchSize < 0:
		return fmt.Errorf("negative batch size %d", o.BatchSize)
	case o.Context < 0:
		return fmt.Errorf("negative context length %d", o.Context)
	case o.KVType < KVF16 || o.KVType > KVQ8_0:
		return fmt.Errorf("unknown KV cache type %v", o.KVType)
	}
	return nil
}

// KVType is the element type of a KV cache, by the names llama.cpp's
// -ctk/-ctv flags use (String, ParseKVType).
type KVType int

const (
	// KVF16 stores keys and values as float16, llama.cpp's default.
	KVF16 KVType = iota
	// KVF32 stores float32: twice the memory, slightly more precise.
	KVF32
	// KVQ8_0 stores keys and values in ggml's Q8_0 blocks (llama.cpp's
	// -ctk q8_0 -ctv q8_0): blocks of 32 values share one f16 scale, 34
	// bytes per 32 values, 53% of an f16 cache.
	KVQ8_0
)

// String returns the type's llama.cpp name: "f16", "f32" or "q8_0".
func (t KVType) String() string {
	switch t {
	case KVF16:
		return "f16"
	case KVF32:
		return "f32"
	case KVQ8_0:
		return "q8_0"
	}
	return fmt.Sprintf("KVType(%d)", int(t))
}

// ParseKVType reads a KV cache type by its llama.cpp name: "f16", "f32" or
// "q8_0".
func ParseKVType(s string) (KVType, error) {
	for _, t := range []KVType{KVF16, KVF32, KVQ8_0} {
		if s == t.String() {
			return t, nil
		}
	}
	return 0, fmt.Errorf("unknown KV cache type %q (want f16, f32 or q8_0)", s)
}

// Bytes returns the bytes n cached values take in type t: 4 each in f32, 2
// in f16, and 34 per started block of 32 in q8_0.
func (t KVType) Bytes(n int) int64 {
	switch t {
	case KVF32:
		return 4 * int64(n)
	case KVQ8_0:
		return int64((n+31)/32) * 34
	}
	return 2 * int64(n)
}
