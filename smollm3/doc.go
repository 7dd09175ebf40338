// Package smollm3 is the SmolLM3 family: it registers SmolLM3's block
// description (Describe) and chat format (NewFormat) with package family,
// so that engine.Open loads SmolLM3 GGUF files into the llama-family block
// of package llama, on the device the program asks for, and runs their
// conversations.
//
// SmolLM3's architecture (Describe) is the plain llama block with:
//
//   - tied embeddings: the output projection is output.weight when the file
//     has one, else token_embd.weight itself (no copy);
//   - NoPE: layer i applies RoPE only if (i+1) % 4 != 0 (layers 3, 7, ..., 35
//     of the 3B model have no positional encoding); GGUF has no key for this,
//     so the rule lives here (NoPEMask);
//   - YaRN or linear RoPE scaling when the file's rope.scaling keys ask for it.
//
// The Format is SmolLM3's language side (engine.Format): the chat template
// of package chat, the tokenizer stored in the file, the <think> block split
// off as reasoning, and <tool_call> blocks read as tool calls. Message
// contents are tokenized as plain text, so a user who types "<|im_end|>"
// cannot forge a turn (engine.GenerateOptions.ParseSpecial opts out).
//
// A program opens a file with engine.Open after importing this package (or
// package models, which imports every family), and chats through the
// engine's API:
//
//	import _ "github.com/smolgo/smolgo/smollm3"
//
//	m, err := engine.Open("SmolLM3-3B-Q4_K_M.gguf", engine.WithThreads(4))
//	if err != nil { ... }
//	defer m.Close()
//	s := m.NewSession() // keeps its KV cache between turns
//	msgs := []engine.Message{{Role: "user", Content: "Why is the sky blue?"}}
//	for ev, err := range s.Generate(ctx, msgs, engine.GenerateOptions{MaxTokens: 512}) {
//		...
//	}
//
// Sessions of one model generating at once share each forward step
// (continuous batching, engine.WithMaxSequences); see package engine for
// the prompt cache, context shifting, stop strings, constraints, lookup
// speculation and log-probabilities.
//
// Forward runs token ids through the model without sessions (see
// llama.CPU.Forward), for logits and experiments, on the model's parts
// (family.Of):
//
//	p, _ := family.Of(m)
//	cache, _ := p.NewCache()
//	logits, err := p.Forward(ctx, cache, promptIDs, 0, false)
//	next := argmax(logits)
//	logits, err = p.Forward(ctx, cache, []int32{next}, cache.Len(), false)
//
// Two models in one process are independent. Package models' tests run
// SmolLM3's golden logits, sessions, prompt cache and tool calls
// (models/smollm3_*_test.go).
//
// # Memory and long conversations
//
//   - engine.WithKVType("q8_0") stores the KV cache in Q8_0 blocks like
//     llama.cpp's -ctk q8_0 -ctv q8_0: 39 KB per token for SmolLM3-3B
//     instead of 74 KB in f16, so a 65,536-token context takes 2.6 GB
//     (llama.Config.KVBytes). Logits move from the f16 cache's by about what
//     a quantized model's do, as much as llama.cpp's own q8_0 cache moves
//     them (llama's TestQ8CacheMatchesLlamaCpp compares the two caches,
//     models' TestQ8KVSession a session over each; package llama's
//     Numerics section has the numbers).
//   - engine.GenerateOptions.DropOldest and ShiftContext keep a
//     conversation that outgrew the context going: RoPE layers' keys are
//     re-rotated to their new positions (llama.Cache.Shift); NoPE layers'
//     keys carry no position and are left as they are.
//   - engine.WithPromptCache(bytes) shares computed prompts between
//     sessions (snapshots of the KV cache, llama.Cache.Clone and CopyFrom).
package smollm3
