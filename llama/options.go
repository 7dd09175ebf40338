package llama

import "github.com/smolgo/smolgo/backend"

// Options are backend.Options, the one value that goes from a program's
// settings (engine.Config) to the device unchanged: NewBackend hands them
// to the device named in Device; the CPU runner (NewCPU) reads Threads,
// BatchSize and KeepLayout, and the caches of the backend NewBackend makes
// take KVType and Context. The zero value is a good default.
type Options = backend.Options

// KVType is the element type of the KV cache (backend.KVType).
type KVType = backend.KVType

const (
	// KVF16 stores keys and values as float16, like llama.cpp's default. It
	// is also what reproduces llama.cpp's logits most closely: its flash
	// attention rounds to f16 whatever the cache type.
	KVF16 = backend.KVF16
	// KVF32 stores float32 and attends in float32 throughout: twice the
	// memory, slightly more precise, slightly further from llama.cpp.
	KVF32 = backend.KVF32
	// KVQ8_0 stores keys and values in ggml's Q8_0 blocks (llama.cpp's
	// -ctk q8_0 -ctv q8_0): along each head, blocks of 32 values share one
	// f16 scale, 34 bytes per 32 values, 53% of an f16 cache. See
	// kvq8.go for how attention reads it.
	KVQ8_0 = backend.KVQ8_0
)

// DefaultBatchSize is the default micro-batch size, llama.cpp's n_ubatch
// (backend.DefaultBatchSize).
const DefaultBatchSize = backend.DefaultBatchSize
