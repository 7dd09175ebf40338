// Package qwen3 is the Qwen3 family (general.architecture "qwen3"; 0.6B,
// 1.7B and 4B are the sizes people run on a CPU). Importing it registers the
// architecture with package family.
//
// The block is the llama block with RoPE's NEOX pairing (the two halves of
// a head rotate against each other), a per-head RMSNorm of the queries and
// keys before RoPE (attn_q_norm, attn_k_norm), a head size from
// attention.key_length (Qwen3's queries are wider than its embedding), and
// tied embeddings when output.weight is absent.
//
// The format is package chat's template (ChatML with Qwen3's tool section),
// reasoning in <think>…</think> (GenerateOptions.Thinking false asks for none,
// as enable_thinking does), and Hermes <tool_call> blocks.
//
// Qwen3-Embedding files are qwen3 files with pooling_type last: the engine
// embeds with them (engine.Model.Embed) from the last token's final hidden
// state, the inputs ending with the end token the vocabulary adds
// (add_eos_token). Qwen3-Reranker files carry a classification head
// (cls.output.weight: the "yes" and "no" rows of the output), pooling_type
// rank and a rerank template; engine.Model.Rerank scores with the softmax
// of the head (RankSoftmax), the probability of "yes", as llama.cpp does.
package qwen3

import (
	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/family"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/llama"
	"github.com/smolgo/smolgo/models/qwen3/chat"
	"github.com/smolgo/smolgo/rope"
)

// Arch is the architecture name of Qwen3 files.
const Arch = "qwen3"

func init() {
	family.Register(family.Family{Arch: Arch, Describe: Describe,
		Format: func(f *gguf.File) (engine.Format, error) {
			return family.FileFormat(f, FormatSpec, TemplateSHA256), nil
		}})
}

// TemplateSHA256 is the SHA-256 of the chat template FormatSpec renders
// byte for byte (Qwen3's, chat/testdata/Qwen-Qwen3-0.6B.jinja): a file carrying it gets FormatSpec, a file
// carrying another (a fine-tune's) its own template through the Jinja
// engine.
const TemplateSHA256 = "87a2728cb8dc9fe424d624542f6060ec05a1d285ebbec578bb078900e33396b5"

// Describe is Qwen3's block.
func Describe(_ *gguf.File, cfg llama.Config) (llama.Arch, error) {
	r := cfg.Rope
	r.Layout = rope.NeoX
	a := llama.Uniform(Arch, cfg.Layers, llama.Layer{Mixer: &llama.Attention{Rope: &r, QKNorm: true}, FFN: &llama.GLU{}})
	a.RankSoftmax = true // Qwen3-Reranker's head gives probabilities of "yes" and "no"
	return a, nil
}

// FormatSpec is Qwen3's chat format.
var FormatSpec = family.FormatSpec{
	Render: func(_ *gguf.File, msgs []engine.Message, opts engine.PromptOptions) (string, [][2]int, error) {
		return chat.RenderSpans(msgs, chat.Options{Tools: opts.Tools, AddGenerationPrompt: true, EnableThinking: opts.Thinking})
	},
	EndOfTurn: []string{"<|im_end|>"},
	Reasoning: true,
	Tools:     family.Hermes,
}
