// Package lfm2 is Liquid AI's LFM2 family (general.architecture "lfm2":
// LFM2 and LFM2.5 350M to 2.6B), hybrids of gated short convolutions and
// attention, built for laptops and phones. Importing it registers the
// architecture with package family.
//
// The block, as llama.cpp's lfm2 graph: the layers whose
// attention.head_count_kv entry is 0 are short convolutions (llama.ShortConv
// of length shortconv.l_cache), the others grouped-query attention with
// per-head RMSNorm of queries and keys and NEOX RoPE; every layer has a
// dense SwiGLU feed-forward; the final norm is the tensor token_embd_norm.
// A short-convolution layer keeps Embd·(l_cache−1) values per sequence
// instead of keys and values. The format is the file's chat template
// through package family's Jinja engine, with LFM2's Python-style tool
// calls (package chat).
package lfm2

import (
	"fmt"

	"github.com/smolgo/smolgo/family"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/llama"
	"github.com/smolgo/smolgo/rope"
)

// Arch is the architecture name of LFM2 files.
const Arch = "lfm2"

func init() {
	family.Register(family.Family{Arch: Arch, Describe: Describe, Format: Format})
	family.ProvideToolSyntax("lfm2", Tools)
}

// Describe is LFM2's block for a file.
func Describe(f *gguf.File, cfg llama.Config) (llama.Arch, error) {
	key := func(k string) string { return Arch + "." + k }
	kernel, err := f.Uint32(key("shortconv.l_cache"))
	if err != nil {
		return llama.Arch{}, err
	}
	if cfg.LayerKVHeads == nil {
		return llama.Arch{}, fmt.Errorf("%s is not a per-layer array with zeros: an LFM2 file says which layers are convolutions there", key("attention.head_count_kv"))
	}
	if moe, _ := llama.MoEFromGGUF(f, cfg); moe != nil {
		return llama.Arch{}, fmt.Errorf("%s = %d: LFM2's mixtures of experts are architecture lfm2moe, which is not supported", key("expert_count"), moe.Experts)
	}
	r := cfg.Rope
	r.Layout = rope.NeoX
	a := llama.Uniform(Arch, cfg.Layers, llama.Layer{FFN: &llama.GLU{}})
	for i := range a.Layers {
		if cfg.LayerKVHeads[i] == 0 {
			a.Layers[i].Mixer = &llama.ShortConv{Kernel: int(kernel)}
		} else {
			a.Layers[i].Mixer = &llama.Attention{Rope: &r, QKNorm: true}
		}
	}
	a.OutputNorm = "token_embd_norm"
	return a, nil
}
