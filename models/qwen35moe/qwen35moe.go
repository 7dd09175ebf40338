// Package qwen35moe is the Qwen3.5 mixture-of-experts family
// (general.architecture "qwen35moe": Qwen3.5-35B-A3B and Qwen3.6-35B-A3B,
// and the larger 122B-A10B and 397B-A17B). Importing it registers the
// architecture with package family.
//
// The block is Qwen3.5's (package qwen35: Gated DeltaNets with every
// full_attention_interval-th layer gated attention) with a mixture of
// experts in every layer, as llama.cpp's qwen35moe graph: a router over
// expert_count experts, the softmax of its logits, the expert_used_count
// most probable experts with their probabilities renormalized (scaled by
// expert_weights_scale where the file sets it), each expert a SwiGLU of
// width expert_feed_forward_length, plus a shared SwiGLU expert of width
// expert_shared_feed_forward_length whose output is scaled by
// sigmoid(h·ffn_gate_inp_shexp). The format is Qwen3.5's.
package qwen35moe

import (
	"fmt"

	"github.com/smolgo/smolgo/family"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/llama"
	"github.com/smolgo/smolgo/models/qwen35"
)

// Arch is the architecture name of Qwen3.5-MoE files.
const Arch = "qwen35moe"

func init() {
	family.Register(family.Family{Arch: Arch, Describe: Describe,
		Format: qwen35.Format})
}

// Describe is Qwen3.5-MoE's block for a file.
func Describe(f *gguf.File, cfg llama.Config) (llama.Arch, error) {
	moe, err := llama.MoEFromGGUF(f, cfg)
	if err != nil {
		return llama.Arch{}, err
	}
	if moe == nil {
		return llama.Arch{}, fmt.Errorf("%s.expert_count is missing or 0: a %s file is a mixture of experts", Arch, Arch)
	}
	if moe.SharedWidth == 0 {
		return llama.Arch{}, fmt.Errorf("%s.expert_shared_feed_forward_length is missing or 0: Qwen3.5-MoE has a shared expert", Arch)
	}
	// llama.cpp's qwen35moe graph: softmax gating, the chosen weights
	// renormalized and scaled by expert_weights_scale (read by
	// MoEFromGGUF), a sigmoid-gated shared expert.
	moe.Gating, moe.NormWeights, moe.Activation, moe.SharedGate = llama.SoftmaxTopK, true, llama.SiLU, true
	return qwen35.Hybrid(f, cfg, func() llama.FFN { c := *moe; return &c })
}
