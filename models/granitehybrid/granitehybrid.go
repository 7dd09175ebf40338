// Package granitehybrid is IBM's Granite 4.0-H family (general.architecture
// "granitehybrid": Granite-4.0-H-Micro 3B, H-Tiny 7B-A1B and H-Small
// 32B-A9B), hybrids of Mamba-2 layers and a few attention layers.
// Importing it registers the architecture with package family.
//
// The block, as llama.cpp's granite-hybrid graph builds it: the layers
// whose attention.head_count_kv entry is 0 are Mamba-2 mixers
// (llama.Mamba2, from the file's ssm.* keys), the others grouped-query
// attention, rotated only where rope.scaling.finetuned is not false
// (Granite 4.0-H files are NoPE), with q, k, v and output biases where the
// file has them. The feed-forward of every layer is a dense SwiGLU, or in
// a file with experts (H-Tiny, H-Small) a mixture of experts: softmax
// gating over expert_count experts, the expert_used_count best renormalized
// to sum to 1, each expert a SwiGLU of width feed_forward_length, plus an
// ungated shared SwiGLU expert of width expert_shared_feed_forward_length
// where the file has one. Granite's four multipliers (embedding, residual,
// attention and logit scales) are package granite's (granite.Multipliers),
// the logit scale optional here, as llama.cpp reads it for this
// architecture. A Mamba-2 layer keeps a fixed-size state per sequence
// instead of keys and values (llama.Mamba2.StateSize). The chat format is
// Granite 4.0's (granite.Format).
package granitehybrid

import (
	"fmt"

	"github.com/smolgo/smolgo/family"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/llama"
	"github.com/smolgo/smolgo/models/granite"
)

// Arch is the architecture name of Granite 4.0-H files.
const Arch = "granitehybrid"

func init() {
	family.Register(family.Family{Arch: Arch, Describe: Describe, Format: granite.Format})
}

// Describe is Granite 4.0-H's block for a file.
func Describe(f *gguf.File, cfg llama.Config) (llama.Arch, error) {
	mamba, err := llama.Mamba2FromGGUF(f, cfg)
	if err != nil {
		return llama.Arch{}, err
	}
	ffn, err := feedForward(f, cfg)
	if err != nil {
		return llama.Arch{}, err
	}
	on, err := granite.RopeOn(f, Arch)
	if err != nil {
		return llama.Arch{}, err
	}
	at := &llama.Attention{}
	if on {
		r := cfg.Rope
		if r.Factors, err = llama.RopeFactors(f, cfg); err != nil {
			return llama.Arch{}, err
		}
		at.Rope = &r
	}
	first := -1 // the first attention layer, where the biases are looked for
	for i := range cfg.Layers {
		if cfg.LayerKVHeads == nil || cfg.LayerKVHeads[i] > 0 {
			first = i
			break
		}
	}
	if first >= 0 {
		_, at.QKVBias = f.Tensor(fmt.Sprintf("blk.%d.attn_q.bias", first))
		_, at.OutBias = f.Tensor(fmt.Sprintf("blk.%d.attn_output.bias", first))
	}
	a := llama.Uniform(Arch, cfg.Layers, llama.Layer{FFN: ffn})
	for i := range a.Layers {
		if cfg.LayerKVHeads != nil && cfg.LayerKVHeads[i] == 0 {
			m := *mamba
			a.Layers[i].Mixer = &m
		} else {
			c := *at // the rotation stays shared
			a.Layers[i].Mixer = &c
		}
	}
	mul, err := granite.ReadMultipliers(f, Arch, false)
	if err != nil {
		return llama.Arch{}, err
	}
	mul.Apply(&a)
	return a, nil
}

// feedForward is the layers' feed-forward: a dense SwiGLU, or the mixture
// of experts of a file with expert_count, as llama.cpp's granite-hybrid
// graph runs it (its build_moe_ffn call: softmax gating, weights
// renormalized, no weight scale; the shared expert added ungated).
func feedForward(f *gguf.File, cfg llama.Config) (llama.FFN, error) {
	moe, err := llama.MoEFromGGUF(f, cfg)
	if err != nil {
		return nil, err
	}
	if moe == nil {
		return &llama.GLU{}, nil
	}
	if cfg.FFN <= 0 {
		return nil, fmt.Errorf("%s.feed_forward_length is missing: it is the experts' width", Arch)
	}
	moe.Width, moe.Gating, moe.NormWeights, moe.WeightScale, moe.SharedGate = cfg.FFN, llama.SoftmaxTopK, true, 0, false
	return moe, nil
}
