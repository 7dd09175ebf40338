// Package qwen3moe is the Qwen3 mixture-of-experts family
// (general.architecture "qwen3moe": Qwen3-30B-A3B, Qwen3-235B-A22B and
// their 2507 releases, Qwen3-Coder-30B-A3B and 480B-A35B). Importing it
// registers the architecture with package family.
//
// The block is Qwen3's attention (NEOX RoPE, per-head RMSNorm of queries
// and keys, head size from attention.key_length) with a mixture of experts
// in place of the dense feed-forward in every layer: a router over
// expert_count experts (128 in the 30B model), the softmax of its logits,
// the expert_used_count (8) most probable experts, their probabilities
// renormalized to sum to 1, each expert a SwiGLU of width
// expert_feed_forward_length (768), as llama.cpp's qwen3moe graph.
//
// The format depends on the file's chat template (Format). Most files
// carry Qwen3's, and get package qwen3's format: ChatML, reasoning in
// <think>…</think>, Hermes <tool_call> blocks of JSON. Qwen3-Coder's files
// carry a template of their own (IsCoder recognises it), which package
// chat renders: no reasoning, tools listed as XML, and calls written as
// XML whose parameters are raw text, typed by the tools' schemas:
//
//	<tool_call>
//	<function=get_weather>
//	<parameter=city>
//	Paris
//	</parameter>
//	</function>
//	</tool_call>
package qwen3moe

import (
	"fmt"

	"github.com/smolgo/smolgo/family"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/llama"
	"github.com/smolgo/smolgo/rope"
)

// Arch is the architecture name of Qwen3-MoE files.
const Arch = "qwen3moe"

func init() {
	family.Register(family.Family{Arch: Arch, Describe: Describe, Format: Format})
	family.ProvideToolSyntax("qwen3-coder-xml", CoderTools) // for other files whose template writes Qwen3-Coder's calls
	family.ProvideToolSyntax("seed-oss-xml", SeedTools)
	family.ProvideToolSyntax("minimax-m2-xml", MiniMaxM2Tools)
}

// Describe is Qwen3-MoE's block for a file.
func Describe(f *gguf.File, cfg llama.Config) (llama.Arch, error) {
	moe, err := llama.MoEFromGGUF(f, cfg)
	if err != nil {
		return llama.Arch{}, err
	}
	if moe == nil {
		return llama.Arch{}, fmt.Errorf("%s.expert_count is missing or 0: a %s file is a mixture of experts", Arch, Arch)
	}
	// llama.cpp's qwen3moe graph: softmax gating, the chosen weights
	// renormalized, no weight scale, whatever the keys say.
	moe.Gating, moe.NormWeights, moe.WeightScale, moe.Activation = llama.SoftmaxTopK, true, 0, llama.SiLU
	if moe.SharedWidth != 0 {
		return llama.Arch{}, fmt.Errorf("%s.expert_shared_feed_forward_length = %d: Qwen3-MoE has no shared expert", Arch, moe.SharedWidth)
	}
	r := cfg.Rope
	r.Layout = rope.NeoX
	return llama.Uniform(Arch, cfg.Layers, llama.Layer{Mixer: &llama.Attention{Rope: &r, QKNorm: true}, FFN: moe}), nil
}
