// Package granite is IBM's Granite dense family (general.architecture
// "granite": Granite 3.x, e.g. granite-3.3-2b-instruct, and the dense
// Granite 4.0 models). Importing it registers the architecture with package
// family.
//
// The block is the llama block with four of Granite's multipliers, each a
// key of the file that llama.Arch carries as data:
//
//	granite.embedding_scale  → Arch.EmbedScale: multiplies the token embeddings
//	granite.attention.scale  → Arch.AttentionScale: the softmax's score scale, instead of 1/√HeadDim
//	granite.residual_scale   → Arch.ResidualScale: multiplies each block output before the residual add
//	granite.logit_scale      → Arch.LogitScale: divides the logits (required, as llama.cpp requires it)
//
// RoPE pairs are NORM (as in llama), with rope_freqs.weight factors where a
// file has them; granite.rope.scaling.finetuned = false turns RoPE off in
// every layer, as llama.cpp reads it. Mixture-of-experts Granite files are
// architecture "granitemoe" and are not supported; neither are the hybrid
// Mamba ones ("granitehybrid").
package granite

import (
	"fmt"

	"github.com/smolgo/smolgo/family"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/llama"
)

// Arch is the architecture name of Granite dense files.
const Arch = "granite"

func init() {
	family.Register(family.Family{Arch: Arch, Describe: Describe, Format: Format})
	family.ProvideToolSyntax("granite", Tools3)
}

// Describe is Granite's block for a file.
func Describe(f *gguf.File, cfg llama.Config) (llama.Arch, error) {
	key := func(k string) string { return Arch + "." + k }
	if n, err := f.Uint32(key("expert_count")); err == nil && n > 0 {
		return llama.Arch{}, fmt.Errorf("%s = %d: mixture-of-experts models are not supported", key("expert_count"), n)
	}
	r := cfg.Rope
	factors, err := llama.RopeFactors(f, cfg)
	if err != nil {
		return llama.Arch{}, err
	}
	r.Factors = factors
	layer := llama.Layer{Rope: &r}
	if _, ok := f.Get(key("rope.scaling.finetuned")); ok {
		on, err := f.Bool(key("rope.scaling.finetuned"))
		if err != nil {
			return llama.Arch{}, err
		}
		if !on {
			layer.Rope = nil
		}
	}
	_, bias := f.Tensor("blk.0.attn_q.bias")
	layer.QKVBias = bias
	a := llama.Uniform(Arch, cfg.Layers, layer)

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
		{key("attention.scale"), &a.AttentionScale},
		{key("residual_scale"), &a.ResidualScale},
	} {
		if _, ok := f.Get(s.key); !ok {
			continue
		}
		if *s.dst, err = f.Float32(s.key); err != nil {
			return llama.Arch{}, err
		}
	}
	return a, nil
}
