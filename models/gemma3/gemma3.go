// Package gemma3 is the Gemma 3 family (general.architecture "gemma3"; 270M
// and 1B are the sizes people run on a CPU). Importing it registers the
// architecture with package family.
//
// Gemma 3's block, as llama.cpp runs it (src/models/gemma3.cpp), is the
// llama block with:
//
//   - the embeddings multiplied by √Embd;
//   - RoPE's NEOX pairing, and a per-head RMSNorm of queries and keys
//     before it;
//   - the queries scaled by 1/√HeadDim before attention (query_pre_attn_scalar),
//     the softmax then unscaled;
//   - RMSNorms of the attention output and of the feed-forward output
//     before each joins the residual stream (post_attention_norm,
//     post_ffw_norm);
//   - a GELU (tanh) gated feed-forward;
//   - sliding-window attention in most layers: attention.sliding_window
//     positions, in the layers that sliding_window_pattern marks (a period:
//     every layer but each period-th; or one flag per layer), whose RoPE
//     base is rope.freq_base_swa (10,000) without the global layers'
//     scaling; their KV cache is a ring of the window plus one batch;
//   - final_logit_softcapping, where the file sets it.
//
// The converter bakes Gemma's (1 + w) norm weights into the file, so the
// norms are the plain RMSNorm. The format is package chat's template
// (<start_of_turn>), <end_of_turn> ending a turn, and tool calls in
// llama.cpp's generic JSON format (Gemma 3 has no tool tokens; see package
// chat).
package gemma3

import (
	"errors"
	"fmt"
	"math"

	"github.com/smolgo/smolgo/engine"
	"github.com/smolgo/smolgo/family"
	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/llama"
	"github.com/smolgo/smolgo/models/gemma3/chat"
	"github.com/smolgo/smolgo/rope"
)

// Arch is the architecture name of Gemma 3 files.
const Arch = "gemma3"

func init() {
	family.Register(family.Family{Arch: Arch, Describe: Describe,
		Format: func(f *gguf.File) (engine.Format, error) {
			return family.FileFormat(f, FormatSpec, TemplateSHA256), nil
		}})
}

// TemplateSHA256 is the SHA-256 of the chat template FormatSpec renders
// byte for byte (Gemma 3's, chat/testdata/google-gemma-3-1b-it.jinja): a file carrying it gets FormatSpec, a file
// carrying another (a fine-tune's) its own template through the Jinja
// engine.
const TemplateSHA256 = "d2f96210400e38149e26e01918a408c3f2ad3d4bd87c44e8dcf8e1a611a98535"

// DefaultPattern is the sliding-window period llama.cpp assumes when a file
// has sliding_window but no sliding_window_pattern: five local layers, then
// one global.
const DefaultPattern = 6

// Describe is Gemma 3's block for a file.
func Describe(f *gguf.File, cfg llama.Config) (llama.Arch, error) {
	key := func(k string) string { return Arch + "." + k }
	global := cfg.Rope
	global.Layout = rope.NeoX
	// llama.cpp: 1/√(Embd/Heads) for the 27B model (62 layers), else
	// 1/√HeadDim (query_pre_attn_scalar is the head size elsewhere).
	qs := float64(cfg.HeadDim)
	if cfg.Layers == 62 {
		qs = float64(cfg.Embd / cfg.Heads)
	}
	a := llama.Uniform(Arch, cfg.Layers, llama.Layer{
		Mixer:     &llama.Attention{Rope: &global, QKNorm: true, QueryScale: float32(1 / math.Sqrt(qs))},
		FFN:       &llama.GLU{Activation: llama.GELUTanh},
		PostNorms: true,
	})
	a.EmbedScale = float32(math.Sqrt(float64(cfg.Embd)))
	// A missing key means the default; one of the wrong type (a string, a
	// negative number) is an error, never silently the default.
	if v, err := f.Float32(key("final_logit_softcapping")); err == nil {
		a.LogitSoftcap = v
	} else if !errors.Is(err, gguf.ErrKeyNotFound) {
		return llama.Arch{}, err
	}
	window, err := f.Uint32(key("attention.sliding_window"))
	switch {
	case errors.Is(err, gguf.ErrKeyNotFound):
		return a, nil // no sliding window: every layer global
	case err != nil:
		return llama.Arch{}, err
	case window == 0:
		return a, nil
	}
	if window > 1<<24 {
		return llama.Arch{}, fmt.Errorf("%s = %d is out of range", key("attention.sliding_window"), window)
	}
	local, err := llama.SlidingLayers(f, key("attention.sliding_window_pattern"), cfg.Layers, DefaultPattern)
	if err != nil {
		return llama.Arch{}, err
	}
	lr := rope.Config{Dims: global.Dims, Base: 10000, Layout: rope.NeoX}
	if b, err := f.Float32(key("rope.freq_base_swa")); err == nil {
		lr.Base = b
	} else if !errors.Is(err, gguf.ErrKeyNotFound) {
		return llama.Arch{}, err
	}
	for i, on := range local {
		if on {
			at := a.Layers[i].Attention()
			at.Rope, at.Window = &lr, int(window)
		}
	}
	return a, nil
}

// FormatSpec is Gemma 3's chat format.
var FormatSpec = family.FormatSpec{
	Render: func(_ *gguf.File, msgs []engine.Message, opts engine.PromptOptions) (string, [][2]int, error) {
		return chat.RenderSpans(msgs, chat.Options{Tools: opts.Tools, AddGenerationPrompt: true})
	},
	EndOfTurn: []string{"<end_of_turn>"},
	Tools:     family.GenericJSON,
}
