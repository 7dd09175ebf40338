// Package llama is the llama-family transformer block, written once for
// every architecture that follows llama's layout (SmolLM3, Llama 3, Qwen2,
// Qwen3, Gemma 3, ...), and its CPU runner, producing the same next-token
// logits as llama.cpp's CPU backend to float noise.
//
// # What a model is
//
// Three things, kept apart:
//
//   - Config: the hyper-parameters, read by ConfigFromGGUF from the
//     `<arch>.*` keys (layers, widths, heads and KV heads, head size, RMS
//     epsilon, context, RoPE base, dimensions and scaling);
//   - Arch: what the block does, as data: per layer a token mixer and a
//     feed-forward network, each of a named kind (Attention, with its RoPE,
//     window, QK norm, biases and scales; GLU, with its activation), the
//     post norms, and for the model the embedding, residual and logit
//     scales. A family package (smollm3, models/qwen3, models/gemma3, ...
//     see package family) builds it from the file; Plain is the plain
//     llama block;
//   - Weights: the tensors the description needs, checked against the
//     config (LoadWeights), as views of the file's memory mapping in their
//     stored (quantized) types: nothing is dequantized up front. The output
//     projection is output.weight, or token_embd.weight itself when the
//     file ties them.
//
// Where it runs is a device: NewCPU runs Weights on the CPU (CPU, below);
// other devices register with RegisterDevice (package cuda registers
// "cuda" when a program imports it), and NewBackend picks one by name. One
// value says how, Options (backend.Options): the device, threads, batch
// size, KV cache type and length, layout; package engine's Config holds it
// and hands it to NewBackend unchanged. Every
// device reads the same Arch and refuses, by name, a feature it lacks
// (Arch.Unsupported).
//
//	f, _ := gguf.Open("model.gguf")
//	m, err := llama.New(f, llama.Options{Threads: 4}) // a plain llama model on the CPU
//
// Where the CPU's kernels have an interleaved layout for a type (q4_K and
// q6_K), NewCPU gives those matrices an interleaved copy of the same size in
// its own copies of the matrices, which the products read, and lets the
// file's pages of them go (Options.KeepLayout opts out).
//
// # Kinds of layer
//
// The block is one skeleton (norm, mixer, residual, norm, FFN, residual)
// around two parts of a named kind. Each kind is one file here, holding
// everything about it: the mixers kind_attention.go (Attention, with sinks
// and biases where a family has them) and kind_shortconv.go (ShortConv, a
// recurrent kind), the feed-forwards kind_glu.go (GLU) and kind_moe.go
// (MoE, a mixture of experts):
//
//   - its description: a type implementing Mixer or FFN, whose exported
//     fields are what a family sets and whose Kind names it, with the
//     unexported methods of the kind interface: validate (against Config),
//     features (the names Arch.Features lists, so that a device refuses
//     what it lacks), clone;
//   - its weights: a type in LayerWeights (AttentionWeights, GLUWeights,
//     MoEWeights, ShortConvWeights)
//     and load, which reads its tensors by name, checks their shapes and
//     refuses the file's tensors it would not read;
//   - its CPU step: newStep builds a sublayer over the runner's copy of
//     the weights, whose forward computes the pass's rows with the tensor
//     and quant kernels, reading what a sequence keeps (attention: the
//     keys and values in the Cache's per-layer stores) from the pieces'
//     caches.
//
// A new kind adds such a file and its field in LayerWeights (and in its
// matrices and clone). A recurrent kind, whose sequences keep a state
// instead of keys and values, also implements stateful (its state's size):
// the Cache then keeps that state per layer beside the KV stores, with the
// checkpoints and kept rows that let it go back (state.go), and the kind's
// step reads and updates it per piece. step.go, which composes the kinds,
// does not change. A device implements the kinds it
// has and refuses the others by the names Features gives them (package
// cuda: attention and GLU only).
//
// # Running it
//
// A Cache is one sequence's memory: the keys and values of every position
// so far (float16 by default, like llama.cpp; float32 or q8_0 on request),
// bounded by the context length, plus the work buffers of the forward pass
// so that decoding allocates nothing. Each layer keeps its keys and values
// in one store of the cache's element type (kv.go); a sliding-window layer
// keeps a ring of its window plus one pass, so its memory stays bounded. Forward takes a batch of new tokens at the
// cache's current length (a prefill) or a single token (a decode step) and
// returns the logits of the last position, or of every position:
//
//	c, _ := m.NewCache(llama.CacheOptions{})
//	logits, err := m.Forward(ctx, c, prompt, 0, false)   // prefill
//	logits, err = m.Forward(ctx, c, []int32{next}, c.Len(), false) // decode
//
// The cache type is a memory/precision trade (CacheOptions.KVType): KVF16 is
// llama.cpp's default, KVF32 twice its size, and KVQ8_0 (llama.cpp's -ctk
// q8_0 -ctv q8_0) 17/32 of it: 34 bytes per 32 values. Config.KVBytes gives
// the memory for a number of positions and Cache.Bytes what a cache holds;
// for SmolLM3-3B a token costs 73,728 bytes in f16 and 39,168 in q8_0, so a
// 65,536-token context takes 2.6 GB of q8_0 cache.
//
// Truncate rewinds a cache to a prefix so that a conversation can resume
// from shared history (a sliding-window layer only as far back as its ring
// still holds the window: MinRewind); a sequence past the cache's length
// fails with an error wrapping ErrContextFull. The context is checked
// between layers. A CPU runner serves any number of caches concurrently
// (one goroutine per cache).
//
// # Many sequences in one pass
//
// NewBackend makes a model's backend.Backend (package engine schedules
// sessions onto it): on the CPU device a runner and its batched step, which
// (*CPU).AsBackend also makes over a runner of the caller's. Its Step runs one forward pass over a batch of
// sequences, each with its own cache, position and new tokens (decode
// tokens, drafts, prompt chunks): the rows of all of them go through every
// weight product together, so each weight block is read from memory once
// per step for all the sequences, while RoPE, the KV store and attention
// stay per sequence. A sequence's logits are bit for bit what Forward gives
// it alone: rows of small sequences (under 24 new tokens) share product
// calls, where quant's kernels give every row MatVec's bits, and a longer
// prompt chunk gets calls of its own, exactly those it would get alone.
// Forward is the one-sequence case of the same pass (step.go).
//
// # Numerics
//
// Every step follows llama.cpp's CPU kernels (see golden/README.md in the
// shared reference data): RMSNorm with a float64 sum of squares, activations
// converted to each weight's dot type before a matrix product (package
// quant), RoPE angles as a running float32 product, SiLU with ggml's exp
// polynomial, and attention as llama.cpp's flash-attention kernel computes
// it: for batches under 64 tokens the query rounded to f16 and the weighted
// sum of V kept in f16 (rounded after every position), for larger batches
// f32 tiles of 64 positions. Measured against llama.cpp's golden logits this
// lands 4 to 20 times closer than an all-f32 attention. A q8_0 cache follows
// llama.cpp's quantized-cache path for every batch size: queries, keys and
// values turned by a Walsh-Hadamard rotation, the query rounded to Q8_0 and
// scored with the integer Q8_0 dot product, values summed dequantized in
// f32. Its logits agree with llama.cpp's q8_0 cache to max 0.013 on the F32
// golden model (TestQ8CacheMatchesLlamaCpp) and move from the f16 cache's by
// what llama.cpp's do (max 0.2 with F32 weights, 0.6 with Q4_K_M).
//
// The families' additions follow llama.cpp's graphs too: biases added in
// f32 after the products, QK norms as RMSNorms over each head, GELU read
// from ggml's float16 table (tensor.GEGLU), the embedding, query and logit
// scales as single float32 multiplies, the soft-cap as scale, tanh, scale.
// Every family's logits are checked against llama.cpp's
// (../shared/golden-families; package models' TestFamilyGoldenLogits).
//
// Decode attention (the small-batch path, f16 or q8_0 cache) computes those
// numbers bit for bit but not position by position: it scores a block of 256
// positions first, then runs the max and sum over the block, then adds the
// value rows with the accumulator held in registers, 1.7 to 1.9 times faster
// per head than the one-position loop kept as its reference. The arithmetic
// of attention (dot products, accumulator updates, rounding to f16 and Q8_0)
// is package tensor's kernels, in assembly where the CPU allows; this
// package holds the algorithm around them (which positions, the online
// softmax, the work split over threads) and the cache layout, and does not
// call package quant's block kernels itself.
package llama
