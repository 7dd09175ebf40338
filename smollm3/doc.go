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
package smollm3
