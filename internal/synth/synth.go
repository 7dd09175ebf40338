// Package synth writes deterministic random-weight models as GGUF files, in
// any shape of the families smolgo runs and in the common llama.cpp
// quantization mixes: SmolLM3 (arch smollm3), Llama and Llama 3.2 (llama,
// optionally with rope_freqs.weight), Qwen2.5 (qwen2), Qwen3 (qwen3),
// Gemma 3 (gemma3), Granite (granite), Phi-3 (phi3), BERT encoders (bert),
// the mixtures of experts Qwen3-MoE (qwen3moe), gpt-oss (gpt-oss),
// Mixtral (llama with experts), Qwen2-MoE (qwen2moe) and Granite MoE
// (granitemoe), and LFM2's hybrids of short convolutions and attention
// (lfm2, and lfm2moe with experts).
// Each family gets the tensors and metadata keys that llama.cpp's loader for
// it reads (src/models/<arch>.cpp in llama.cpp).
//
// The weights are not trained, but their scales are chosen so the model
// behaves like a trained one numerically: logits with a standard deviation
// of about 4, attention scores of about 2, a strong first FFN block and
// small later updates, so tiny numeric differences do not explode across
// layers. The generator, scales and tensor order are those of the project's
// llamaref tool (../shared/tools/llamaref, `llamaref synth`), which writes
// its files with llama.cpp's own GGUF writer. So a preset in F32 is the same
// file llamaref writes with the same flags, bit for bit: "tinyq" reproduces
// the golden SmolLM3 model (../shared/golden) and "qwen3-tiny",
// "qwen2-tiny", "llama32-tiny", "gemma3-tiny", "bert-tiny" and
// "bert-rank-tiny" the golden-families models (../shared/golden-families),
// "qwen3moe-tiny", "gptoss-tiny" and "lfm2-tiny" the MoE and LFM2 ones of
// ../shared/golden-next.
// Quantizing follows llama.cpp's llama_model_quantize (its choice of type
// per tensor, its order of tensors and keys, and its block encoders), so the
// quantized presets reproduce llama.cpp's quantized golden files too.
//
// A model is described by a [Model] (name, [Shape], seed), usually one of
// the presets ([Preset], [PresetNames]): tiny ones for tests and the real
// shapes of published models (Qwen3-0.6B, Llama-3.2-1B, gemma-3-1b,
// SmolLM2-135M, bge-small-en-v1.5, Qwen3-30B-A3B, gpt-oss-20b, ...) for
// benchmarks; a real shape can keep fewer of its blocks (Shape.Layers),
// which are then the same tensors, byte for byte, as the whole model's
// first blocks. SmolLM2 is a plain
// llama file; its presets also carry its pre-tokenizer name and chat
// template ([Model.Pre], [Model.ChatTemplate]). [Write] streams it to a file with
// gguf.Write, generating and quantizing one tensor (in chunks of rows) at a
// time, so a 3B shape needs little memory.
package synth

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/smolgo/smolgo/gguf"
)

// The architectures (general.architecture) synth writes.
const (
	ArchSmolLM3 = "smollm3" // llama with RoPE skipped in every fourth layer (NoPE)
	ArchLlama   = "llama"   // Llama 2/3; Llama 3.1/3.2 add rope_freqs.weight
	ArchQwen2   = "qwen2"   // Qwen2 and Qwen2.5: llama plus Q/K/V biases, NEOX RoPE
	ArchQwen3   = "qwen3"   // llama plus per-head Q/K RMSNorm, NEOX RoPE
	ArchGemma3  = "gemma3"  // Q/K norms, post-norms, GELU FFN, sliding-window layers
	ArchBERT    = "bert"    // encoder: learned positions, LayerNorm with bias, pooling
	ArchPhi3    = "phi3"    // fused qkv and gate+up, NEOX over part of a head, LongRoPE
	ArchGranite = "granite" // llama plus four multipliers (GraniteScales)
	// Mixture of experts (Shape.Experts): a router picks experts per token.
	ArchQwen3MoE = "qwen3moe" // qwen3 with an MoE FFN (softmax over all experts, top k renormalized)
	ArchGPTOSS   = "gpt-oss"  // biases, attention sinks, alternating sliding window, MoE FFN with biases
	// qwen2 with an MoE FFN (softmax over all experts, top k, not
	// renormalized) and a shared expert gated by a sigmoid (SharedFFN)
	ArchQwen2MoE = "qwen2moe"
	// granite with an MoE FFN (softmax, top k renormalized, experts as
	// wide as FFN) and, with SharedFFN, an ungated shared expert
	ArchGraniteMoE = "granitemoe"
	// LFM2's hybrids: gated short convolutions and attention with Q/K norms.
	ArchLFM2    = "lfm2"    // dense SwiGLU FFNs
	ArchLFM2MoE = "lfm2moe" // dense leading blocks, then experts with sigmoid gating and a selection bias
)

// Shape is a model's architecture and size.
//
// The fields after Untied belong to one family each; Validate rejects them
// on any other.
type Shape struct {
	Arch            string  // one of the Arch constants
	Layers          int     // transformer blocks
	Embd            int     // hidden size
	FFN             int     // feed-forward size
	Heads           int     // query heads
	KVHeads         int     // key/value heads (grouped-query attention); bert: equal to Heads
	HeadDim         int     // 0 means Embd/Heads; qwen2 and bert allow only that
	Context         int     // training context length (bert: rows of position_embd)
	Vocab           int     // 0 means the built-in 337 tokens; more pads them
	RopeBase        float32 // rope.freq_base (not bert)
	RMSEps          float32 // RMSNorm epsilon; bert: its LayerNorm epsilon
	RopeScaling     string  // "" (none), "linear" or "yarn"
	RopeFactor      float32 // with RopeScaling
	RopeOrigContext int     // with RopeScaling
	Untied          bool    // write a separate output.weight (otherwise token_embd is reused)

	// RopeFreqs (llama) adds rope_freqs.weight: one factor per rotated
	// pair (HeadDim/2), by which llama.cpp divides that pair's RoPE
	// frequency. It is how GGUF carries Llama 3.1/3.2's "llama3"
	// rope_scaling: llama.cpp's converter computes the factors and writes
	// no rope.scaling keys (a rope.scaling.type of "llama3" would not
	// load, and a rope.scaling.factor would scale every frequency again).
	//   - "" writes none.
	//   - "random": 1 + 3|N(0,1)| per pair, llamaref's --rope-freqs (the
	//     golden llama32-tiny): factors far from 1 in every pair, so a
	//     runtime that ignores or misapplies them fails visibly.
	//   - "llama3": the factors of Llama3Rope, as a real Llama 3.2 has.
	RopeFreqs  string
	Llama3Rope Llama3Rope // with RopeFreqs "llama3"

	// Gemma 3's interleaved attention: sliding-window layers with their
	// own RoPE base, and every SlidingWindowPattern-th layer global
	// (layer i is global when i%pattern == pattern-1). SlidingWindow 0
	// writes none of the three keys: every layer is global.
	SlidingWindow        int     // gemma3: attention.sliding_window
	SlidingWindowPattern int     // gemma3: attention.sliding_window_pattern
	RopeBaseSWA          float32 // gemma3: rope.freq_base_swa, the local layers' base
	Softcap              float32 // gemma3: final_logit_softcapping, written when > 0

	// Granite (granite, granitemoe) is Granite's four multipliers; zero fields are
	// not written, except the logit scale, which llama.cpp requires (0
	// writes 1).
	Granite GraniteScales

	// Phi-3's rotation (phi3): RopeDims of each head rotate (0: all), and
	// LongRope writes LongRoPE's random short and long frequency factors
	// (rope_factors_short.weight, rope_factors_long.weight), with
	// rope.scaling.attn_factor RopeAttnFactor (0: not written) and
	// rope.scaling.original_context_length RopeOrigContext, the context
	// above which llama.cpp takes the long ones.
	RopeDims       int
	LongRope       bool
	RopeAttnFactor float32

	// Pooling (bert; qwen3: "last" only, a Qwen3-Embedding file) is the
	// pooling_type: "mean" (or ""), "cls", "last", or
	// "rank", a reranker, which adds the classifier head (cls.weight,
	// cls.bias, cls.output.weight, cls.output.bias) and one output label.
	Pooling string

	// Mixture of experts (qwen3moe, gpt-oss, qwen2moe, granitemoe, which
	// require it, and llama, where it makes a Mixtral file): each block's
	// FFN is Experts networks of width ExpertFFN, stored as 3-D tensors
	// (ffn_{gate,up}_exps [Embd, ExpertFFN, Experts], ffn_down_exps
	// [ExpertFFN, Embd, Experts]), of which the router ffn_gate_inp [Embd,
	// Experts] picks ExpertsUsed per token; written as expert_count,
	// expert_used_count and expert_feed_forward_length (FFN stays
	// feed_forward_length, which llama.cpp reads but these blocks do not
	// use). llama's and granitemoe's experts are FFN wide, as their
	// converters and llama.cpp's loaders have it: ExpertFFN must be 0 there,
	// and no expert_feed_forward_length is written. gpt-oss also uses
	// SlidingWindow and SlidingWindowPattern (its layers alternate local
	// and global from layer 0 with the pattern 2; no local rope base).
	// lfm2moe requires them too, from block DenseLead on.
	Experts, ExpertsUsed, ExpertFFN int

	// SharedFFN (qwen2moe, which requires it, and granitemoe) adds a shared
	// expert to every block's mixture, a SwiGLU of this width that every
	// token runs (ffn_{gate,up}_shexp [Embd, SharedFFN], ffn_down_shexp
	// [SharedFFN, Embd]), written as expert_shared_feed_forward_length.
	// qwen2moe scales its output by sigmoid(h·ffn_gate_inp_shexp), a vector
	// [Embd]; granitemoe adds it ungated.
	SharedFFN int

	// LFM2's blocks (lfm2, lfm2moe): the blocks AttnLayers lists are
	// attention with Q/K norms, the others gated short convolutions
	// (shortconv.{conv, in_proj, out_proj}) with a kernel of ShortConv
	// (shortconv.l_cache, at least 2). attention.head_count_kv is written
	// per block, 0 for the convolutions, as llama.cpp's converter writes
	// it. AttnLayers nil means every third block (2, 5, ...), llamaref's
	// default; blocks from Layers on are ignored (a shape that keeps fewer
	// of its blocks). lfm2moe's first DenseLead blocks
	// (leading_dense_block_count) keep a dense FFN of width FFN; the
	// others are mixtures of experts, sigmoid-gated (expert_gating_func
	// 2, as the converter writes it) with a per-expert selection bias
	// (exp_probs_b.bias).
	AttnLayers []int
	ShortConv  int
	DenseLead  int
}

// expertWidth is the width of each routed expert: FFN where the family's
// loader takes it from feed_forward_length (llama, granitemoe).
func (s Shape) expertWidth() int {
	if s.Arch == ArchLlama || s.Arch == ArchGraniteMoE {
		return s.FFN
	}
	return s.ExpertFFN
}

// isAttn reports whether block i of an lfm2 or lfm2moe shape is attention.
func (s Shape) isAttn(i int) bool {
	if s.AttnLayers == nil {
		return i%3 == 2
	}
	return slices.Contains(s.AttnLayers, i)
}

// lfm2 reports whether the shape is one of LFM2's hybrids.
func (s Shape) lfm2() bool { return s.Arch == ArchLFM2 || s.Arch == ArchLFM2MoE }

// GraniteScales are the multipliers of a Granite config.json, written as
// granite.embedding_scale, granite.attention.scale, granite.residual_scale
// and granite.logit_scale.
type GraniteScales struct {
	Embedding, Attention, Residual, Logit float32
}

// Llama3Rope holds Llama 3.1/3.2's rope_scaling ("rope_type": "llama3"):
// frequencies whose wavelength is under OrigContext/HighFreqFactor keep
// their speed, those over OrigContext/LowFreqFactor are divided by Factor,
// and those between are interpolated smoothly.
type Llama3Rope struct {
	Factor         float64 // 32 in Llama 3.2 (8 in 3.1)
	LowFreqFactor  float64 // 1
	HighFreqFactor float64 // 4
	OrigContext    int     // original_max_position_embeddings: 8192
}

func (s Shape) headDim() int {
	if s.HeadDim != 0 {
		return s.HeadDim
	}
	if s.Heads == 0 {
		return 0
	}
	return s.Embd / s.Heads
}

// String describes the shape in one line, such as
// "qwen3: 28 layers, hidden 1024, FFN 3072, 16/8 heads of 128, vocab 151936".
func (s Shape) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d layers, hidden %d, FFN %d, %d/%d heads of %d", s.Arch, s.Layers, s.Embd, s.FFN, s.Heads, s.KVHeads, s.headDim())
	if s.Vocab != 0 {
		fmt.Fprintf(&b, ", vocab %d", s.Vocab)
	} else {
		fmt.Fprintf(&b, ", vocab %d (built-in)", BuiltinVocabSize)
	}
	if s.Untied {
		b.WriteString(", untied output")
	}
	if s.RopeFreqs != "" {
		fmt.Fprintf(&b, ", rope_freqs %s", s.RopeFreqs)
	}
	if s.SlidingWindow > 0 {
		fmt.Fprintf(&b, ", window %d with 1 global layer in %d", s.SlidingWindow, s.SlidingWindowPattern)
	}
	if s.Softcap > 0 {
		fmt.Fprintf(&b, ", softcap %g", s.Softcap)
	}
	if s.Arch == ArchBERT {
		fmt.Fprintf(&b, ", %s pooling", cmp.Or(s.Pooling, "mean"))
	}
	if s.Experts > 0 {
		fmt.Fprintf(&b, ", %d experts of FFN %d (%d used)", s.Experts, s.expertWidth(), s.ExpertsUsed)
	}
	if s.SharedFFN > 0 {
		fmt.Fprintf(&b, ", shared expert of FFN %d", s.SharedFFN)
	}
	if s.lfm2() {
		var attn []string
		for i := range s.Layers {
			if s.isAttn(i) {
				attn = append(attn, fmt.Sprint(i))
			}
		}
		fmt.Fprintf(&b, ", attention in blocks [%s], short convolutions of %d", strings.Join(attn, " "), s.ShortConv)
		if s.Arch == ArchLFM2MoE {
			fmt.Fprintf(&b, ", %d dense blocks first", s.DenseLead)
		}
	}
	if g := s.Granite; g != (GraniteScales{}) {
		fmt.Fprintf(&b, ", scales: embedding %g, attention %g, residual %g, logit %g", g.Embedding, g.Attention, g.Residual, g.Logit)
	}
	return b.String()
}

// poolingTypes are llama.cpp's LLAMA_POOLING_TYPE_* numbers.
var poolingTypes = map[string]uint32{"": 1, "mean": 1, "cls": 2, "last": 3, "rank": 4}

// Validate checks that the shape describes a model llama.cpp can load.
func (s Shape) Validate() error {
	switch s.Arch {
	case ArchSmolLM3, ArchLlama, ArchQwen2, ArchQwen3, ArchGemma3, ArchBERT, ArchGranite, ArchPhi3,
		ArchQwen3MoE, ArchGPTOSS, ArchQwen2MoE, ArchGraniteMoE, ArchLFM2, ArchLFM2MoE:
	default:
		return fmt.Errorf("synth: arch %q: want smollm3, llama, qwen2, qwen3, gemma3, granite, phi3, bert, qwen3moe, gpt-oss, qwen2moe, granitemoe, lfm2 or lfm2moe", s.Arch)
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"layers", s.Layers}, {"embd", s.Embd}, {"ffn", s.FFN}, {"heads", s.Heads}, {"kv heads", s.KVHeads}, {"context", s.Context}} {
		if f.v < 1 {
			return fmt.Errorf("synth: %s is %d, must be positive", f.name, f.v)
		}
	}
	if s.Heads%s.KVHeads != 0 {
		return fmt.Errorf("synth: %d heads is not a multiple of %d KV heads", s.Heads, s.KVHeads)
	}
	if s.HeadDim == 0 && s.Embd%s.Heads != 0 {
		return fmt.Errorf("synth: hidden size %d is not a multiple of %d heads (set HeadDim)", s.Embd, s.Heads)
	}
	if hd := s.headDim(); hd < 2 || hd%2 != 0 {
		return fmt.Errorf("synth: head dim %d must be even (RoPE rotates pairs)", hd)
	}
	if s.Vocab < 0 {
		return fmt.Errorf("synth: vocab %d is negative", s.Vocab)
	}
	switch s.RopeScaling {
	case "":
	case "linear", "yarn":
		if s.RopeFactor <= 0 || s.RopeOrigContext < 1 {
			return fmt.Errorf("synth: rope scaling %s needs a positive factor and original context", s.RopeScaling)
		}
	default:
		return fmt.Errorf("synth: rope scaling %q: want linear or yarn", s.RopeScaling)
	}
	// llama.cpp's qwen2, qwen2moe, bert and lfm2 loaders size attn_q and
	// attn_output as hidden × hidden, so their heads must tile the hidden
	// size exactly.
	if (s.Arch == ArchQwen2 || s.Arch == ArchQwen2MoE || s.Arch == ArchBERT || s.lfm2()) && s.headDim()*s.Heads != s.Embd {
		return fmt.Errorf("synth: %s needs heads × head dim = hidden size (%d × %d ≠ %d)", s.Arch, s.Heads, s.headDim(), s.Embd)
	}
	only := func(arch, what string, set bool) error {
		if set && s.Arch != arch {
			return fmt.Errorf("synth: %s is for arch %s, not %s", what, arch, s.Arch)
		}
		return nil
	}
	windowed := s.SlidingWindow != 0 || s.SlidingWindowPattern != 0
	if s.Arch == ArchGPTOSS {
		windowed = false // gpt-oss's too
	}
	if err := errors.Join(
		only(ArchLlama, "rope_freqs", s.RopeFreqs != ""),
		only(ArchGemma3, "a sliding window", windowed),
		only(ArchGemma3, "a local rope base", s.RopeBaseSWA != 0),
		only(ArchGemma3, "a logit soft-cap", s.Softcap != 0),
		only(ArchBERT, "pooling", s.Pooling != "" && !(s.Arch == ArchQwen3 && s.Pooling == "last")),
		only(ArchGranite, "Granite's multipliers", s.Granite != GraniteScales{} && s.Arch != ArchGraniteMoE),
		only(ArchLFM2MoE, "dense leading blocks", s.DenseLead != 0),
	); err != nil {
		return err
	}
	switch s.RopeFreqs {
	case "", "random":
	case "llama3":
		r := s.Llama3Rope
		if r.Factor <= 0 || r.LowFreqFactor <= 0 || r.HighFreqFactor <= r.LowFreqFactor || r.OrigContext < 1 {
			return fmt.Errorf("synth: llama3 rope factors need factor > 0, 0 < low < high and an original context (have %+v)", r)
		}
	default:
		return fmt.Errorf("synth: rope_freqs %q: want random or llama3", s.RopeFreqs)
	}
	if s.SlidingWindow < 0 || s.Softcap < 0 {
		return fmt.Errorf("synth: sliding window %d and soft-cap %g must not be negative", s.SlidingWindow, s.Softcap)
	}
	if s.Arch == ArchGemma3 && s.SlidingWindow > 0 && (s.SlidingWindowPattern < 1 || s.RopeBaseSWA <= 0) {
		return fmt.Errorf("synth: a sliding window needs a pattern ≥ 1 and a positive local rope base (have %d, %g)", s.SlidingWindowPattern, s.RopeBaseSWA)
	}
	if err := s.validateExperts(); err != nil {
		return err
	}
	if s.Arch == ArchQwen2MoE && !s.Untied {
		return errors.New("synth: qwen2moe has an untied output.weight (set Untied): llama.cpp's loader requires it")
	}
	if s.lfm2() {
		if s.ShortConv < 2 {
			return fmt.Errorf("synth: %s needs a short convolution of at least 2 (ShortConv is %d)", s.Arch, s.ShortConv)
		}
		for _, l := range s.AttnLayers {
			if l < 0 { // blocks past Layers are those of a shape that keeps fewer of its blocks
				return fmt.Errorf("synth: attention block %d is negative", l)
			}
		}
		if s.DenseLead < 0 || s.DenseLead > s.Layers {
			return fmt.Errorf("synth: %d dense leading blocks of %d", s.DenseLead, s.Layers)
		}
	} else if s.AttnLayers != nil || s.ShortConv != 0 {
		return fmt.Errorf("synth: attention blocks and short convolutions are for arch lfm2 or lfm2moe, not %s", s.Arch)
	}
	if s.Arch == ArchGPTOSS {
		// llama.cpp's loader requires the window key and output.weight.
		if s.SlidingWindow < 1 || s.SlidingWindowPattern < 1 {
			return fmt.Errorf("synth: gpt-oss needs a sliding window and a pattern ≥ 1 (have %d, %d)", s.SlidingWindow, s.SlidingWindowPattern)
		}
		if !s.Untied {
			return errors.New("synth: gpt-oss has an untied output.weight (set Untied)")
		}
	}
	if s.RopeDims < 0 || s.RopeDims%2 != 0 || s.RopeDims > s.headDim() {
		return fmt.Errorf("synth: %d rotated dimensions: want an even number up to the head size %d", s.RopeDims, s.headDim())
	}
	if s.LongRope && (s.RopeOrigContext < 1 || s.RopeScaling != "") {
		return fmt.Errorf("synth: LongRoPE needs the original context length (RopeOrigContext) and no other rope scaling")
	}
	if s.Arch == ArchBERT {
		if _, ok := poolingTypes[s.Pooling]; !ok || s.Pooling == "last" {
			return fmt.Errorf("synth: pooling %q: want mean, cls or rank", s.Pooling)
		}
		if s.KVHeads != s.Heads {
			return fmt.Errorf("synth: bert has no grouped-query attention (%d KV heads for %d heads)", s.KVHeads, s.Heads)
		}
		if s.Untied || s.RopeScaling != "" {
			return errors.New("synth: bert has no output matrix and no RoPE (Untied and RopeScaling must be unset)")
		}
	}
	return nil
}

// validateExperts checks the mixture-of-experts fields against the
// architecture (see Shape.Experts and Shape.SharedFFN).
func (s Shape) validateExperts() error {
	needs := s.Arch == ArchQwen3MoE || s.Arch == ArchGPTOSS || s.Arch == ArchQwen2MoE || s.Arch == ArchGraniteMoE || s.Arch == ArchLFM2MoE
	allows := needs || s.Arch == ArchLlama
	widthIsFFN := s.Arch == ArchLlama || s.Arch == ArchGraniteMoE
	set := s.Experts != 0 || s.ExpertsUsed != 0 || s.ExpertFFN != 0
	switch {
	case !allows && set:
		return fmt.Errorf("synth: experts are for arch qwen3moe, gpt-oss, qwen2moe, granitemoe, lfm2moe or llama, not %s", s.Arch)
	case !needs && !set:
	case s.Experts < 1 || s.ExpertsUsed < 1 || s.ExpertsUsed > s.Experts:
		return fmt.Errorf("synth: %s needs experts: 1 ≤ used ≤ experts (have %d of %d)", s.Arch, s.ExpertsUsed, s.Experts)
	case widthIsFFN && s.ExpertFFN != 0:
		return fmt.Errorf("synth: %s experts are feed_forward_length (FFN) wide: leave ExpertFFN 0 (have %d)", s.Arch, s.ExpertFFN)
	case !widthIsFFN && s.ExpertFFN < 1:
		return fmt.Errorf("synth: %s needs a positive expert FFN (have %d)", s.Arch, s.ExpertFFN)
	}
	switch {
	case s.SharedFFN < 0:
		return fmt.Errorf("synth: shared expert FFN %d is negative", s.SharedFFN)
	case s.SharedFFN > 0 && s.Arch != ArchQwen2MoE && s.Arch != ArchGraniteMoE:
		return fmt.Errorf("synth: a shared expert is for arch qwen2moe or granitemoe, not %s", s.Arch)
	case s.Arch == ArchQwen2MoE && s.SharedFFN < 1:
		return errors.New("synth: qwen2moe needs a shared expert (SharedFFN)")
	}
	return nil
}

// Model is a shape with a name and the seed of its weights.
type Model struct {
	Name      string // general.name
	Shape     Shape
	Seed      uint64
	RoundBF16 bool // round the 2-D weights to BF16-exact values, like a model converted from a BF16 checkpoint

	// Tokenizer, if set, replaces the built-in vocabulary: the tokenizer.*
	// keys of another model (see TokenizerFrom). The vocabulary size is
	// then its number of tokens, and Shape.Vocab must be 0 or equal to it.
	Tokenizer []gguf.KV

	// Pre is the built-in vocabulary's tokenizer.ggml.pre, the
	// pre-tokenizer llama.cpp splits text with: "" means "smaug-bpe", what
	// llama.cpp's converter writes for SmolLM3; SmolLM2's files say
	// "smollm" (GPT-2's split with digits one by one).
	Pre string
	// ChatTemplate, if set, is written as tokenizer.chat_template, after
	// the other tokenizer keys (replacing Tokenizer's own, if it has one).
	ChatTemplate string
}

// TokenizerFrom returns the tokenizer.* metadata of f (for example
// ../shared/tokenizer/smollm3-vocab.gguf, SmolLM3's real tokenizer) for
// Model.Tokenizer.
func TokenizerFrom(f *gguf.File) ([]gguf.KV, error) {
	var out []gguf.KV
	for _, kv := range f.KV {
		if strings.HasPrefix(kv.Key, "tokenizer.") {
			out = append(out, kv)
		}
	}
	if _, err := f.Strings("tokenizer.ggml.tokens"); err != nil {
		return nil, fmt.Errorf("synth: no tokenizer: %w", err)
	}
	return out, nil
}

// vocabSize is the number of tokens the model's vocabulary has.
func (m Model) vocabSize() (int, error) {
	if m.Tokenizer == nil {
		return cmp.Or(m.Shape.Vocab, BuiltinVocabSize), nil
	}
	for _, kv := range m.Tokenizer {
		if kv.Key == "tokenizer.ggml.tokens" {
			toks, ok := kv.Value.([]string)
			if !ok {
				return 0, fmt.Errorf("synth: tokenizer.ggml.tokens is %T, want []string", kv.Value)
			}
			if m.Shape.Vocab != 0 && m.Shape.Vocab != len(toks) {
				return 0, fmt.Errorf("synth: shape says %d tokens, the tokenizer has %d", m.Shape.Vocab, len(toks))
			}
			return len(toks), nil
		}
	}
	return 0, errors.New("synth: the tokenizer has no tokenizer.ggml.tokens")
}

// Mix is a llama.cpp file type: which tensor type each weight gets.
type Mix string

// The supported mixes. Norm weights are always F32.
const (
	MixF32    Mix = "F32"
	MixF16    Mix = "F16"
	MixBF16   Mix = "BF16"
	MixQ8_0   Mix = "Q8_0"
	MixQ4_0   Mix = "Q4_0"   // q4_0, output (token_embd when tied) q6_K
	MixQ6_K   Mix = "Q6_K"   // q6_K everywhere
	MixQ4_K_M Mix = "Q4_K_M" // q4_K; q6_K for output and for attn_v/ffn_down in llama.cpp's use_more_bits layers
	// MixMXFP4 is llama.cpp's MXFP4_MOE, the mix gpt-oss ships in: the
	// 3-D expert tensors mxfp4, every other matrix q8_0 (routers F32).
	MixMXFP4 Mix = "MXFP4"
)

var mixFileType = map[Mix]uint32{
	MixF32: 0, MixF16: 1, MixQ4_0: 2, MixQ8_0: 7, MixQ4_K_M: 15, MixQ6_K: 18, MixBF16: 32, MixMXFP4: 38,
}

// ParseMix accepts a mix name in any case ("q4_k_m", "F16"), and llama.cpp's
// "MXFP4_MOE" for MixMXFP4.
func ParseMix(s string) (Mix, error) {
	if strings.EqualFold(s, "MXFP4_MOE") {
		return MixMXFP4, nil
	}
	for m := range mixFileType {
		if strings.EqualFold(string(m), s) {
			return m, nil
		}
	}
	var names []string
	for m := range mixFileType {
		names = append(names, string(m))
	}
	slices.Sort(names)
	return "", fmt.Errorf("synth: unknown type %q (have %s)", s, strings.Join(names, ", "))
}

// FileType is the mix's general.file_type (llama.cpp's LLAMA_FTYPE_*).
func (m Mix) FileType() uint32 { return mixFileType[m] }

// LlamaCppName is the mix's name in llama.cpp's quantize tools (llamaref
// quantize): the mix's own, MXFP4_MOE for MixMXFP4.
func (m Mix) LlamaCppName() string {
	if m == MixMXFP4 {
		return "MXFP4_MOE"
	}
	return string(m)
}

// useMoreBits is llama.cpp's rule for the layers whose attn_v and ffn_down
// get more bits in the _M mixes: the first and last eighth of the layers
// and every third layer in between.
func useMoreBits(i, n int) bool {
	return i < n/8 || i >= 7*n/8 || (i-n/8)%3 == 2
}

// TensorType returns the type the mix gives tensor name, of ggml
// dimensions dims, in block layer (-1 outside blocks) of a model of shape
// s, as llama_model_quantize chooses it from an F32 file. It keeps as they
// are what llama.cpp never quantizes: vectors, tensors whose name does not
// end in "weight" (gpt-oss's 2-D expert biases), the MoE routers
// (ffn_gate_inp), and BERT's learned positions and token types. With tied
// embeddings (no output.weight, BERT's included) token_embd gets the output's
// type. A type whose block does not divide the row falls back as llama.cpp
// does (q4_K→q5_0, q6_K→q8_0, then f16; a 32-element type to f16).
func (m Mix) TensorType(name string, layer int, dims []uint64, s Shape) gguf.Type {
	if len(dims) < 2 || !strings.HasSuffix(name, "weight") || strings.Contains(name, "ffn_gate_inp.weight") ||
		name == "position_embd.weight" || name == "token_types.weight" || strings.Contains(name, "shortconv.conv.weight") {
		return gguf.TypeF32
	}
	rowLen := int(dims[0])
	isOutput := name == "output.weight" || !s.Untied && name == "token_embd.weight"
	// llama.cpp's tensor categories go by substrings: ffn_down_exps is an
	// ffn_down, and a fused attn_qkv counts as an attn_v.
	isAttnV := strings.Contains(name, "attn_v.weight") || strings.Contains(name, "attn_qkv.weight")
	more := layer >= 0 && useMoreBits(layer, s.Layers)
	if isAttnV && s.lfm2() {
		// llama.cpp counts the attn_v tensors, which only attention
		// blocks have.
		i, n := 0, 0
		for l := range s.Layers {
			if s.isAttn(l) {
				if l < layer {
					i++
				}
				n++
			}
		}
		more = useMoreBits(i, n)
	}
	eight := s.Experts == 8 // llama.cpp's rules for 8-expert models (Mixtral)
	var t gguf.Type
	switch m {
	case MixF32:
		t = gguf.TypeF32
	case MixF16:
		t = gguf.TypeF16
	case MixBF16:
		t = gguf.TypeBF16
	case MixQ8_0:
		t = gguf.TypeQ8_0
	case MixQ6_K:
		t = gguf.TypeQ6_K
	case MixQ4_0:
		t = gguf.TypeQ4_0
		if isOutput {
			t = gguf.TypeQ6_K
		}
	case MixMXFP4:
		t = gguf.TypeQ8_0
		if !isOutput && len(dims) > 2 && dims[2] > 1 {
			t = gguf.TypeMXFP4
		}
	case MixQ4_K_M:
		t = gguf.TypeQ4_K
		switch {
		case isOutput:
			t = gguf.TypeQ6_K
		case isAttnV && more:
			t = gguf.TypeQ6_K
		case strings.Contains(name, "attn_output.weight") && eight:
			t = gguf.TypeQ5_K
		case strings.Contains(name, "ffn_down") && more:
			t = gguf.TypeQ6_K
		}
	}
	switch m {
	case MixQ8_0, MixQ6_K, MixQ4_0, MixQ4_K_M:
		// In every quantized mix but MXFP4_MOE, eight experts give attn_k
		// and attn_v q8_0 ("trades just ~128MB").
		if eight && !isOutput && (isAttnV || strings.Contains(name, "attn_k.weight")) {
			t = gguf.TypeQ8_0
		}
	}
	if rowLen%t.BlockSize() != 0 {
		switch t {
		case gguf.TypeQ4_K:
			t = gguf.TypeQ5_0
		case gguf.TypeQ5_K:
			t = gguf.TypeQ5_1
		case gguf.TypeQ6_K:
			t = gguf.TypeQ8_0
		}
		if rowLen%t.BlockSize() != 0 {
			t = gguf.TypeF16
		}
	}
	return t
}

// Metadata returns the model's GGUF metadata for a mix: the keys llama.cpp's
// converter writes for the architecture, in llamaref's order (the tokenizer,
// general.*, then the hyper-parameters), with the quantizer's two keys moved
// last in a quantized mix, as llama_model_quantize leaves them.
func (m Model) Metadata(mix Mix) ([]gguf.KV, error) {
	s := m.Shape
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if _, ok := mixFileType[mix]; !ok {
		return nil, fmt.Errorf("synth: unknown mix %q", mix)
	}
	nVocab, err := m.vocabSize()
	if err != nil {
		return nil, err
	}
	var kv []gguf.KV
	if m.Tokenizer != nil {
		kv = append(kv, m.Tokenizer...)
	} else if kv, err = builtinTokenizerKV(s.Vocab, m.Pre); err != nil {
		return nil, err
	}
	if m.ChatTemplate != "" {
		kv = slices.DeleteFunc(kv, func(x gguf.KV) bool { return x.Key == "tokenizer.chat_template" })
		kv = append(kv, gguf.KV{Key: "tokenizer.chat_template", Value: m.ChatTemplate})
	}
	a := s.Arch + "."
	kv = append(kv,
		gguf.KV{Key: "general.architecture", Value: s.Arch},
		gguf.KV{Key: "general.name", Value: m.Name},
	)
	if mix == MixF32 {
		kv = append(kv, gguf.KV{Key: "general.file_type", Value: mix.FileType()})
	}
	u := func(k string, n int) gguf.KV { return gguf.KV{Key: a + k, Value: uint32(n)} }
	f := func(k string, x float32) gguf.KV { return gguf.KV{Key: a + k, Value: x} }
	hd := s.headDim()
	kv = append(kv,
		u("block_count", s.Layers),
		u("context_length", s.Context),
		u("embedding_length", s.Embd),
		u("feed_forward_length", s.FFN),
		u("attention.head_count", s.Heads),
	)
	if s.lfm2() {
		kvHeads := make([]int32, s.Layers)
		for i := range kvHeads {
			if s.isAttn(i) {
				kvHeads[i] = int32(s.KVHeads)
			}
		}
		kv = append(kv, gguf.KV{Key: a + "attention.head_count_kv", Value: kvHeads})
	} else {
		kv = append(kv, u("attention.head_count_kv", s.KVHeads))
	}
	if s.Arch == ArchBERT {
		// An encoder: LayerNorm (not RMSNorm), bidirectional attention,
		// a pooled output, and no RoPE (learned positions instead).
		kv = append(kv,
			f("attention.layer_norm_epsilon", s.RMSEps),
			gguf.KV{Key: a + "attention.causal", Value: false},
			gguf.KV{Key: a + "pooling_type", Value: poolingTypes[s.Pooling]})
		// llama.cpp's bert loader needs the number of token types
		// (token_types.weight rows); a real BERT vocabulary carries it.
		if !slices.ContainsFunc(m.Tokenizer, func(x gguf.KV) bool { return x.Key == "tokenizer.ggml.token_type_count" }) {
			kv = append(kv, gguf.KV{Key: "tokenizer.ggml.token_type_count", Value: uint32(bertTokenTypes)})
		}
		if s.Pooling == "rank" {
			// One label: the classifier head gives one relevance score.
			kv = append(kv, gguf.KV{Key: a + "classifier.output_labels", Value: []string{"score"}})
		}
	} else {
		kv = append(kv,
			f("rope.freq_base", s.RopeBase),
			f("attention.layer_norm_rms_epsilon", s.RMSEps),
			u("rope.dimension_count", cmp.Or(s.RopeDims, hd)))
	}
	kv = append(kv, u("vocab_size", nVocab))
	if hd*s.Heads != s.Embd {
		kv = append(kv, u("attention.key_length", hd), u("attention.value_length", hd))
	}
	if s.Experts > 0 {
		kv = append(kv, u("expert_count", s.Experts), u("expert_used_count", s.ExpertsUsed))
		if s.ExpertFFN > 0 {
			kv = append(kv, u("expert_feed_forward_length", s.ExpertFFN))
		}
		if s.SharedFFN > 0 {
			kv = append(kv, u("expert_shared_feed_forward_length", s.SharedFFN))
		}
	}
	if s.lfm2() {
		kv = append(kv, u("shortconv.l_cache", s.ShortConv))
	}
	if s.Arch == ArchLFM2MoE {
		kv = append(kv, u("leading_dense_block_count", s.DenseLead), u("expert_gating_func", 2))
	}
	if s.Arch != ArchBERT && s.Pooling != "" {
		kv = append(kv, u("pooling_type", int(poolingTypes[s.Pooling])))
	}
	if s.Arch == ArchGPTOSS {
		// Local layers alternate with global ones from layer 0 unless the
		// pattern says otherwise; gpt-oss's converter writes no pattern.
		kv = append(kv, u("attention.sliding_window", s.SlidingWindow))
		if s.SlidingWindowPattern != 2 {
			kv = append(kv, u("attention.sliding_window_pattern", s.SlidingWindowPattern))
		}
	} else if s.SlidingWindow > 0 {
		kv = append(kv,
			u("attention.sliding_window", s.SlidingWindow),
			u("attention.sliding_window_pattern", s.SlidingWindowPattern),
			f("rope.freq_base_swa", s.RopeBaseSWA))
	}
	if s.Softcap > 0 {
		kv = append(kv, f("final_logit_softcapping", s.Softcap))
	}
	if s.LongRope {
		kv = append(kv, u("rope.scaling.original_context_length", s.RopeOrigContext))
	}
	if s.RopeAttnFactor != 0 {
		kv = append(kv, f("rope.scaling.attn_factor", s.RopeAttnFactor))
	}
	if s.Arch == ArchGranite || s.Arch == ArchGraniteMoE {
		g := s.Granite
		if g.Logit == 0 {
			g.Logit = 1
		}
		kv = append(kv, f("logit_scale", g.Logit))
		for _, x := range []struct {
			key string
			v   float32
		}{{"embedding_scale", g.Embedding}, {"attention.scale", g.Attention}, {"residual_scale", g.Residual}} {
			if x.v != 0 {
				kv = append(kv, f(x.key, x.v))
			}
		}
	}
	if s.RopeScaling != "" {
		kv = append(kv,
			gguf.KV{Key: a + "rope.scaling.type", Value: s.RopeScaling},
			f("rope.scaling.factor", s.RopeFactor),
			u("rope.scaling.original_context_length", s.RopeOrigContext))
	}
	if mix != MixF32 {
		// As llama.cpp's quantizer leaves them: these two last.
		kv = append(kv,
			gguf.KV{Key: "general.quantization_version", Value: uint32(2)},
			gguf.KV{Key: "general.file_type", Value: mix.FileType()})
	}
	return kv, nil
}

// builtinTokenizerKV is the metadata of BuiltinVocab(n), with the keys
// llama.cpp's converter writes, and pre as tokenizer.ggml.pre ("" for
// "smaug-bpe").
func builtinTokenizerKV(n int, pre string) ([]gguf.KV, error) {
	v, err := BuiltinVocab(n)
	if err != nil {
		return nil, err
	}
	return []gguf.KV{
		{Key: "tokenizer.ggml.model", Value: "gpt2"},
		// By default what llama.cpp's converter writes for SmolLM3: Llama
		// 3's pre-tokenizer regex without llama-bpe's ignore_merges
		// shortcut.
		{Key: "tokenizer.ggml.pre", Value: cmp.Or(pre, "smaug-bpe")},
		{Key: "tokenizer.ggml.tokens", Value: v.Tokens},
		{Key: "tokenizer.ggml.token_type", Value: v.Types},
		{Key: "tokenizer.ggml.merges", Value: v.Merges},
		{Key: "tokenizer.ggml.bos_token_id", Value: v.BOS},
		{Key: "tokenizer.ggml.eos_token_id", Value: v.EOS},
		{Key: "tokenizer.ggml.padding_token_id", Value: v.PAD},
		{Key: "tokenizer.ggml.add_bos_token", Value: false},
		{Key: "tokenizer.ggml.add_eos_token", Value: false},
	}, nil
}
