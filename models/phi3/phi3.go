// Package phi3 is Microsoft's Phi-3 family (general.architecture "phi3":
// Phi-4-mini-instruct, 3.8B, and Phi-3/3.5-mini). Importing it registers
// the architecture with package family.
//
// The block is the llama block with:
//   - q, k and v stored as one tensor (attn_qkv), and the feed-forward's
//     gate and up as one (ffn_up with 2·FFN rows, the gate first), which
//     llama.LoadWeights reads as row ranges without a copy;
//   - NEOX RoPE pairs over the first rope.dimension_count dimensions of
//     each head (Phi-4-mini rotates 96 of 128);
//   - LongRoPE: per-frequency factors rope_factors_short.weight for
//     contexts up to rope.scaling.original_context_length and
//     rope_factors_long.weight above it (llama.Layer.LongRope; the model's
//     context length picks one, as llama.cpp's does), and cos and sin
//     scaled by rope.scaling.attn_factor;
//   - queries scaled by 1/√HeadDim before the scores (llama.Arch.QueryScale),
//     as llama.cpp's phi3 graph does.
//
// A sliding window in the file (Phi-3-mini's attention.sliding_window) is
// ignored, as llama.cpp ignores it for phi3 today; mixture-of-experts files
// (phimoe) are another architecture.
package phi3

import (
	"fmt"
	"math"

	"github.com/smolgo/smolgo/family"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/llama"
	"github.com/smolgo/smolgo/rope"
)

// Arch is the architecture name of Phi-3 family files.
const Arch = "phi3"

func init() {
	family.Register(family.Family{Arch: Arch, Describe: Describe, Format: Format})
	family.ProvideToolSyntax("phi4", FormatSpec.Tools)
}

// Describe is Phi-3's block for a file.
func Describe(f *gguf.File, cfg llama.Config) (llama.Arch, error) {
	key := func(k string) string { return Arch + "." + k }
	if n, err := f.Uint32(key("expert_count")); err == nil && n > 0 {
		return llama.Arch{}, fmt.Errorf("%s = %d: mixture-of-experts models are not supported", key("expert_count"), n)
	}
	for _, name := range []string{"output.bias", "output_norm.bias", "blk.0.attn_norm.bias"} {
		if _, ok := f.Tensor(name); ok {
			return llama.Arch{}, fmt.Errorf("tensor %s is in the file, but architecture %s's block has no place for it", name, Arch)
		}
	}
	short := cfg.Rope
	short.Layout = rope.NeoX
	a := llama.Uniform(Arch, cfg.Layers, llama.Layer{
		Mixer: &llama.Attention{Rope: &short, QueryScale: float32(1 / math.Sqrt(float64(cfg.HeadDim)))},
		FFN:   &llama.GLU{},
	})

	factors := func(name string) ([]float32, error) {
		if _, ok := f.Tensor(name); !ok {
			return nil, nil
		}
		return llama.RopeFactorsNamed(f, cfg, name)
	}
	var err error
	if short.Factors, err = factors("rope_factors_short.weight"); err != nil {
		return llama.Arch{}, err
	}
	longFactors, err := factors("rope_factors_long.weight")
	if err != nil {
		return llama.Arch{}, err
	}
	if longFactors == nil {
		return a, nil
	}
	long := short
	long.Factors = longFactors
	orig := cfg.Context
	if _, ok := f.Get(key("rope.scaling.original_context_length")); ok {
		n, err := f.Uint32(key("rope.scaling.original_context_length"))
		if err != nil {
			return llama.Arch{}, err
		}
		orig = int(n)
	}
	if orig <= 0 {
		return llama.Arch{}, fmt.Errorf("%s is 0: no context length to choose the long RoPE factors above", key("rope.scaling.original_context_length"))
	}
	a.LongContext = orig
	for i := range a.Layers {
		a.Layers[i].Attention().LongRope = &long
	}
	return a, nil
}
