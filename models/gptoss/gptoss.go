package gptoss

import (
	"fmt"

	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/llama"
	"github.com/smolgo/smolgo/rope"
)

// Arch is the architecture name of gpt-oss files.
const Arch = "gpt-oss"

// Describe is gpt-oss's block for a file, as llama.cpp's openai-moe graph:
// attention with q, k, v and output biases, a sink logit per head, NEOX
// RoPE with YaRN, a sliding window on alternate layers (from layer 0;
// attention.sliding_window_pattern overrides) whose rotation may have its
// own base (rope.freq_base_swa); then the feed-forward's norm
// (post_attention_norm) and a mixture of experts whose router has a bias,
// the expert_used_count largest logits weighted by their softmax, each
// expert a clamped SwiGLU (SwiGLUOAI) with biases.
func Describe(f *gguf.File, cfg llama.Config) (llama.Arch, error) {
	key := func(k string) string { return Arch + "." + k }
	moe, err := llama.MoEFromGGUF(f, cfg)
	if err != nil {
		return llama.Arch{}, err
	}
	if moe == nil {
		return llama.Arch{}, fmt.Errorf("%s is missing or 0: a gpt-oss file is a mixture of experts", key("expert_count"))
	}
	if moe.SharedWidth != 0 {
		return llama.Arch{}, fmt.Errorf("%s = %d: gpt-oss has no shared expert", key("expert_shared_feed_forward_length"), moe.SharedWidth)
	}
	moe.Gating, moe.NormWeights, moe.WeightScale = llama.TopKSoftmax, false, 0
	moe.RouterBias, moe.ExpertBias, moe.Activation = true, true, llama.SwiGLUOAI

	window, err := f.Uint32(key("attention.sliding_window"))
	if err != nil {
		return llama.Arch{}, err
	}
	if window == 0 || window > 1<<24 {
		return llama.Arch{}, fmt.Errorf("%s = %d is out of range", key("attention.sliding_window"), window)
	}
	local, err := llama.SlidingLayers(f, key("attention.sliding_window_pattern"), cfg.Layers, 2)
	if err != nil {
		return llama.Arch{}, err
	}
	global := cfg.Rope
	global.Layout = rope.NeoX
	lr := &global
	if _, ok := f.Get(key("rope.freq_base_swa")); ok {
		b, err := f.Float32(key("rope.freq_base_swa"))
		if err != nil {
			return llama.Arch{}, err
		}
		if b != global.Base {
			r := global
			r.Base = b
			lr = &r
		}
	}
	a := llama.Uniform(Arch, cfg.Layers, llama.Layer{
		Mixer:   &llama.Attention{Rope: &global, QKVBias: true, Sinks: true, OutBias: true},
		FFN:     moe,
		FFNNorm: "post_attention_norm",
	})
	for i, on := range local {
		if on {
			at := a.Layers[i].Attention()
			at.Rope, at.Window = lr, int(window)
		}
	}
	return a, nil
}
