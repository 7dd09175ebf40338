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
	r := cfg.Rope
	factors, err := llama.RopeFactors(f, cfg)
	if err != nil {
		return llama.Arch{}, err
	}
	r.Factors = factors
	at := &llama.Attention{Rope: &r}
	layer := llama.Layer{Mixer: at, FFN: ffn}
	on, err := RopeOn(f, arch)
	if err != nil {
		return llama.Arch{}, err
	}
	if !on {
		at.Rope = nil
	}
	_, bias := f.Tensor("blk.0.attn_q.bias")
	_, outBias := f.Tensor("blk.0.attn_output.bias")
	at.QKVBias, at.OutBias = bias, outBias
	a := llama.Uniform(arch, cfg.Layers, layer)
	// llama.cpp's granite and granitemoe loaders require the logit scale.
	mul, err := ReadMultipliers(f, arch, true)
	if err != nil {
		return llama.Arch{}, err
	}
	mul.Apply(&a)
	return a, nil
}

// Multipliers are Granite's four scales, as a file's keys give them (0
// where a key is absent, which llama.cpp and llama.Arch both read as "not
// set"):
//
//	<arch>.embedding_scale  → Embedding: multiplies the token embeddings
//	<arch>.residual_scale   → Residual: multiplies each block output before the residual add
//	<arch>.attention.scale  → Attention: the softmax's score scale, instead of 1/√HeadDim
//	<arch>.logit_scale      → Logit: divides the logits
//
// Every Granite architecture has them: granite, granitemoe and the hybrid
// granitehybrid (package models/granitehybrid).
type Multipliers struct {
	Embedding, Residual, Attention, Logit float32
}

// ReadMultipliers reads architecture arch's multipliers from f. With
// requireLogit a file without <arch>.logit_scale is an error (llama.cpp's
// granite loader requires it; its granitehybrid loader does not).
func ReadMultipliers(f *gguf.File, arch string, requireLogit bool) (Multipliers, error) {
	var m Multipliers
	for _, s := range []struct {
		key      string
		dst      *float32
		required bool
	}{
		{arch + ".logit_scale", &m.Logit, requireLogit},
		{arch + ".embedding_scale", &m.Embedding, false},
		{arch + ".attention.scale", &m.Attention, false},
		{arch + ".residual_scale", &m.Residual, false},
	} {
		if _, ok := f.Get(s.key); !ok && !s.required {
			continue
		}
		v, err := f.Float32(s.key)
		if err != nil {
			return Multipliers{}, err
		}
		*s.dst = v
	}
	return m, nil
}

// Apply puts the multipliers into a: the embedding, residual and logit
// scales, and Attention as the score scale of every attention layer.
func (m Multipliers) Apply(a *llama.Arch) {
	a.EmbedScale, a.ResidualScale, a.LogitScale = m.Embedding, m.Residual, m.Logit
	for i := range a.Layers {
		if at := a.Layers[i].Attention(); at != nil {
			at.Scale = m.Attention
		}
	}
}

// RopeOn reports whether architecture arch's attention layers are
// rotated: <arch>.rope.scaling.finetuned, true when the key is absent.
// Granite uses the key as a switch (false in the NoPE Granite 4.0 files),
// as llama.cpp's Granite loaders read it.
func RopeOn(f *gguf.File, arch string) (bool, error) {
	key := arch + ".rope.scaling.finetuned"
	if _, ok := f.Get(key); !ok {
		return true, nil
	}
	return f.Bool(key)
}
