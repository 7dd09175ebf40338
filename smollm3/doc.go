// Package smollm3 loads SmolLM3 GGUF models and runs them.
//
// Load opens a GGUF file (memory-mapped, weights left quantized) and wires
// SmolLM3's architecture on top of the generic llama-family forward pass of
// package llama:
//
//   - tied embeddings: the output projection is output.weight when the file
//     has one, else token_embd.weight itself (no copy);
//   - NoPE: layer i applies RoPE only if (i+1) % 4 != 0 (layers 3, 7, ..., 35
//     of the 3B model have no positional encoding); GGUF has no key for this,
//     so the rule lives here (NoPEMask) and WithNoPE overrides it;
//   - YaRN or linear RoPE scaling when the file's rope.scaling keys ask for it.
//
// Plain llama files load too (with RoPE in every layer), which is handy for
// comparisons. A Model is safe for concurrent use: give each sequence its
// own cache from NewCache. Two models in one process are independent.
//
// Forward runs token ids through the model (see llama.Model.Forward):
//
//	m, err := smollm3.Load("SmolLM3-3B-Q4_K_M.gguf", smollm3.WithThreads(4))
//	if err != nil { ... }
//	defer m.Close()
//	cache, _ := m.NewCache()
//	logits, err := m.Forward(ctx, cache, promptIDs, 0, false)
//	next := argmax(logits)
//	logits, err = m.Forward(ctx, cache, []int32{next}, cache.Len(), false)
//
// For chat, NewSession and Session.Generate render the chat template,
// tokenize, reuse the cached prefix between turns, sample and stream text.
//
// # Memory and long conversations
//
// Three options trade memory, speed and exactness for long or many
// conversations:
//
//   - WithKVType(llama.KVQ8_0) stores the KV cache in Q8_0 blocks like
//     llama.cpp's -ctk q8_0 -ctv q8_0: 39 KB per token for SmolLM3-3B
//     instead of 74 KB in f16, so a 65,536-token context takes 2.6 GB
//     (llama.Config.KVBytes). Logits move by about what a quantized model's
//     do (measured on the golden models: max 0.2 with F32 weights, 0.5 with
//     Q4_K_M, against the f16 cache), exactly as much as llama.cpp's own
//     q8_0 cache moves them (ours and its agree to 0.013).
//   - GenerateOptions.DropOldest drops the oldest messages (after the system
//     prompt) of a conversation that outgrew the context and prefills the
//     rest again; with ShiftContext the kept messages are reused from the
//     cache instead, their keys re-rotated to the new positions in RoPE
//     layers (llama.Cache.Shift; NoPE layers' keys carry no position and are
//     left as they are). Shifting is llama.cpp's context shift: much cheaper,
//     approximate (the kept tokens remember the dropped ones).
//   - WithPromptCache(bytes) shares computed prompts between sessions: a
//     request whose prompt starts like an earlier one (the same system
//     prompt, a regenerated answer, a conversation resumed elsewhere) copies
//     the longest common prefix from a snapshot and computes only the rest.
//     Stats.CachedTokens counts it (SharedCachedTokens the part from the
//     prompt cache); snapshots are evicted least recently used first beyond
//     the memory bound. With a 2,000-token system prompt on the tiny test
//     model a new session's first token comes 100 times sooner
//     (BenchmarkPromptCacheTTFT).
package smollm3
