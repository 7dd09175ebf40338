// Package synth writes deterministic random-weight models of the llama
// family (arch llama or smollm3) as GGUF files, in any shape and in the
// common llama.cpp quantization mixes.
//
// The weights are not trained, but their scales are chosen so the model
// behaves like a trained one numerically: logits with a standard deviation
// of about 4, attention scores of about 2, a strong first FFN block and
// small later updates, so tiny numeric differences do not explode across
// layers. The generator and scales are those of the project's llamaref
// tool, so the "tinyq" preset in F32 reproduces the golden F32 model bit for
// bit, and quantizing it reproduces llama.cpp's quantized golden files.
//
// A model is described by a [Model] (name, [Shape], seed), usually one of
// the presets ([Preset]); [Write] streams it to a file with gguf.Write,
// generating and quantizing one tensor (in chunks of rows) at a time, so the
// 3B shape needs little memory.
package synth

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/smolgo/smolgo/gguf"
)

// Shape is a model's architecture and size.
type Shape struct {
	Arch            string  // "smollm3" (RoPE skipped in every fourth layer) or "llama"
	Layers          int     // transformer blocks
	Embd            int     // hidden size
	FFN             int     // feed-forward size
	Heads           int     // query heads
	KVHeads         int     // key/value heads (grouped-query attention)
	HeadDim         int     // 0 means Embd/Heads
	Context         int     // training context length
	Vocab           int     // 0 means the built-in 337 tokens; more pads them
	RopeBase        float32 // rope.freq_base
	RMSEps          float32 // RMSNorm epsilon
	RopeScaling     string  // "" (none), "linear" or "yarn"
	RopeFactor      float32 // with RopeScaling
	RopeOrigContext int     // with RopeScaling
	Untied          bool    // write a separate output.weight (otherwise token_embd is reused)
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

// Validate checks that the shape describes a model llama.cpp can load.
func (s Shape) Validate() error {
	if s.Arch != "smollm3" && s.Arch != "llama" {
		return fmt.Errorf("synth: arch %q: want smollm3 or llama", s.Arch)
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

var presets = map[string]Model{
	// The golden tinyq family's source (../shared/golden): 8 layers, NoPE in 3 and 7.
	"tinyq": {Name: "smollm3-tinyq", Seed: 1, RoundBF16: true, Shape: Shape{
		Arch: "smollm3", Layers: 8, Embd: 256, FFN: 256, Heads: 4, KVHeads: 2, Context: 4096,
		RopeBase: 5e6, RMSEps: 1e-6}},
	// Plain llama with RoPE everywhere and an untied output matrix.
	"llama-tiny": {Name: "llama-tiny", Seed: 2, Shape: Shape{
		Arch: "llama", Layers: 3, Embd: 64, FFN: 192, Heads: 4, KVHeads: 2, Context: 2048,
		RopeBase: 1e4, RMSEps: 1e-5, Untied: true}},
	// SmolLM3 with static YaRN (factor 2 over 128 positions).
	"tinyyarn": {Name: "smollm3-tinyyarn", Seed: 3, Shape: Shape{
		Arch: "smollm3", Layers: 4, Embd: 64, FFN: 128, Heads: 2, KVHeads: 1, Context: 256,
		RopeBase: 1e4, RMSEps: 1e-6, RopeScaling: "yarn", RopeFactor: 2, RopeOrigContext: 128}},
	// The full SmolLM3-3B shape (3.08 B parameters) with the built-in
	// vocabulary padded to SmolLM3's 128,256 tokens.
	"3b": {Name: "smollm3-3b-synth", Seed: 3, RoundBF16: true, Shape: Shape{
		Arch: "smollm3", Layers: 36, Embd: 2048, FFN: 11008, Heads: 16, KVHeads: 4, Context: 65536,
		Vocab: 128256, RopeBase: 5e6, RMSEps: 1e-6}},
}

// Preset returns a named model: "tinyq", "llama-tiny", "tinyyarn" (the
// golden models' shapes and seeds) or "3b" (SmolLM3-3B's shape).
func Preset(name string) (Model, error) {
	m, ok := presets[name]
	if !ok {
		return Model{}, fmt.Errorf("synth: unknown preset %q (have %s)", name, strings.Join(PresetNames(), ", "))
	}
	return m, nil
}

// PresetNames lists the presets, sorted.
func PresetNames() []string {
	var names []string
	for n := range presets {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
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
)

var mixFileType = map[Mix]uint32{
	MixF32: 0, MixF16: 1, MixQ4_0: 2, MixQ8_0: 7, MixQ4_K_M: 15, MixQ6_K: 18, MixBF16: 32,
}

// ParseMix accepts a mix name in any case ("q4_k_m", "F16").
func ParseMix(s string) (Mix, error) {
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

// useMoreBits is llama.cpp's rule for the layers whose attn_v and ffn_down
// get more bits in the _M mixes: the first and last eighth of the layers
// and every third layer in between.
func useMoreBits(i, n int) bool {
	return i < n/8 || i >= 7*n/8 || (i-n/8)%3 == 2
}

// TensorType returns the type the mix gives tensor name (layer is its
// block number, -1 outside blocks) in a model of nLayers layers with the
// given row length. 1-D tensors are always F32. A type whose block does
// not divide the row falls back as llama.cpp does (q4_K→q5_0, q6_K→q8_0,
// then f16).
func (m Mix) TensorType(name string, layer, nLayers, rowLen int, oneDim, tied bool) gguf.Type {
	if oneDim {
		return gguf.TypeF32
	}
	isOutput := name == "output.weight" || tied && name == "token_embd.weight"
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
	case MixQ4_K_M:
		t = gguf.TypeQ4_K
		more := layer >= 0 && useMoreBits(layer, nLayers) &&
			(strings.HasSuffix(name, ".attn_v.weight") || strings.HasSuffix(name, ".ffn_down.weight"))
		if isOutput || more {
			t = gguf.TypeQ6_K
		}
	}
	for rowLen%t.BlockSize() != 0 {
		switch t {
		case gguf.TypeQ4_K:
			t = gguf.TypeQ5_0
		case gguf.TypeQ6_K:
			t = gguf.TypeQ8_0
		default:
			t = gguf.TypeF16
		}
	}
	return t
}

// tensorSpec is one tensor to generate: kind 0 is gaussian × scale, kind 1
// a norm weight 1 + scale × gaussian, kind 2 a norm weight with random sign.
type tensorSpec struct {
	name   string
	dims   []uint64
	layer  int
	kind   int
	scale  float64
	oneDim bool
}

// Init scales (see the package comment): logits std 4, raw attention
// scores std 2, attention output gain 0.3, FFN down gain 3 in block 0 and
// 0.1 after.
const (
	logitStd      = 4.0
	attnStd       = 2.0
	attnOutGain   = 0.3
	ffnGain       = 0.1
	ffnGainFirst  = 3.0
	normWeightStd = 0.05
)

func (m Model) specs(nVocab uint64) []tensorSpec {
	s := m.Shape
	e, f := uint64(s.Embd), uint64(s.FFN)
	hd := uint64(s.headDim())
	nq, nkv := uint64(s.Heads)*hd, uint64(s.KVHeads)*hd
	// scale g/sqrt(n), computed exactly as llamaref does (a division, not
	// a multiplication by 1/sqrt(n), which can round differently).
	sc := func(g float64, n uint64) float64 { return g / math.Sqrt(float64(n)) }
	qGain := math.Sqrt(attnStd)
	w := func(name string, layer int, ne0, ne1 uint64, scale float64) tensorSpec {
		return tensorSpec{name: name, dims: []uint64{ne0, ne1}, layer: layer, scale: scale}
	}
	norm := func(name string, layer, kind int) tensorSpec {
		return tensorSpec{name: name, dims: []uint64{e}, layer: layer, kind: kind, scale: normWeightStd, oneDim: true}
	}
	out := []tensorSpec{w("token_embd.weight", -1, e, nVocab, sc(logitStd, e))}
	for i := range s.Layers {
		b := "blk." + strconv.Itoa(i) + "."
		down := ffnGain
		if i == 0 {
			down = ffnGainFirst
		}
		out = append(out,
			norm(b+"attn_norm.weight", i, 1),
			w(b+"attn_q.weight", i, e, nq, sc(qGain, e)),
			w(b+"attn_k.weight", i, e, nkv, sc(qGain, e)),
			w(b+"attn_v.weight", i, e, nkv, sc(1, e)),
			w(b+"attn_output.weight", i, nq, e, sc(attnOutGain, nq)),
			norm(b+"ffn_norm.weight", i, 1),
			w(b+"ffn_gate.weight", i, e, f, sc(1, e)),
			w(b+"ffn_up.weight", i, e, f, sc(1, e)),
			w(b+"ffn_down.weight", i, f, e, sc(down, f)),
		)
	}
	// Random signs on output_norm keep tied embeddings from favouring the
	// current token (a bias of about |e|²/rms(x)), which makes greedy
	// decoding repeat itself.
	out = append(out, norm("output_norm.weight", -1, 2))
	if s.Untied {
		out = append(out, w("output.weight", -1, e, nVocab, sc(logitStd, e)))
	}
	return out
}

// quantizeOrder sorts specs the way llama.cpp's quantizer writes tensors:
// those outside blocks first, then block by block, each sorted by name.
func quantizeOrder(specs []tensorSpec) {
	slices.SortStableFunc(specs, func(a, b tensorSpec) int {
		return cmp.Or(cmp.Compare(a.layer, b.layer), cmp.Compare(a.name, b.name))
	})
}

// Metadata returns the model's GGUF metadata for a mix, with the keys
// llama.cpp's converter writes, in the order llama.cpp's tools write them.
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
	} else if kv, err = builtinTokenizerKV(s.Vocab); err != nil {
		return nil, err
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
	hd := s.headDim()
	kv = append(kv,
		u("block_count", s.Layers),
		u("context_length", s.Context),
		u("embedding_length", s.Embd),
		u("feed_forward_length", s.FFN),
		u("attention.head_count", s.Heads),
		u("attention.head_count_kv", s.KVHeads),
		gguf.KV{Key: a + "rope.freq_base", Value: s.RopeBase},
		gguf.KV{Key: a + "attention.layer_norm_rms_epsilon", Value: s.RMSEps},
		u("rope.dimension_count", hd),
		u("vocab_size", nVocab),
	)
	if hd*s.Heads != s.Embd {
		kv = append(kv, u("attention.key_length", hd), u("attention.value_length", hd))
	}
	if s.RopeScaling != "" {
		kv = append(kv,
			gguf.KV{Key: a + "rope.scaling.type", Value: s.RopeScaling},
			gguf.KV{Key: a + "rope.scaling.factor", Value: s.RopeFactor},
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
// llama.cpp's converter writes.
func builtinTokenizerKV(n int) ([]gguf.KV, error) {
	v, err := BuiltinVocab(n)
	if err != nil {
		return nil, err
	}
	return []gguf.KV{
		{Key: "tokenizer.ggml.model", Value: "gpt2"},
		// What llama.cpp's converter writes for SmolLM3: Llama 3's
		// pre-tokenizer regex without llama-bpe's ignore_merges shortcut.
		{Key: "tokenizer.ggml.pre", Value: "smaug-bpe"},
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
