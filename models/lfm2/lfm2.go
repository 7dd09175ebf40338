// Package lfm2 is Liquid AI's LFM2 family: general.architecture "lfm2"
// (LFM2 and LFM2.5 350M to 2.6B) and "lfm2moe" (LFM2-8B-A1B,
// LFM2-24B-A2B), hybrids of gated short convolutions and attention, built
// for laptops and phones. Importing it registers both architectures with
// package family.
//
// The block, as llama.cpp's lfm2 graph (src/models/lfm2.cpp, which
// lfm2moe's loader shares): the layers whose attention.head_count_kv entry
// is 0 are short convolutions (llama.ShortConv of length shortconv.l_cache),
// the others grouped-query attention with per-head RMSNorm of queries and
// keys and NEOX RoPE; the final norm is the tensor token_embd_norm. A
// short-convolution layer keeps Embd·(l_cache−1) values per sequence
// instead of keys and values. Every layer of an lfm2 file has a dense
// SwiGLU feed-forward. In an lfm2moe file the first
// leading_dense_block_count layers do, and the others a mixture of experts
// (llama.MoE): the gating of expert_gating_func (sigmoid in the published
// files), experts chosen by the gates plus a per-expert selection bias
// (exp_probs_b.bias), weighted by the unbiased gates divided by their sum.
//
// The format is the file's chat template through package family's Jinja
// engine, with LFM2's Python-style tool calls (package chat).
package lfm2

import (
	"fmt"

	"github.com/smolgo/smolgo/family"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/llama"
	"github.com/smolgo/smolgo/rope"
)

// The architecture names of LFM2's files.
const (
	Arch    = "lfm2"
	ArchMoE = "lfm2moe"
)

func init() {
	family.Register(family.Family{Arch: Arch, Describe: Describe, Format: Format})
	family.Register(family.Family{Arch: ArchMoE, Describe: DescribeMoE, Format: Format})
	family.ProvideToolSyntax("lfm2", Tools)
}

// Describe is LFM2's block for an lfm2 file.
func Describe(f *gguf.File, cfg llama.Config) (llama.Arch, error) {
	if _, ok := f.Get(Arch + ".expert_count"); ok {
		n, err := f.Uint32(Arch + ".expert_count")
		if err != nil {
			return llama.Arch{}, err
		}
		if n != 0 {
			return llama.Arch{}, fmt.Errorf("%s.expert_count = %d: LFM2's mixtures of experts are architecture %s", Arch, n, ArchMoE)
		}
	}
	return describe(f, cfg, cfg.Layers, nil)
}

// DescribeMoE is LFM2's block for an lfm2moe file.
func DescribeMoE(f *gguf.File, cfg llama.Config) (llama.Arch, error) {
	key := func(k string) string { return ArchMoE + "." + k }
	// llama.cpp requires the gating key for lfm2moe (MoEFromGGUF would
	// default to softmax).
	if _, ok := f.Get(key("expert_gating_func")); !ok {
		return llama.Arch{}, fmt.Errorf("%s is missing: an %s file says how its experts are gated", key("expert_gating_func"), ArchMoE)
	}
	moe, err := llama.MoEFromGGUF(f, cfg)
	if err != nil {
		return llama.Arch{}, err
	}
	if moe == nil {
		return llama.Arch{}, fmt.Errorf("%s is missing or 0: an %s file is a mixture of experts", key("expert_count"), ArchMoE)
	}
	if moe.SharedWidth != 0 {
		return llama.Arch{}, fmt.Errorf("%s = %d: LFM2's mixtures of experts have no shared expert", key("expert_shared_feed_forward_length"), moe.SharedWidth)
	}
	if moe.Gating == llama.TopKSoftmax {
		return llama.Arch{}, fmt.Errorf("%s = 3: LFM2 gates its experts by softmax (1) or sigmoid (2)", key("expert_gating_func"))
	}
	// llama.cpp's lfm2 graph: the chosen gates always renormalized, no
	// weight scale (it reads no expert_weights_scale for lfm2moe), the
	// selection bias always there.
	moe.NormWeights, moe.WeightScale, moe.SelectionBias, moe.Activation = true, 0, true, llama.SiLU
	dense := 0
	if _, ok := f.Get(key("leading_dense_block_count")); ok {
		n, err := f.Uint32(key("leading_dense_block_count"))
		if err != nil {
			return llama.Arch{}, err
		}
		if int64(n) > int64(cfg.Layers) {
			return llama.Arch{}, fmt.Errorf("%s = %d: more than the %d blocks", key("leading_dense_block_count"), n, cfg.Layers)
		}
		dense = int(n)
	}
	return describe(f, cfg, dense, moe)
}

// describe builds the layers: dense feed-forwards in the first dense
// layers, moe (nil for none) in the others.
func describe(f *gguf.File, cfg llama.Config, dense int, moe *llama.MoE) (llama.Arch, error) {
	key := func(k string) string { return cfg.Arch + "." + k }
	kernel, err := f.Uint32(key("shortconv.l_cache"))
	if err != nil {
		return llama.Arch{}, err
	}
	if cfg.LayerKVHeads == nil {
		return llama.Arch{}, fmt.Errorf("%s is not a per-layer array with zeros: an LFM2 file says which layers are convolutions there", key("attention.head_count_kv"))
	}
	r := cfg.Rope
	r.Layout = rope.NeoX
	a := llama.Uniform(cfg.Arch, cfg.Layers, llama.Layer{FFN: &llama.GLU{}})
	for i := range a.Layers {
		if cfg.LayerKVHeads[i] == 0 {
			a.Layers[i].Mixer = &llama.ShortConv{Kernel: int(kernel)}
		} else {
			a.Layers[i].Mixer = &llama.Attention{Rope: &r, QKNorm: true}
		}
		if i >= dense && moe != nil {
			m := *moe
			a.Layers[i].FFN = &m
		}
	}
	a.OutputNorm = "token_embd_norm"
	return a, nil
}
