// Package qwen2 is the Qwen2 and Qwen2.5 family (general.architecture
// "qwen2"; 0.5B, 1.5B and 3B are the sizes people run on a CPU). Importing
// it registers the architecture with package family.
//
// The block is the llama block with biases after the q, k and v
// projections and RoPE's NEOX pairing; the output is tied to the
// embedding when output.weight is absent.
//
// Qwen2-VL's and Qwen2.5-VL's text model (general.architecture "qwen2vl")
// is the same block with M-RoPE: rope.dimension_sections splits the
// rotated pairs into temporal, height and width runs, so that an image's
// rows (from its vision projector) turn by their (t, y, x) positions; text
// turns as plain RoPE does.
//
// The format is package chat's template (ChatML with Qwen2.5's default
// system prompt and tool section) and Hermes <tool_call> blocks.
package qwen2

import (
	"fmt"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/family"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/llama"
	"github.com/smolgo/smolgo/models/qwen2/chat"
	"github.com/smolgo/smolgo/rope"
)

// Arch is the architecture name of Qwen2 and Qwen2.5 files.
const Arch = "qwen2"

// VLArch is the architecture name of Qwen2-VL's and Qwen2.5-VL's text
// model.
const VLArch = "qwen2vl"

func init() {
	format := func(f *gguf.File) (engine.Format, error) {
		return family.FileFormat(f, FormatSpec, TemplateSHA256), nil
	}
	family.Register(family.Family{Arch: Arch, Describe: Describe, Format: format})
	family.Register(family.Family{Arch: VLArch, Describe: DescribeVL, Format: format})
}

// TemplateSHA256 is the SHA-256 of the chat template FormatSpec renders
// byte for byte (Qwen2.5's, chat/testdata/Qwen-Qwen2.5-7B-Instruct.jinja): a file carrying it gets FormatSpec, a file
// carrying another (a fine-tune's) its own template through the Jinja
// engine.
const TemplateSHA256 = "cd8e9439f0570856fd70470bf8889ebd8b5d1107207f67a5efb46e342330527f"

// Describe is Qwen2's block.
func Describe(_ *gguf.File, cfg llama.Config) (llama.Arch, error) {
	r := cfg.Rope
	r.Layout = rope.NeoX
	return llama.Uniform(Arch, cfg.Layers, llama.Layer{Mixer: &llama.Attention{Rope: &r, QKVBias: true}, FFN: &llama.GLU{}}), nil
}

// DescribeVL is the qwen2vl block: Qwen2's with M-RoPE sections
// (contiguous, llama.cpp's LLAMA_ROPE_TYPE_MROPE).
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
	return llama.Uniform(VLArch, cfg.Layers, llama.Layer{Mixer: &llama.Attention{Rope: &r, QKVBias: true}, FFN: &llama.GLU{}}), nil
}

// FormatSpec is Qwen2.5's chat format.
var FormatSpec = family.FormatSpec{
	Render: func(_ *gguf.File, msgs []engine.Message, opts engine.PromptOptions) (string, [][2]int, error) {
		return chat.RenderSpans(msgs, chat.Options{Tools: opts.Tools, AddGenerationPrompt: true})
	},
	EndOfTurn: []string{"<|im_end|>"},
	Tools:     family.Hermes,
}
