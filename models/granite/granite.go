// Package granite is IBM's Granite dense family (general.architecture
// "granite": Granite 3.x, e.g. granite-3.3-2b-instruct, and the dense
// Granite 4.0 models). Importing it registers the architecture with package
// family.
//
// The block is the llama block with four of Granite's multipliers, each a
// key of the file that llama.Arch carries as data:
//
//	granite.embedding_scale  → Arch.EmbedScale: multiplies the token embeddings
//	granite.attention.scale  → Attention.Scale: the softmax's score scale, instead of 1/√HeadDim
//	granite.residual_scale   → Arch.ResidualScale: multiplies each block output before the residual add
//	granite.logit_scale      → Arch.LogitScale: divides the logits (required, as llama.cpp requires it)
//
// RoPE pairs are NORM (as in llama), with rope_freqs.weight factors where a
// file has them; granite.rope.scaling.finetuned = false turns RoPE off in
// every layer, as llama.cpp reads it; q, k, v and output biases where the
// file has them.
//
// Granite's mixtures of experts (general.architecture "granitemoe": Granite
// 3.x 1B-A400M and 3B-A800M) are the same block with a mixture of experts
// in place of the dense feed-forward: softmax gating, the chosen experts'
// weights renormalized, each expert a SwiGLU of width feed_forward_length,
// and a shared expert where expert_shared_feed_forward_length says so
// (DescribeMoE). The hybrid Mamba files ("granitehybrid") are another
// block.
package granite

import (
	"fmt"

	"github.com/smolgo/smolgo/family"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/llama"
)

// Arch is the architecture name of Granite dense files, MoEArch that of
// Granite's mixtures of experts.
const (
	Arch    = "granite"
	MoEArch = "granitemoe"
)

func init() {
	family.Register(family.Family{Arch: Arch, Describe: Describe, Format: Format})
	family.Register(family.Family{Arch: MoEArch, Describe: DescribeMoE, Format: Format})
	family.ProvideToolSyntax("granite", Tools3)
}

// Describe is Granite's block for a dense file.
func Describe(f *gguf.File, cfg llama.Config) (llama.Arch, error) {
	if n, err := f.Uint32(Arch + ".expert_count"); err == nil && n > 0 {
		return llama.Arch{}, fmt.Errorf("%s.expert_count = %d: a Granite mixture of experts is architecture %s", Arch, n, MoEArch)
	}
	return describe(f, cfg, Arch, &llama.GLU{})
}

// DescribeMoE is the block of a granitemoe file, as llama.cpp's
// granite-moe graph builds it.
func DescribeMoE(f *gguf.File, cfg llama.Config) (llama.Arch, error) {
	moe, err := llama.MoEFromGGUF(f, cfg)
	if err != nil {
		return llama.Arch{}, err
	}
	if moe == nil {
		return llama.Arch{}, fmt.Errorf("%s.expert_count is missing or 0: a %s file is a mixture of experts", MoEArch, MoEArch)
	}
	// The experts' width is feed_forward_length; the shared expert is
	// ungated; softmax gating, renormalized, no weight scale.
	moe.Width, moe.Gating, moe.NormWeights, moe.WeightScale, moe.SharedGate = cfg.FFN, llama.SoftmaxTopK, true, 0, false
	if moe.Width <= 0 {
		return llama.Arch{}, fmt.Errorf("%s.feed_forward_length is missing: it is the experts' width", MoEArch)
	}
	return describe(f, cfg, MoEArch, moe)
}

// describe is the Granite block of architecture arch with feed-forward
// ffn in every layer.
func describe(f *gguf.File, cfg llama.Config, arch string, ffn llama.FFN) (llama.Arch, error) {
	key := func(k string) string { return arch + "." + k }
	r := cfg.Rope
	factors, err := llama.RopeFactors(f, cfg)
	if err != nil {
		return llama.Arch{}, err
	}
	r.Factors = factors
	at := &llama.Attention{Rope: &r}
	layer := llama.Layer{Mixer: at, FFN: ffn}
	if _, ok := f.Get(key("rope.scaling.finetuned")); ok {
		on, err := f.Bool(key("rope.scaling.finetuned"))
		if err != nil {
			return llama.Arch{}, err
		}
		if !on {
			at.Rope = nil
		}
	}
	_, bias := f.Tensor("blk.0.attn_q.bias")
	_, outBias := f.Tensor("blk.0.attn_output.bias")
	at.QKVBias, at.OutBias = bias, outBias
	var attnScale float32
	a := llama.Uniform(arch, cfg.Layers, layer)

	// llama.cpp requires the logit scale and reads the others as optional,
	// 0 meaning "not set" for each: the same convention as llama.Arch.
	a.LogitScale, err = f.Float32(key("logit_scale"))
	if err != nil {
		return llama.Arch{}, err
	}
	for _, s := range []struct {
		key string
		dst *float32
	}{
		{key("embedding_scale"), &a.EmbedScale},
		{key("attention.scale"), &attnScale},
		{key("residual_scale"), &a.ResidualScale},
	} {
		if _, ok := f.Get(s.key); !ok {
			continue
		}
		if *s.dst, err = f.Float32(s.key); err != nil {
			return llama.Arch{}, err
		}
	}
	for i := range a.Layers {
		a.Layers[i].Attention().Scale = attnScale
	}
	return a, nil
}
