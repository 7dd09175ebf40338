package synth

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/smolgo/smolgo/gguf"
)

// Qwen3-VL: the text model (general.architecture "qwen3vl") and its
// vision projector (clip.projector_type "qwen3vl_merger"), neither of which
// llamaref's synth and synth-mmproj write.

// ArchQwen3VL is Qwen3-VL's text model: qwen3's block with interleaved
// M-RoPE (rope.dimension_sections, llama.cpp's IMROPE) and deepstack: an
// image's embedding rows are (1 + n_deepstack_layers) × Embd wide, and
// slice k+1 is added to the hidden state after block k.
const ArchQwen3VL = "qwen3vl"

// Qwen3VLText is a qwen3vl text model: a qwen3 Model (Shape.Arch qwen3,
// the built-in vocabulary) written under the qwen3vl architecture.
type Qwen3VLText struct {
	Model Model
	// Sections is rope.dimension_sections: the temporal, height, width
	// and extra counts of rotated pairs (summing to at most HeadDim/2).
	Sections [4]int32
	// Deepstack is n_deepstack_layers: how many extra Embd-wide slices an
	// image row carries (the projector's deepstack layers).
	Deepstack int
	// AddTokens are appended to the built-in vocabulary as user-defined
	// tokens (after its six specials, as llamaref's --add-tokens does):
	// the image delimiters mtmd inserts, <|vision_start|> and
	// <|vision_end|>.
	AddTokens []string
}

// Qwen3VLTextTiny is the text model of smolgo's Qwen3-VL reference
// (models/testdata/qwen3vl-*): golden-vision's text width (256, 8 query /
// 2 KV heads of 32), three blocks, sections [6, 5, 5, 0] (Qwen3-VL's
// [24, 20, 20, 0] of 64 pairs, scaled to 16) and two deepstack slices.
func Qwen3VLTextTiny() Qwen3VLText {
	s := tinyFamily(ArchQwen3, 5e6, 1e-6)
	s.Layers = 3
	return Qwen3VLText{
		Model:     Model{Name: "qwen3vl-text-F32", Seed: 47, Shape: s},
		Sections:  [4]int32{6, 5, 5, 0},
		Deepstack: 2,
		AddTokens: []string{"<|vision_start|>", "<|vision_end|>"},
	}
}

// WriteQwen3VLText writes t to w in F32: qwen3's tensors (the same bytes
// as the qwen3 Model writes) and keys, renamed to qwen3vl.*, plus
// qwen3vl.rope.dimension_sections and qwen3vl.n_deepstack_layers, the keys
// llama.cpp's loader (src/models/qwen3vl.cpp) reads.
func WriteQwen3VLText(ctx context.Context, w io.Writer, t Qwen3VLText) error {
	m := t.Model
	if m.Shape.Arch != ArchQwen3 {
		return fmt.Errorf("synth: a qwen3vl text model is written from a qwen3 shape, not %s", m.Shape.Arch)
	}
	if m.Tokenizer != nil || m.Shape.Vocab != 0 {
		return fmt.Errorf("synth: a qwen3vl text model uses the built-in vocabulary")
	}
	if t.Deepstack < 0 || t.Deepstack > m.Shape.Layers {
		return fmt.Errorf("synth: %d deepstack layers for %d blocks", t.Deepstack, m.Shape.Layers)
	}
	var sum int32
	for _, s := range t.Sections {
		if s < 0 {
			return fmt.Errorf("synth: rope sections %v", t.Sections)
		}
		sum += s
	}
	if sum == 0 || int(sum) > m.Shape.headDim()/2 {
		return fmt.Errorf("synth: rope sections %v do not fit %d rotated pairs", t.Sections, m.Shape.headDim()/2)
	}
	tok, err := builtinTokenizerKV(0, "")
	if err != nil {
		return err
	}
	for i := range tok {
		switch tok[i].Key {
		case "tokenizer.ggml.tokens":
			toks := tok[i].Value.([]string)
			for _, a := range t.AddTokens {
				if slices.Contains(toks, a) {
					return fmt.Errorf("synth: token %q is already in the vocabulary", a)
				}
			}
			tok[i].Value = append(toks, t.AddTokens...)
		case "tokenizer.ggml.token_type":
			types := tok[i].Value.([]int32)
			for range t.AddTokens {
				types = append(types, TokenUserDefined)
			}
			tok[i].Value = types
		}
	}
	m.Tokenizer = tok
	kv, err := m.Metadata(MixF32)
	if err != nil {
		return err
	}
	for i := range kv {
		switch {
		case kv[i].Key == "general.architecture":
			kv[i].Value = ArchQwen3VL
		case strings.HasPrefix(kv[i].Key, ArchQwen3+"."):
			kv[i].Key = ArchQwen3VL + "." + strings.TrimPrefix(kv[i].Key, ArchQwen3+".")
		}
	}
	kv = append(kv,
		gguf.KV{Key: ArchQwen3VL + ".rope.dimension_sections", Value: t.Sections[:]},
		gguf.KV{Key: ArchQwen3VL + ".n_deepstack_layers", Value: uint32(t.Deepstack)},
	)
	ts, err := m.Tensors(ctx, MixF32, Options{})
	if err != nil {
		return err
	}
	return gguf.Write(w, kv, ts)
}

// Qwen3VLMmproj is the shape of a qwen3vl_merger projector file.
type Qwen3VLMmproj struct {
	Seed      uint64
	ImageSize int    // clip.vision.image_size: the learned positions cover (ImageSize/Patch)² patches
	Patch     int    // clip.vision.patch_size
	Embd, FFN int    // the ViT's width and MLP width (FFN ≠ Embd: see llamaref's synth-mmproj)
	Heads     int    // attention heads (head size a multiple of 4: 2-D M-RoPE)
	Layers    int    // ViT blocks
	Deepstack []bool // clip.vision.is_deepstack_layers: the blocks whose output also goes through a deepstack merger
	TextEmbd  int    // the text model's width (clip.vision.projection_dim)
}

// Qwen3VLMmprojTiny is the projector of smolgo's Qwen3-VL reference:
// golden-vision's Qwen2-VL sizes (patch 8, width 64, 4 heads, MLP 128),
// three blocks, deepstack mergers on blocks 0 and 1, and learned positions
// for 8 × 8 patches (64 px), which an image of another grid interpolates.
func Qwen3VLMmprojTiny() Qwen3VLMmproj {
	return Qwen3VLMmproj{Seed: 48, ImageSize: 64, Patch: 8, Embd: 64, FFN: 128, Heads: 4, Layers: 3,
		Deepstack: []bool{true, true, false}, TextEmbd: 256}
}

// WriteQwen3VLMmproj writes the projector p to w in F32, with the keys and
// tensors llama.cpp's converter writes for Qwen3-VL
// (conversion/qwen3vl.py Qwen3VLVisionModel) and tools/mtmd/clip.cpp
// loads: the temporal Conv3d split into v.patch_embd.weight and .weight.1
// plus v.patch_embd.bias, v.position_embd.weight, per block
// v.blk.N.{ln1, attn_qkv, attn_out, ln2, ffn_up, ffn_down}.{weight,bias}
// (LayerNorm, GELU MLP), v.post_ln (the merger's norm), mm.0 and mm.2 (the
// merger's linear_fc1 and linear_fc2), and per deepstack block N
// v.deepstack.N.{norm, fc1, fc2}.{weight,bias} (its norm over the 2 × 2
// merged width). Weights are seeded from Seed and each tensor's name, with
// llamaref synth-mmproj's scales.
func WriteQwen3VLMmproj(w io.Writer, p Qwen3VLMmproj) error {
	if p.Patch <= 0 || p.ImageSize <= 0 || p.ImageSize%p.Patch != 0 || p.Embd <= 0 || p.FFN <= 0 || p.FFN == p.Embd ||
		p.Heads <= 0 || p.Embd%p.Heads != 0 || (p.Embd/p.Heads)%4 != 0 || p.Layers <= 0 || len(p.Deepstack) != p.Layers || p.TextEmbd <= 0 {
		return fmt.Errorf("synth: qwen3vl_merger shape %+v", p)
	}
	E, F, P, M := p.Embd, p.FFN, p.Patch, 4*p.Embd
	side := p.ImageSize / P
	kv := []gguf.KV{
		{Key: "general.architecture", Value: "clip"},
		{Key: "general.type", Value: "mmproj"},
		{Key: "general.name", Value: "qwen3vl-mmproj"},
		{Key: "general.file_type", Value: uint32(0)},
		{Key: "clip.has_vision_encoder", Value: true},
		{Key: "clip.projector_type", Value: "qwen3vl_merger"},
		{Key: "clip.use_gelu", Value: true},
		{Key: "clip.vision.projection_dim", Value: uint32(p.TextEmbd)},
		{Key: "clip.vision.image_size", Value: uint32(p.ImageSize)},
		{Key: "clip.vision.patch_size", Value: uint32(P)},
		{Key: "clip.vision.embedding_length", Value: uint32(E)},
		{Key: "clip.vision.feed_forward_length", Value: uint32(F)},
		{Key: "clip.vision.block_count", Value: uint32(p.Layers)},
		{Key: "clip.vision.attention.head_count", Value: uint32(p.Heads)},
		{Key: "clip.vision.attention.layer_norm_epsilon", Value: float32(1e-6)},
		{Key: "clip.vision.image_mean", Value: []float32{0.5, 0.5, 0.5}},
		{Key: "clip.vision.image_std", Value: []float32{0.5, 0.5, 0.5}},
		{Key: "clip.vision.spatial_merge_size", Value: uint32(2)},
		{Key: "clip.vision.is_deepstack_layers", Value: slices.Clone(p.Deepstack)},
	}
	var ts []gguf.WriterTensor
	add := func(name string, dims []uint64, v func(r *rng) float32) {
		n := uint64(1)
		for _, d := range dims {
			n *= d
		}
		r := newRNG(p.Seed, name)
		data := make([]byte, 4*n)
		for i := range n {
			binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(v(r)))
		}
		ts = append(ts, gguf.WriterTensor{Name: name, Dims: dims, Type: gguf.TypeF32, Data: data})
	}
	gauss := func(std float64) func(r *rng) float32 {
		return func(r *rng) float32 { return float32(std * r.gauss()) }
	}
	normW := func(r *rng) float32 { return float32(1 + 0.05*r.gauss()) }
	lin := func(name string, in, out int, gain float64) {
		add(name+".weight", []uint64{uint64(in), uint64(out)}, gauss(gain/math.Sqrt(float64(in))))
		add(name+".bias", []uint64{uint64(out)}, gauss(0.02))
	}
	ln := func(name string, n int) {
		add(name+".weight", []uint64{uint64(n)}, normW)
		add(name+".bias", []uint64{uint64(n)}, gauss(0.02))
	}
	// Two halves of the temporal kernel: each N(0, 1/(2·fan in)), so
	// their sum on a still image has the variance of one kernel.
	kernel := []uint64{uint64(P), uint64(P), 3, uint64(E)}
	add("v.patch_embd.weight", kernel, gauss(1/math.Sqrt(float64(2*3*P*P))))
	add("v.patch_embd.weight.1", kernel, gauss(1/math.Sqrt(float64(2*3*P*P))))
	add("v.patch_embd.bias", []uint64{uint64(E)}, gauss(0.1))
	add("v.position_embd.weight", []uint64{uint64(E), uint64(side * side)}, gauss(0.5))
	for i := range p.Layers {
		b := fmt.Sprintf("v.blk.%d.", i)
		ln(b+"ln1", E)
		// q, k and v stacked (the checkpoint's attn.qkv): q and k with
		// gain √2 so attention scores are not flat.
		qkv := make([]float32, 0, 3*E*E)
		{
			r := newRNG(p.Seed, b+"attn_qkv.weight")
			for row := range 3 * E {
				std := 1 / math.Sqrt(float64(E))
				if row < 2*E {
					std *= math.Sqrt2
				}
				for range E {
					qkv = append(qkv, float32(std*r.gauss()))
				}
			}
		}
		k := 0
		add(b+"attn_qkv.weight", []uint64{uint64(E), uint64(3 * E)}, func(*rng) float32 { k++; return qkv[k-1] })
		add(b+"attn_qkv.bias", []uint64{uint64(3 * E)}, gauss(0.02))
		lin(b+"attn_out", E, E, 0.5)
		ln(b+"ln2", E)
		lin(b+"ffn_up", E, F, 1)
		lin(b+"ffn_down", F, E, 0.5)
	}
	ln("v.post_ln", E)
	// The projections make output components of std about 4/√TextEmbd,
	// the scale of synth's token embeddings.
	out := 4 / math.Sqrt(float64(p.TextEmbd))
	lin("mm.0", M, M, 1)
	lin("mm.2", M, p.TextEmbd, out*math.Sqrt(2))
	for i, ds := range p.Deepstack {
		if !ds {
			continue
		}
		b := fmt.Sprintf("v.deepstack.%d.", i)
		ln(b+"norm", M)
		lin(b+"fc1", M, M, 1)
		lin(b+"fc2", M, p.TextEmbd, out*math.Sqrt(2))
	}
	return gguf.Write(w, kv, ts)
}
