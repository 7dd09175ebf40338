// Package qwen2moe is the Qwen2 mixture-of-experts family
// (general.architecture "qwen2moe": Qwen1.5-MoE-A2.7B, Qwen2-57B-A14B).
// Importing it registers the architecture with package family.
//
// The block is Qwen2's attention (q, k and v biases, NEOX RoPE) with a
// mixture of experts in every layer, as llama.cpp's qwen2moe graph: the
// softmax of the router's logits, the expert_used_count most probable
// experts weighted by their probabilities (not renormalized), each a
// SwiGLU of width expert_feed_forward_length (feed_forward_length /
// expert_used_count without it), plus a shared SwiGLU expert of width
// expert_shared_feed_forward_length (feed_forward_length without it) gated
// by sigmoid(h·ffn_gate_inp_shexp). The format is Qwen2.5's.
package qwen2moe

import (
	"fmt"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/family"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/llama"
	"github.com/smolgo/smolgo/models/qwen2"
	"github.com/smolgo/smolgo/rope"
)

// Arch is the architecture name of Qwen2-MoE files.
const Arch = "qwen2moe"

func init() {
	family.Register(family.Family{Arch: Arch, Describe: Describe,
		Format: func(f *gguf.File) (engine.Format, error) { return family.NewFormat(f, qwen2.FormatSpec), nil }})
}

// Describe is Qwen2-MoE's block for a file.
func Describe(f *gguf.File, cfg llama.Config) (llama.Arch, error) {
	moe, err := llama.MoEFromGGUF(f, cfg)
	if err != nil {
		return llama.Arch{}, err
	}
	if moe == nil {
		return llama.Arch{}, fmt.Errorf("%s.expert_count is missing or 0: a %s file is a mixture of experts", Arch, Arch)
	}
	if moe.SharedWidth == 0 {
		moe.SharedWidth = cfg.FFN
	}
	if moe.SharedWidth == 0 {
		return llama.Arch{}, fmt.Errorf("%s: no expert_shared_feed_forward_length and no feed_forward_length to take the shared expert's width from", Arch)
	}
	moe.Gating, moe.NormWeights, moe.WeightScale, moe.SharedGate = llama.SoftmaxTopK, false, 0, true
	r := cfg.Rope
	r.Layout = rope.NeoX
	return llama.Uniform(Arch, cfg.Layers, llama.Layer{Mixer: &llama.Attention{Rope: &r, QKVBias: true}, FFN: moe}), nil
}
