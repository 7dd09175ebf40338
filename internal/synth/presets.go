package synth

import (
	"fmt"
	"slices"
	"strings"
)

// A preset is a named model and a line saying what it is for.
type preset struct {
	about string
	model Model
}

// tinyFamily is the shape every golden-families decoder shares
// (../shared/golden-families/manifest.json: llamaref synth --n-layer 2
// --n-embd 256 --n-ff 256 --n-head 8 --n-head-kv 2, default context 4096):
// head size 32, 4 query heads per KV head, and widths that are multiples of
// 256, so the K-quants apply without fallbacks.
func tinyFamily(arch string, ropeBase, eps float32) Shape {
	return Shape{Arch: arch, Layers: 2, Embd: 256, FFN: 256, Heads: 8, KVHeads: 2, Context: 4096, RopeBase: ropeBase, RMSEps: eps}
}

// tinyBERT is the golden-families encoders' shape: llamaref synth --arch bert
// --n-layer 2 --n-embd 256 --n-ff 256 --n-head 8, 512 positions, LayerNorm
// epsilon 1e-12.
func tinyBERT(pooling string) Shape {
	return Shape{Arch: ArchBERT, Layers: 2, Embd: 256, FFN: 256, Heads: 8, KVHeads: 8, Context: 512, RMSEps: 1e-12, Pooling: pooling}
}

// llama32Rope is Llama 3.2's rope_scaling (config.json of
// meta-llama/Llama-3.2-1B and -3B): rope_type llama3, factor 32,
// low_freq_factor 1, high_freq_factor 4, original_max_position_embeddings
// 8192.
var llama32Rope = Llama3Rope{Factor: 32, LowFreqFactor: 1, HighFreqFactor: 4, OrigContext: 8192}

// gemma3Shape is what Gemma 3's small text models share (config.json of
// google/gemma-3-270m and gemma-3-1b-it): one KV head, head size 256, RoPE
// base 1e6 on global layers and 1e4 on local ones, a 512-token sliding window
// with every 6th layer global, 32,768 positions, the 262,144-token vocabulary,
// and no final logit soft-cap (Gemma 2 had one; Gemma 3's is null).
func gemma3Shape(layers, embd, ffn int) Shape {
	return Shape{Arch: ArchGemma3, Layers: layers, Embd: embd, FFN: ffn, Heads: 4, KVHeads: 1, HeadDim: 256,
		Context: 32768, Vocab: 262144, RopeBase: 1e6, RMSEps: 1e-6,
		SlidingWindow: 512, SlidingWindowPattern: 6, RopeBaseSWA: 1e4}
}

// gptOSS returns openai/gpt-oss-20b's shape (its config.json): 24 blocks of
// width 2880, 64 query and 8 KV heads of 64, RoPE base 150,000 with YaRN
// (factor 32 over 4,096 positions, 131,072 in all), RMSNorm epsilon 1e-5, a
// 128-token sliding window on every other layer from layer 0, 32 experts as
// wide as the hidden size of which 4 are used, an untied output and the
// 201,088-token vocabulary (o200k_harmony's size).
func gptOSS() Shape {
	return Shape{Arch: ArchGPTOSS, Layers: 24, Embd: 2880, FFN: 2880, Heads: 64, KVHeads: 8, HeadDim: 64,
		Context: 131072, Vocab: 201088, RopeBase: 150000, RMSEps: 1e-5, Untied: true,
		RopeScaling: "yarn", RopeFactor: 32, RopeOrigContext: 4096,
		SlidingWindow: 128, SlidingWindowPattern: 2, Experts: 32, ExpertsUsed: 4, ExpertFFN: 2880}
}

// smollm2Template is SmolLM2-Instruct's chat template, as its GGUF files
// carry it (models/llamaarch/chatml/testdata/HuggingFaceTB-SmolLM2-1.7B-Instruct.jinja,
// which says where it comes from; a test checks the two agree).
const smollm2Template = "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"

// smollm2 is a SmolLM2-Instruct model: the plain llama block with tied
// embeddings, 8192 positions, RMSNorm epsilon 1e-5, the "smollm"
// pre-tokenizer and the ChatML template; vocab 0 keeps the built-in 337
// tokens (whose EOS is <|im_end|>, as in SmolLM2-Instruct's files).
func smollm2(name string, seed uint64, layers, embd, ffn, heads, kvHeads, vocab int, ropeBase float32) Model {
	return Model{Name: name, Seed: seed, RoundBF16: vocab != 0, Pre: "smollm", ChatTemplate: smollm2Template, Shape: Shape{
		Arch: ArchLlama, Layers: layers, Embd: embd, FFN: ffn, Heads: heads, KVHeads: kvHeads, Context: 8192,
		Vocab: vocab, RopeBase: ropeBase, RMSEps: 1e-5}}
}

// presets. The golden ones carry the name llamaref gave them: it names a
// model after its output file (qwen3-tiny-F32.gguf), and llama.cpp's
// quantizer keeps the name, so the golden Q8_0 and Q4_K_M files are also
// "qwen3-tiny-F32" inside, and a preset reproduces all three only with that
// name. The real shapes take their sizes from each model's published
// config.json; their vocabularies are the real sizes (the built-in one
// padded with reserved tokens, or the real one with -vocab), and the
// decoders' weights are rounded to BF16, as an F32 GGUF converted from their
// BF16 checkpoints holds (bge-small ships F32).
var presets = map[string]preset{
	// The golden tinyq family's source (../shared/golden): 8 layers, NoPE in 3 and 7.
	"tinyq": {"the golden SmolLM3 models (../shared/golden)", Model{Name: "smollm3-tinyq", Seed: 1, RoundBF16: true, Shape: Shape{
		Arch: ArchSmolLM3, Layers: 8, Embd: 256, FFN: 256, Heads: 4, KVHeads: 2, Context: 4096,
		RopeBase: 5e6, RMSEps: 1e-6}}},
	"llama-tiny": {"golden: plain llama, RoPE everywhere, untied output", Model{Name: "llama-tiny", Seed: 2, Shape: Shape{
		Arch: ArchLlama, Layers: 3, Embd: 64, FFN: 192, Heads: 4, KVHeads: 2, Context: 2048,
		RopeBase: 1e4, RMSEps: 1e-5, Untied: true}}},
	"tinyyarn": {"golden: SmolLM3 with static YaRN (factor 2 over 128 positions)", Model{Name: "smollm3-tinyyarn", Seed: 3, Shape: Shape{
		Arch: ArchSmolLM3, Layers: 4, Embd: 64, FFN: 128, Heads: 2, KVHeads: 1, Context: 256,
		RopeBase: 1e4, RMSEps: 1e-6, RopeScaling: "yarn", RopeFactor: 2, RopeOrigContext: 128}}},
	"3b": {"SmolLM3-3B's shape (3.08 B parameters)", Model{Name: "smollm3-3b-synth", Seed: 3, RoundBF16: true, Shape: Shape{
		Arch: ArchSmolLM3, Layers: 36, Embd: 2048, FFN: 11008, Heads: 16, KVHeads: 4, Context: 65536,
		Vocab: 128256, RopeBase: 5e6, RMSEps: 1e-6}}},

	// ../shared/golden-families: one tiny model per new family.
	"qwen3-tiny": {"golden-families: per-head Q/K RMSNorm", Model{Name: "qwen3-tiny-F32", Seed: 11,
		Shape: tinyFamily(ArchQwen3, 1e6, 1e-6)}},
	"qwen2-tiny": {"golden-families: Q/K/V biases", Model{Name: "qwen2-tiny-F32", Seed: 12,
		Shape: tinyFamily(ArchQwen2, 1e6, 1e-6)}},
	"llama32-tiny": {"golden-families: rope_freqs.weight (random factors)", Model{Name: "llama32-tiny-F32", Seed: 13,
		Shape: func() Shape { s := tinyFamily(ArchLlama, 1e4, 1e-5); s.RopeFreqs = "random"; return s }()}},
	"gemma3-tiny": {"golden-families: window 32 (shorter than the golden prompts), pattern 2, soft-cap 15", Model{Name: "gemma3-tiny-F32", Seed: 14,
		Shape: func() Shape {
			s := tinyFamily(ArchGemma3, 1e6, 1e-6)
			s.SlidingWindow, s.SlidingWindowPattern, s.RopeBaseSWA, s.Softcap = 32, 2, 1e4, 15
			return s
		}()}},
	"granite-tiny": {"golden (ours, testdata of package granite): Granite's four multipliers, attention scale 1/HeadDim", Model{Name: "granite-tiny-F32", Seed: 17,
		Shape: func() Shape {
			s := tinyFamily(ArchGranite, 1e7, 1e-5)
			s.Granite = GraniteScales{Embedding: 12, Attention: 1.0 / 32, Residual: 0.22, Logit: 8}
			return s
		}()}},
	"phi3-tiny": {"golden (ours, testdata of package phi3): fused qkv and gate+up, 24 of 32 dims rotated, LongRoPE above 1024", Model{Name: "phi-mini-tiny-F32", Seed: 19,
		// Not "phi3" in the name: llama.cpp then looks up Phi-3's special tokens.
		Shape: func() Shape {
			s := tinyFamily(ArchPhi3, 1e4, 1e-5)
			s.RopeDims, s.LongRope, s.RopeOrigContext, s.RopeAttnFactor = 24, true, 1024, 1.1902381
			return s
		}()}},
	"qwen3-embed-tiny": {"Qwen3-Embedding's file format on the tiny shape: qwen3 with pooling_type last", Model{Name: "qwen3-embed-tiny-F32", Seed: 20,
		Shape: func() Shape { s := tinyFamily(ArchQwen3, 1e6, 1e-6); s.Pooling = "last"; return s }()}},
	"bert-tiny": {"golden-families: encoder, mean pooling", Model{Name: "bert-tiny-F32", Seed: 15, Shape: tinyBERT("mean")}},

	// ../shared/golden-next: the mixture-of-experts families (4 experts of
	// width 128, 2 used, on the golden-families shape).
	"qwen3moe-tiny": {"golden-next: Qwen3-MoE, 4 experts of 128, 2 used", Model{Name: "qwen3moe-tiny-F32", Seed: 36,
		Shape: func() Shape {
			s := tinyFamily(ArchQwen3MoE, 1e6, 1e-6)
			s.Experts, s.ExpertsUsed, s.ExpertFFN = 4, 2, 128
			return s
		}()}},
	"gptoss-tiny": {"golden-next: gpt-oss, 4 experts of 128, 2 used, window 32 on layer 0, YaRN 32 over 4096", Model{Name: "gptoss-tiny-F32", Seed: 32,
		Shape: func() Shape {
			s := gptOSS()
			s.Layers, s.Embd, s.FFN, s.Heads, s.KVHeads, s.HeadDim, s.Vocab = 2, 256, 128, 8, 2, 0, 0
			s.SlidingWindow, s.Experts, s.ExpertsUsed, s.ExpertFFN = 32, 4, 2, 128
			return s
		}()}},

	// The mixture-of-experts families with no golden-next file (llamaref
	// synth does not write them); their golden logits are in their
	// packages' testdata (internal/goldentest/testdata/synth_golden.py).
	"mixtral-tiny": {"golden (ours, testdata of package llamaarch): Mixtral's layout, llama with 4 experts as wide as the FFN (256), 2 used, untied output", Model{Name: "mixtral-tiny-F32", Seed: 39,
		Shape: func() Shape {
			s := tinyFamily(ArchLlama, 1e6, 1e-5)
			s.Untied, s.Experts, s.ExpertsUsed = true, 4, 2
			return s
		}()}},
	"qwen2moe-tiny": {"golden (ours, testdata of package qwen2moe): Q/K/V biases, 4 experts of 128, 2 used, a shared expert of 256 gated by a sigmoid, untied output", Model{Name: "qwen2moe-tiny-F32", Seed: 42,
		Shape: func() Shape {
			s := tinyFamily(ArchQwen2MoE, 1e6, 1e-6)
			s.Untied, s.Experts, s.ExpertsUsed, s.ExpertFFN, s.SharedFFN = true, 4, 2, 128, 256
			return s
		}()}},
	"granitemoe-tiny": {"golden (ours, testdata of package granite): Granite's multipliers, 4 experts as wide as the FFN (128), 2 used, an ungated shared expert of 256", Model{Name: "granitemoe-tiny-F32", Seed: 41,
		Shape: func() Shape {
			s := tinyFamily(ArchGraniteMoE, 1e4, 1e-6)
			s.FFN, s.Experts, s.ExpertsUsed, s.SharedFFN = 128, 4, 2, 256
			s.Granite = GraniteScales{Embedding: 12, Attention: 1.0 / 32, Residual: 0.22, Logit: 6}
			return s
		}()}},
	"lfm2-tiny": {"golden-next: LFM2, block 0 a short convolution of 3, block 1 attention", Model{Name: "lfm2-tiny-F32", Seed: 33,
		Shape: func() Shape {
			s := tinyFamily(ArchLFM2, 1e6, 1e-5)
			s.AttnLayers, s.ShortConv = []int{1}, 3
			return s
		}()}},
	"lfm2moe-tiny": {"golden (ours, testdata of package lfm2): LFM2-8B-A1B's blocks, a dense short convolution, then attention and a short convolution with 4 experts of 128 (2 used, sigmoid gates, a selection bias)",
		Model{Name: "lfm2moe-tiny-F32", Seed: 40, Shape: func() Shape {
			s := tinyFamily(ArchLFM2MoE, 1e6, 1e-5)
			s.Layers, s.AttnLayers, s.ShortConv, s.DenseLead = 3, []int{1}, 3, 1
			s.Experts, s.ExpertsUsed, s.ExpertFFN = 4, 2, 128
			return s
		}()}},
	"bert-rank-tiny": {"golden-families: encoder with a rerank head", Model{Name: "bert-rank-tiny-F32", Seed: 16, Shape: tinyBERT("rank")}},

	// Tiny models of a family's file format, for tests (no golden logits).
	"smollm2-tiny": {"SmolLM2-Instruct's file format on the tiny shape: llama, pre-tokenizer smollm, ChatML template",
		smollm2("smollm2-tiny", 18, 2, 256, 256, 8, 2, 0, 1e5)},

	// Real shapes, for benchmarks.
	"qwen3-0.6b": {"Qwen/Qwen3-0.6B (596 M parameters)", Model{Name: "qwen3-0.6b-synth", Seed: 21, RoundBF16: true, Shape: Shape{
		Arch: ArchQwen3, Layers: 28, Embd: 1024, FFN: 3072, Heads: 16, KVHeads: 8, HeadDim: 128, Context: 40960,
		Vocab: 151936, RopeBase: 1e6, RMSEps: 1e-6}}},
	"qwen3-1.7b": {"Qwen/Qwen3-1.7B (1.72 B parameters)", Model{Name: "qwen3-1.7b-synth", Seed: 22, RoundBF16: true, Shape: Shape{
		Arch: ArchQwen3, Layers: 28, Embd: 2048, FFN: 6144, Heads: 16, KVHeads: 8, HeadDim: 128, Context: 40960,
		Vocab: 151936, RopeBase: 1e6, RMSEps: 1e-6}}},
	"qwen2.5-0.5b": {"Qwen/Qwen2.5-0.5B-Instruct (494 M parameters)", Model{Name: "qwen2.5-0.5b-synth", Seed: 23, RoundBF16: true, Shape: Shape{
		Arch: ArchQwen2, Layers: 24, Embd: 896, FFN: 4864, Heads: 14, KVHeads: 2, Context: 32768,
		Vocab: 151936, RopeBase: 1e6, RMSEps: 1e-6}}},
	"qwen2.5-1.5b": {"Qwen/Qwen2.5-1.5B-Instruct (1.54 B parameters)", Model{Name: "qwen2.5-1.5b-synth", Seed: 24, RoundBF16: true, Shape: Shape{
		Arch: ArchQwen2, Layers: 28, Embd: 1536, FFN: 8960, Heads: 12, KVHeads: 2, Context: 32768,
		Vocab: 151936, RopeBase: 1e6, RMSEps: 1e-6}}},
	"llama3.2-1b": {"meta-llama/Llama-3.2-1B (1.24 B parameters), llama3 rope_freqs", Model{Name: "llama3.2-1b-synth", Seed: 25, RoundBF16: true, Shape: Shape{
		Arch: ArchLlama, Layers: 16, Embd: 2048, FFN: 8192, Heads: 32, KVHeads: 8, Context: 131072,
		Vocab: 128256, RopeBase: 5e5, RMSEps: 1e-5, RopeFreqs: "llama3", Llama3Rope: llama32Rope}}},
	"llama3.2-3b": {"meta-llama/Llama-3.2-3B (3.21 B parameters), llama3 rope_freqs", Model{Name: "llama3.2-3b-synth", Seed: 26, RoundBF16: true, Shape: Shape{
		Arch: ArchLlama, Layers: 28, Embd: 3072, FFN: 8192, Heads: 24, KVHeads: 8, Context: 131072,
		Vocab: 128256, RopeBase: 5e5, RMSEps: 1e-5, RopeFreqs: "llama3", Llama3Rope: llama32Rope}}},
	"gemma3-270m": {"google/gemma-3-270m (268 M parameters, 63 % of them the embedding)", Model{Name: "gemma3-270m-synth", Seed: 27, RoundBF16: true,
		Shape: gemma3Shape(18, 640, 2048)}},
	"gemma3-1b": {"google/gemma-3-1b-it (1.00 B parameters)", Model{Name: "gemma3-1b-synth", Seed: 28, RoundBF16: true,
		Shape: gemma3Shape(26, 1152, 6912)}},
	"granite-3.3-2b": {"ibm-granite/granite-3.3-2b-instruct (2.53 B parameters)", Model{Name: "granite-3.3-2b-synth", Seed: 33, RoundBF16: true, Shape: Shape{
		Arch: ArchGranite, Layers: 40, Embd: 2048, FFN: 8192, Heads: 32, KVHeads: 8, Context: 131072,
		Vocab: 49159, RopeBase: 1e7, RMSEps: 1e-5, Granite: GraniteScales{Embedding: 12, Attention: 0.015625, Residual: 0.22, Logit: 8}}}},
	"smollm2-135m": {"HuggingFaceTB/SmolLM2-135M-Instruct (135 M parameters, 21 % of them the embedding)",
		smollm2("smollm2-135m-synth", 30, 30, 576, 1536, 9, 3, 49152, 1e5)},
	"smollm2-360m": {"HuggingFaceTB/SmolLM2-360M-Instruct (362 M parameters)",
		smollm2("smollm2-360m-synth", 31, 32, 960, 2560, 15, 5, 49152, 1e5)},
	"smollm2-1.7b": {"HuggingFaceTB/SmolLM2-1.7B-Instruct (1.71 B parameters, no grouped-query attention)",
		smollm2("smollm2-1.7b-synth", 32, 24, 2048, 8192, 32, 32, 49152, 1.3e5)},
	"phi-4-mini": {"microsoft/Phi-4-mini-instruct (3.84 B parameters), random LongRoPE factors", Model{Name: "phi-4-mini-synth", Seed: 34, RoundBF16: true, Shape: Shape{
		Arch: ArchPhi3, Layers: 32, Embd: 3072, FFN: 8192, Heads: 24, KVHeads: 8, Context: 131072,
		Vocab: 200064, RopeBase: 1e4, RMSEps: 1e-5, RopeDims: 96, LongRope: true, RopeOrigContext: 4096, RopeAttnFactor: 1.1902381}}},
	"qwen3-30b-a3b": {"Qwen/Qwen3-30B-A3B (30.5 B parameters, 3.3 B active: 8 of 128 experts)", Model{Name: "qwen3-30b-a3b-synth", Seed: 37, RoundBF16: true, Shape: Shape{
		Arch: ArchQwen3MoE, Layers: 48, Embd: 2048, FFN: 6144, Heads: 32, KVHeads: 4, HeadDim: 128, Context: 40960,
		Vocab: 151936, RopeBase: 1e6, RMSEps: 1e-6, Untied: true, Experts: 128, ExpertsUsed: 8, ExpertFFN: 768}}},
	"gpt-oss-20b": {"openai/gpt-oss-20b (20.9 B parameters, 3.6 B active: 4 of 32 experts)", Model{Name: "gpt-oss-20b-synth", Seed: 38, RoundBF16: true,
		Shape: gptOSS()}},
	"bge-small": {"BAAI/bge-small-en-v1.5 (33 M parameters), CLS pooling", Model{Name: "bge-small-synth", Seed: 29, Shape: Shape{
		Arch: ArchBERT, Layers: 12, Embd: 384, FFN: 1536, Heads: 12, KVHeads: 12, Context: 512,
		Vocab: 30522, RMSEps: 1e-12, Pooling: "cls"}}},
}

// Preset returns a named model (see PresetNames and PresetAbout).
func Preset(name string) (Model, error) {
	p, ok := presets[name]
	if !ok {
		return Model{}, fmt.Errorf("synth: unknown preset %q (have %s)", name, strings.Join(PresetNames(), ", "))
	}
	return p.model, nil
}

// PresetAbout says in a line what a preset is: the golden files it
// reproduces, or the published model whose shape it has. It is "" for an
// unknown name.
func PresetAbout(name string) string { return presets[name].about }

// PresetNames lists the presets, sorted.
func PresetNames() []string {
	var names []string
	for n := range presets {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
