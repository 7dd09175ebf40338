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
//
// Qwen3-VL's text model (general.architecture "qwen3vl", the 2B, 4B and
// 8B dense ones) is Qwen3's block with interleaved M-RoPE
// (rope.dimension_sections; llama.cpp's IMROPE: the rotated pairs take the
// temporal, height and width positions in turn) and deepstack
// (n_deepstack_layers): an image's rows from its qwen3vl_merger projector
// are (1 + n_deepstack_layers) × the embedding width, and slice k+1 is
// added to the hidden state after block k (llama.Arch.Deepstack). Text
// turns as plain RoPE does and gets no deepstack slices.
package qwen3

import (
	"fmt"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/family"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/llama"
	"github.com/smolgo/smolgo/models/qwen3/chat"
	"github.com/smolgo/smolgo/rope"
)

// Arch is the architecture name of Qwen3 files.
const Arch = "qwen3"

// VLArch is the architecture name of Qwen3-VL's text model.
const VLArch = "qwen3vl"

func init() {
	format := func(f *gguf.File) (engine.Format, error) {
		return family.FileFormat(f, FormatSpec, TemplateSHA256), nil
	}
	family.Register(family.Family{Arch: Arch, Describe: Describe, Format: format})
	family.Register(family.Family{Arch: VLArch, Describe: DescribeVL, Format: format})
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

// DescribeVL is the qwen3vl block: Qwen3's with interleaved M-RoPE
// sections and n_deepstack_layers deepstack slices (0 when absent, as
// llama.cpp defaults it).
func DescribeVL(f *gguf.File, cfg llama.Config) (llama.Arch, error) {
	key := cfg.Arch + ".rope.dimension_sections"
	v, err := f.Int32s(key)
	if err != nil {
		return llama.Arch{}, err
	}
	if len(v) < 3 || len(v) > 4 {
		return llama.Arch{}, fmt.Errorf("%s has %d entries, want 4", key, len(v))
	}
	r := cfg.Rope
	r.Layout = rope.NeoX
	r.Interleaved = true // llama.cpp's LLAMA_ROPE_TYPE_IMROPE
	for i, x := range v {
		if x < 0 || x > 1<<16 {
			return llama.Arch{}, fmt.Errorf("%s[%d] = %d is out of range", key, i, x)
		}
		r.Sections[i] = int(x)
	}
	if r.Sections == ([4]int{}) {
		return llama.Arch{}, fmt.Errorf("%s is all zeros", key)
	}
	if err := r.Validate(); err != nil {
		return llama.Arch{}, fmt.Errorf("%s: %w", key, err)
	}
	a := llama.Uniform(VLArch, cfg.Layers, llama.Layer{Mixer: &llama.Attention{Rope: &r, QKNorm: true}, FFN: &llama.GLU{}})
	dkey := cfg.Arch + ".n_deepstack_layers"
	if _, ok := f.Get(dkey); ok {
		n, err := f.Uint32(dkey)
		if err != nil {
			return llama.Arch{}, err
		}
		if int(n) > cfg.Layers {
			return llama.Arch{}, fmt.Errorf("%s is %d, more than the %d blocks", dkey, n, cfg.Layers)
		}
		a.Deepstack = int(n)
	}
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
