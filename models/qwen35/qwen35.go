// Package qwen35 is the Qwen3.5 family (general.architecture "qwen35":
// Qwen3.5 0.8B, 2B, 4B and 9B), hybrids of Gated DeltaNet linear attention
// and gated full attention. Importing it registers the architecture with
// package family.
//
// The block, as llama.cpp's qwen35 graph: every full_attention_interval-th
// layer (the 4th, 8th, ...) is grouped-query attention whose attn_q holds
// each head's query and a sigmoid gate on its output (llama.Attention's
// QueryGate), with per-head RMSNorm of queries and keys and interleaved
// M-RoPE (rope.dimension_sections) on the first rope.dimension_count
// dimensions of each head; the other layers are Gated DeltaNets
// (llama.GatedDeltaNet, from the ssm.* keys), which keep per sequence a
// small convolution window and one state matrix per value head instead of
// keys and values. Every layer has a dense SwiGLU feed-forward whose input
// norm is post_attention_norm; embeddings are tied unless the file has
// output.weight. A multi-token-prediction block after the model's own
// (nextn_predict_layers 1, as llama.cpp's converter writes Qwen3.5 and
// 3.6) is described in Arch.NextN: the model's pass never runs it, and the
// engine drafts with it on request (engine.WithMTP; llama's mtp.go).
package qwen35

import (
	"fmt"

	"github.com/smolgo/smolgo/family"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/llama"
	"github.com/smolgo/smolgo/rope"
)

// Arch is the architecture name of Qwen3.5 files.
const Arch = "qwen35"

func init() {
	family.Register(family.Family{Arch: Arch, Describe: Describe, Format: Format})
}

// Describe is Qwen3.5's block for a file.
func Describe(f *gguf.File, cfg llama.Config) (llama.Arch, error) {
	if n, err := f.Uint32(Arch + ".expert_count"); err == nil && n > 0 {
		return llama.Arch{}, fmt.Errorf("%s.expert_count = %d: Qwen3.5's mixtures of experts are architecture qwen35moe", Arch, n)
	}
	return Hybrid(f, cfg, func() llama.FFN { return &llama.GLU{} })
}

// Hybrid is the Qwen3.5 block of a file whose architecture is cfg.Arch
// (qwen35, qwen35moe), with the feed-forward network ffn makes in every
// layer: the layers full_attention_interval picks are gated attention, the
// others Gated DeltaNets.
func Hybrid(f *gguf.File, cfg llama.Config, ffn func() llama.FFN) (llama.Arch, error) {
	key := func(k string) string { return cfg.Arch + "." + k }
	gdn, err := llama.GatedDeltaNetFromGGUF(f, cfg)
	if err != nil {
		return llama.Arch{}, err
	}
	attn, err := attentionLayers(f, cfg)
	if err != nil {
		return llama.Arch{}, err
	}
	r := cfg.Rope
	r.Layout = rope.NeoX
	if r.Sections, err = sections(f, key("rope.dimension_sections")); err != nil {
		return llama.Arch{}, err
	}
	r.Interleaved = true // llama.cpp's LLAMA_ROPE_TYPE_IMROPE
	a := llama.Arch{Name: cfg.Arch, Layers: make([]llama.Layer, cfg.Layers)}
	for i := range a.Layers {
		ly := &a.Layers[i]
		ly.FFN, ly.FFNNorm = ffn(), "post_attention_norm"
		if attn[i] {
			ly.Mixer = &llama.Attention{Rope: &r, QKNorm: true, QueryGate: true}
		} else {
			g := *gdn
			ly.Mixer = &g
		}
	}
	if cfg.NextN == 1 {
		// The multi-token-prediction block: a full-attention block with
		// the model's feed-forward (llama.cpp's load_block_mtp).
		a.NextN = []llama.Layer{{Mixer: &llama.Attention{Rope: &r, QKNorm: true, QueryGate: true}, FFN: ffn(), FFNNorm: "post_attention_norm"}}
	}
	return a, nil
}

// attentionLayers reads which layers are full attention: every
// full_attention_interval-th one (default 4), as llama.cpp decides.
func attentionLayers(f *gguf.File, cfg llama.Config) ([]bool, error) {
	key := cfg.Arch + ".full_attention_interval"
	interval := uint32(4)
	if _, ok := f.Get(key); ok {
		v, err := f.Uint32(key)
		if err != nil {
			return nil, err
		}
		interval = v
	}
	if interval == 0 || interval > 1<<24 {
		return nil, fmt.Errorf("%s = %d: want a layer interval of 1 or more", key, interval)
	}
	attn := make([]bool, cfg.Layers)
	for i := range attn {
		attn[i] = (i+1)%int(interval) == 0
	}
	return attn, nil
}

// sections reads rope.dimension_sections: four counts of rotated pairs.
func sections(f *gguf.File, key string) ([4]int, error) {
	var s [4]int
	v, err := f.Int32s(key)
	if err != nil {
		return s, err
	}
	if len(v) < 3 || len(v) > 4 {
		return s, fmt.Errorf("%s has %d entries, want 4", key, len(v))
	}
	for i, x := range v {
		if x < 0 || x > 1<<16 {
			return s, fmt.Errorf("%s[%d] = %d is out of range", key, i, x)
		}
		s[i] = int(x)
	}
	if s == ([4]int{}) {
		return s, fmt.Errorf("%s is all zeros", key)
	}
	return s, nil
}
