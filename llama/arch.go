package llama

import (
	"fmt"
	"math"
	"slices"

	"github.com/smolgo/smolgo/rope"
)

// An Arch says what a llama-family architecture does in its blocks. It is
// data, not code: a family package (smollm3, models/qwen3, models/gemma3,
// ...) builds one from a file's hyper-parameters, and every backend (the
// CPU runner here, package cuda on a GPU) reads the same description and
// runs the one block it has. A backend that lacks a feature refuses the
// description with an error naming it (Unsupported helps).
//
// Every layer is the same skeleton around two parts of a named kind, a
// token mixer (the part that moves information between positions) and a
// feed-forward network (the part that transforms each position alone):
//
//	x = embedding(token) · EmbedScale
//	for each layer:
//	    a = Mixer(RMSNorm(x, attn_norm))              // *Attention
//	    x = x + RMSNorm(a, post_attention_norm)·ResidualScale (PostNorms) or x + a·ResidualScale
//	    f = FFN(RMSNorm(x, ffn_norm))                 // *GLU
//	    x = x + RMSNorm(f, post_ffw_norm)·ResidualScale (PostNorms) or x + f·ResidualScale
//	logits = RMSNorm(x, output_norm)·Wout / LogitScale, soft-capped if LogitSoftcap > 0
//
// The mixer kinds are the types of this package that implement Mixer
// (Attention), the FFN kinds those that implement FFN (GLU). Each kind is a
// small type that says what it does (its fields), which tensors it reads
// (LoadWeights), what each sequence keeps of it (the attention's keys and
// values), and how the CPU computes it; see the package documentation for
// how a new kind joins.
//
// The zero value of each field is the plain llama block's choice.
type Arch struct {
	// Name is the architecture's name (general.architecture), for errors
	// and logs.
	Name string
	// Layers describes each block; its length is Config.Layers.
	Layers []Layer
	// NextN describes the multi-token-prediction blocks stored after the
	// model's own (Config.NextN of them, or none where the family does
	// not run them): the main pass never runs them; the backend's NextN
	// (mtp.go) drafts with the first.
	NextN []Layer
	// EmbedScale multiplies the token embeddings before the first block
	// (Gemma: √Embd); 0 means 1.
	EmbedScale float32
	// ResidualScale multiplies the mixer and feed-forward outputs before
	// each is added to the residual stream (Granite's
	// residual_multiplier); 0 means 1.
	ResidualScale float32
	// LogitScale divides the logits (Granite's logits_scaling); 0 means 1.
	LogitScale float32
	// LogitSoftcap, when positive, maps each logit z to c·tanh(z/c)
	// (final_logit_softcapping), after LogitScale.
	LogitSoftcap float32
	// LongContext, when positive, is the context length above which the
	// attention layers' LongRope replaces their Rope (LongRoPE, as in
	// Phi-3 and Phi-4-mini: rope.scaling.original_context_length).
	// ForContext resolves the choice for a model's cache length before a
	// backend sees the description.
	LongContext int
	// OutputNorm names the tensor of the final norm, <OutputNorm>.weight;
	// "" means output_norm. (LFM2 stores it as token_embd_norm.)
	OutputNorm string
	// RankSoftmax ends a reranker's classification head (cls.output, see
	// Weights.ClsOut) in a softmax over its labels, as llama.cpp does for
	// Qwen3-Reranker (scores are then probabilities: "yes", "no").
	RankSoftmax bool
	// Deepstack (Qwen3-VL's n_deepstack_layers) widens the input rows a
	// step takes in place of token embeddings (backend.Seq.Embeds) to
	// (1 + Deepstack) × Embd: the first Embd values are the row's input,
	// and slice k+1 is added to its hidden state after block k, for k <
	// Deepstack (llama.cpp's qwen3vl graph). A vision projector's deepstack
	// mergers make those slices; a token's are zero (nothing is added).
	Deepstack int
}

// Layer is one block: a token mixer and a feed-forward network, each of a
// named kind, in the skeleton every layer shares.
type Layer struct {
	// Mixer is the block's token mixer: *Attention.
	Mixer Mixer
	// FFN is the block's feed-forward network: *GLU.
	FFN FFN
	// PostNorms normalizes the mixer's output and the feed-forward output
	// before each is added to the residual stream (tensors
	// post_attention_norm and post_ffw_norm; Gemma's sandwich norms).
	PostNorms bool
	// FFNNorm names the tensor of the feed-forward's input norm,
	// blk.N.<FFNNorm>.weight; "" means ffn_norm. (gpt-oss and Qwen3.5
	// store it as post_attention_norm.)
	FFNNorm string
}

// A Mixer is a layer's token mixer, the part of a block that moves
// information between positions. The kinds are this package's types that
// implement it: *Attention, and the recurrent *ShortConv, whose sequences
// keep a fixed-size state instead of keys and values (state.go).
type Mixer interface {
	// Kind names the kind ("attention"), as errors and Features name it.
	Kind() string
	kind
}

// An FFN is a layer's feed-forward network, the part of a block that
// transforms each position on its own. The kinds are this package's types
// that implement it: *GLU.
type FFN interface {
	// Kind names the kind ("glu"), as errors and Features name it.
	Kind() string
	kind
}

// kind is what every mixer and FFN kind does besides naming itself; the
// unexported methods keep the kinds in this package, where the CPU runner
// computes them.
type kind interface {
	// validate checks the kind against the model's hyper-parameters.
	validate(a *Arch, cfg Config) error
	// features adds the names of what the kind uses beyond the plain
	// block (see Arch.Features).
	features(add func(on bool, name string))
	// clone returns a copy that shares nothing mutable with the kind
	// (rotations are shared: they are read-only).
	clone() kind
	// load reads the kind's tensors of layer i into lw.
	load(ld *loader, cfg Config, i int, lw *LayerWeights)
	// newStep returns the kind's CPU step for layer l of m, over the
	// weights lw (the runner's copy).
	newStep(m *CPU, l int, lw *LayerWeights) (sublayer, error)
}

// Attention returns the layer's mixer when it is attention, else nil.
func (l Layer) Attention() *Attention {
	a, _ := l.Mixer.(*Attention)
	return a
}

// GLU returns the layer's feed-forward network when it is a dense gated
// one, else nil.
func (l Layer) GLU() *GLU {
	g, _ := l.FFN.(*GLU)
	return g
}

// window is the layer's attention window (0: none, or not attention).
func (l Layer) window() int {
	if a := l.Attention(); a != nil {
		return a.Window
	}
	return 0
}

// rope is the layer's rotation (nil: none, or not attention).
func (l Layer) rope() *rope.Config {
	if a := l.Attention(); a != nil {
		return a.Rope
	}
	return nil
}

// ffnNorm is the tensor name of the layer's feed-forward input norm.
func (l Layer) ffnNorm() string {
	if l.FFNNorm != "" {
		return l.FFNNorm
	}
	return "ffn_norm"
}

// clone returns a copy of l whose kinds are its own.
func (l Layer) clone() Layer {
	if l.Mixer != nil {
		l.Mixer = l.Mixer.clone().(Mixer)
	}
	if l.FFN != nil {
		l.FFN = l.FFN.clone().(FFN)
	}
	return l
}

// Plain returns the plain llama block for cfg: every layer attention
// rotated by cfg.Rope and a SwiGLU feed-forward, nothing else. Families
// start from it and change what they do differently.
func Plain(name string, cfg Config) Arch {
	r := cfg.Rope
	return Uniform(name, cfg.Layers, Layer{Mixer: &Attention{Rope: &r}, FFN: &GLU{}})
}

// Uniform returns an architecture whose n layers are all like l. Each
// layer gets its own copy of l's kinds, so that changing one layer's
// (a.Layers[i].Attention().Window = 512) leaves the others as they are;
// the rotations stay shared.
func Uniform(name string, n int, l Layer) Arch {
	a := Arch{Name: name, Layers: make([]Layer, n)}
	for i := range a.Layers {
		a.Layers[i] = l.clone()
	}
	return a
}

// Validate checks a against the model's hyper-parameters: one entry per
// layer, each with a mixer and an FFN valid for the model, and finite
// scales.
func (a *Arch) Validate(cfg Config) error {
	if len(a.Layers) != cfg.Layers {
		return fmt.Errorf("llama: %s describes %d layers, the model has %d", a.Name, len(a.Layers), cfg.Layers)
	}
	for _, c := range []struct {
		what string
		v    float32
	}{{"embedding scale", a.EmbedScale}, {"residual scale", a.ResidualScale}, {"logit scale", a.LogitScale},
		{"logit soft-cap", a.LogitSoftcap}} {
		if err := finite(a.Name, c.what, c.v); err != nil {
			return err
		}
	}
	if a.Deepstack < 0 || a.Deepstack > cfg.Layers {
		return fmt.Errorf("llama: %s: %d deepstack layers for %d blocks", a.Name, a.Deepstack, cfg.Layers)
	}
	for i, l := range a.Layers {
		if l.Mixer == nil || l.FFN == nil {
			return fmt.Errorf("llama: %s: layer %d has no token mixer or no feed-forward network", a.Name, i)
		}
		if cfg.LayerKVHeads != nil && (cfg.LayerKVHeads[i] > 0) != (l.Attention() != nil) {
			return fmt.Errorf("llama: %s: layer %d has %d KV heads (attention.head_count_kv), but its mixer is %s", a.Name, i, cfg.LayerKVHeads[i], l.Mixer.Kind())
		}
		if err := l.Mixer.validate(a, cfg); err != nil {
			return fmt.Errorf("llama: %s: layer %d: %w", a.Name, i, err)
		}
		if err := l.FFN.validate(a, cfg); err != nil {
			return fmt.Errorf("llama: %s: layer %d: %w", a.Name, i, err)
		}
	}
	return nil
}

// finite reports a scale that is NaN, infinite or negative.
func finite(arch, what string, v float32) error {
	if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) || v < 0 {
		return fmt.Errorf("llama: %s: %s %v must be a finite number, 0 or more", arch, what, v)
	}
	return nil
}

// ForContext returns the description for caches of n positions: where
// LongContext is set and n exceeds it, each attention layer's LongRope
// replaces its Rope. The result has no LongRope left, so a backend reads
// one rotation per layer; a is not changed.
func (a Arch) ForContext(n int) Arch {
	layers := make([]Layer, len(a.Layers))
	for i, l := range a.Layers {
		layers[i] = l.clone()
		if at := layers[i].Attention(); at != nil {
			if a.LongContext > 0 && n > a.LongContext && at.LongRope != nil {
				at.Rope = at.LongRope
			}
			at.LongRope = nil
		}
	}
	a.Layers = layers
	a.NextN = slices.Clone(a.NextN)
	for i, l := range a.NextN {
		a.NextN[i] = l.clone()
		if at := a.NextN[i].Attention(); at != nil {
			at.LongRope = nil
		}
	}
	a.LongContext = 0
	return a
}

// Windowed reports whether some layer uses sliding-window attention.
func (a *Arch) Windowed() bool {
	for _, l := range a.Layers {
		if l.window() > 0 {
			return true
		}
	}
	return false
}

// Features lists what a uses beyond the plain llama block (attention and a
// SwiGLU feed-forward), by name: a mixer or FFN of another kind by its
// Kind, and within the kinds "long rope" (gone after ForContext, so no
// backend sees it), "rope neox", "rope factors", "rope scaling", "nope",
// "qk norm", "qkv bias", "sliding window", "query scale", "attention
// scale" (attention) and "gelu" (GLU); then "post norms", "embedding
// scale", "residual scale", "logit scale", "logit soft-cap", "deepstack". A backend
// compares it with what it implements (Unsupported).
func (a *Arch) Features() []string {
	var fs []string
	add := func(on bool, name string) {
		if on && !slices.Contains(fs, name) {
			fs = append(fs, name)
		}
	}
	for _, l := range a.Layers {
		if l.Mixer != nil {
			add(l.Mixer.Kind() != "attention", l.Mixer.Kind())
			l.Mixer.features(add)
		}
		if l.FFN != nil {
			add(l.FFN.Kind() != "glu", l.FFN.Kind())
			l.FFN.features(add)
		}
	}
	for _, l := range a.Layers {
		add(l.PostNorms, "post norms")
	}
	add(a.EmbedScale != 0 && a.EmbedScale != 1, "embedding scale")
	add(a.ResidualScale != 0 && a.ResidualScale != 1, "residual scale")
	add(a.LogitScale != 0 && a.LogitScale != 1, "logit scale")
	add(a.LogitSoftcap > 0, "logit soft-cap")
	add(a.Deepstack > 0, "deepstack")
	return fs
}

// Unsupported returns an error naming the features of a that are not in
// have (a backend's list of what it implements, in Features' names), or
// nil when it has them all.
func (a *Arch) Unsupported(backend string, have ...string) error {
	var missing []string
	for _, f := range a.Features() {
		if !slices.Contains(have, f) {
			missing = append(missing, f)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("%s: architecture %s uses %q, which this backend does not implement", backend, a.Name, missing)
}
