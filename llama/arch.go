package llama

import (
	"fmt"
	"math"

	"github.com/smolgo/smolgo/rope"
)

// An Arch says what a llama-family architecture does in its blocks. It is
// data, not code: a family package (smollm3, qwen3, gemma3, ...) builds one
// from a file's hyper-parameters, and every backend (the CPU runner here,
// package cuda on a GPU) reads the same description and runs the one block
// it has. A backend that lacks a feature refuses the description with an
// error naming it (Unsupported helps).
//
// The block every architecture shares:
//
//	x = embedding(token) · EmbedScale
//	for each layer:
//	    h = RMSNorm(x, attn_norm)
//	    q, k, v = h·Wq (+bq), h·Wk (+bk), h·Wv (+bv)
//	    q, k = RMSNorm per head (QKNorm), then RoPE (unless NoPE)
//	    a = attention(q·QueryScale, k, v) over the window, ·Wo
//	        (scores scaled by AttentionScale or 1/√HeadDim)
//	    x = x + RMSNorm(a, post_attention_norm)·ResidualScale (PostNorms) or x + a·ResidualScale
//	    h = RMSNorm(x, ffn_norm)
//	    f = (act(h·Wgate) ⊙ h·Wup)·Wdown
//	    x = x + RMSNorm(f, post_ffw_norm)·ResidualScale (PostNorms) or x + f·ResidualScale
//	logits = RMSNorm(x, output_norm)·Wout / LogitScale, soft-capped if LogitSoftcap > 0
//
// The zero value of each field is the plain llama block's choice.
type Arch struct {
	// Name is the architecture's name (general.architecture), for errors
	// and logs.
	Name string
	// Layers describes each block; its length is Config.Layers.
	Layers []Layer
	// Activation is the gated feed-forward's activation.
	Activation Activation
	// EmbedScale multiplies the token embeddings before the first block
	// (Gemma: √Embd); 0 means 1.
	EmbedScale float32
	// QueryScale, when not 0, multiplies the queries after RoPE, and the
	// attention softmax then takes the scores unscaled (Gemma's
	// query_pre_attn_scalar). 0 means the usual 1/√HeadDim inside the
	// softmax. The two differ by rounding only, which is why both exist.
	QueryScale float32
	// AttentionScale, when not 0, scales the attention scores inside the
	// softmax instead of 1/√HeadDim (Granite's attention_multiplier). At
	// most one of QueryScale and AttentionScale is set.
	AttentionScale float32
	// ResidualScale multiplies the attention and feed-forward outputs
	// before each is added to the residual stream (Granite's
	// residual_multiplier); 0 means 1.
	ResidualScale float32
	// LogitScale divides the logits (Granite's logits_scaling); 0 means 1.
	LogitScale float32
	// LogitSoftcap, when positive, maps each logit z to c·tanh(z/c)
	// (final_logit_softcapping), after LogitScale.
	LogitSoftcap float32
	// LongContext, when positive, is the context length above which the
	// layers' LongRope replaces their Rope (LongRoPE, as in Phi-3 and
	// Phi-4-mini: rope.scaling.original_context_length). ForContext
	// resolves the choice for a model's cache length before a backend
	// sees the description.
	LongContext int
	// RankSoftmax ends a reranker's classification head (cls.output, see
	// Weights.ClsOut) in a softmax over its labels, as llama.cpp does for
	// Qwen3-Reranker (scores are then probabilities: "yes", "no").
	RankSoftmax bool
}

// Layer is what one block does besides the shared skeleton.
type Layer struct {
	// Rope is the block's rotary embedding of q and k; nil is a NoPE layer
	// (no positional encoding). Layers with the same rotation should share
	// one pointer: the runner computes the angles once per distinct
	// pointer.
	Rope *rope.Config
	// LongRope is the rotation that replaces Rope when the model's caches
	// hold more than Arch.LongContext positions (LongRoPE's long frequency
	// factors, Rope holding the short ones), as llama.cpp chooses by the
	// context length. nil: Rope at every length.
	LongRope *rope.Config
	// QKNorm applies an RMSNorm to every query and key head before RoPE
	// (tensors attn_q_norm and attn_k_norm, HeadDim weights each).
	QKNorm bool
	// QKVBias adds biases after the q, k and v projections (tensors
	// attn_q.bias, attn_k.bias, attn_v.bias, which must then be there;
	// a file that has them for a layer without QKVBias is refused rather
	// than run without them).
	QKVBias bool
	// PostNorms normalizes the attention output and the feed-forward
	// output before each is added to the residual stream (tensors
	// post_attention_norm and post_ffw_norm).
	PostNorms bool
	// Window, when positive, limits attention to the Window most recent
	// positions, the query's own included (sliding-window attention): a
	// query at position p sees keys p-Window+1 ... p. The cache of such a
	// layer keeps only a ring of the positions still visible.
	Window int
}

// Activation is the gated feed-forward's nonlinearity.
type Activation int

const (
	// SiLU gives SwiGLU: silu(gate) ⊙ up, silu(x) = x/(1+e^-x).
	SiLU Activation = iota
	// GELUTanh gives GEGLU with the tanh approximation of GELU, as
	// ggml computes it (a float16 table).
	GELUTanh
)

func (a Activation) String() string {
	switch a {
	case SiLU:
		return "silu"
	case GELUTanh:
		return "gelu-tanh"
	}
	return fmt.Sprintf("Activation(%d)", int(a))
}

// Plain returns the plain llama block for cfg: every layer rotated by
// cfg.Rope, SwiGLU, nothing else. Families start from it and change what
// they do differently.
func Plain(name string, cfg Config) Arch {
	r := cfg.Rope
	return Uniform(name, cfg.Layers, Layer{Rope: &r})
}

// Uniform returns an architecture whose n layers are all l.
func Uniform(name string, n int, l Layer) Arch {
	a := Arch{Name: name, Layers: make([]Layer, n)}
	for i := range a.Layers {
		a.Layers[i] = l
	}
	return a
}

// Validate checks a against the model's hyper-parameters: one entry per
// layer, valid rotations no wider than a head, and finite scales.
func (a *Arch) Validate(cfg Config) error {
	if len(a.Layers) != cfg.Layers {
		return fmt.Errorf("llama: %s describes %d layers, the model has %d", a.Name, len(a.Layers), cfg.Layers)
	}
	finite := func(what string, v float32) error {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) || v < 0 {
			return fmt.Errorf("llama: %s: %s %v must be a finite number, 0 or more", a.Name, what, v)
		}
		return nil
	}
	for _, c := range []struct {
		what string
		v    float32
	}{{"embedding scale", a.EmbedScale}, {"query scale", a.QueryScale}, {"attention scale", a.AttentionScale},
		{"residual scale", a.ResidualScale}, {"logit scale", a.LogitScale}, {"logit soft-cap", a.LogitSoftcap}} {
		if err := finite(c.what, c.v); err != nil {
			return err
		}
	}
	if a.QueryScale != 0 && a.AttentionScale != 0 {
		return fmt.Errorf("llama: %s: a query scale (%v) and an attention scale (%v) both scale the scores; set one", a.Name, a.QueryScale, a.AttentionScale)
	}
	if a.Activation != SiLU && a.Activation != GELUTanh {
		return fmt.Errorf("llama: %s: unknown activation %v", a.Name, a.Activation)
	}
	for i, l := range a.Layers {
		if l.Window < 0 {
			return fmt.Errorf("llama: %s: layer %d has a negative attention window %d", a.Name, i, l.Window)
		}
		if l.LongRope != nil && (l.Rope == nil || a.LongContext <= 0) {
			return fmt.Errorf("llama: %s: layer %d has a long-context rotation without a rotation and a context length to switch at", a.Name, i)
		}
		for _, r := range []*rope.Config{l.Rope, l.LongRope} {
			if r == nil {
				continue
			}
			if err := r.Validate(); err != nil {
				return fmt.Errorf("llama: %s: layer %d: %w", a.Name, i, err)
			}
			if r.Dims > cfg.HeadDim {
				return fmt.Errorf("llama: %s: layer %d rotates %d dimensions of a head of %d", a.Name, i, r.Dims, cfg.HeadDim)
			}
			if n := len(r.Factors); n != 0 && n != r.Dims/2 {
				return fmt.Errorf("llama: %s: layer %d has %d RoPE frequency factors for %d rotated pairs", a.Name, i, n, r.Dims/2)
			}
		}
	}
	return nil
}

// ForContext returns the description for caches of n positions: where
// LongContext is set and n exceeds it, each layer's LongRope replaces its
// Rope. The result has no LongRope left, so a backend reads one rotation
// per layer.
func (a Arch) ForContext(n int) Arch {
	layers := make([]Layer, len(a.Layers))
	copy(layers, a.Layers)
	for i := range layers {
		if a.LongContext > 0 && n > a.LongContext && layers[i].LongRope != nil {
			layers[i].Rope = layers[i].LongRope
		}
		layers[i].LongRope = nil
	}
	a.Layers = layers
	a.LongContext = 0
	return a
}

// Windowed reports whether some layer uses sliding-window attention.
func (a *Arch) Windowed() bool {
	for _, l := range a.Layers {
		if l.Window > 0 {
			return true
		}
	}
	return false
}

// Features lists what a uses beyond the plain llama block, by name: "long
// rope" (gone after ForContext, so no backend sees it), "rope neox", "rope
// factors", "rope scaling", "nope", "qk norm", "qkv bias",
// "post norms", "sliding window", "gelu", "embedding scale", "query scale",
// "attention scale", "residual scale", "logit scale", "logit soft-cap". A backend compares it with what it implements
// (Unsupported).
func (a *Arch) Features() []string {
	var fs []string
	add := func(on bool, name string) {
		if !on {
			return
		}
		for _, f := range fs {
			if f == name {
				return
			}
		}
		fs = append(fs, name)
	}
	for _, l := range a.Layers {
		add(l.Rope == nil, "nope")
		add(l.LongRope != nil, "long rope")
		if l.Rope != nil {
			add(l.Rope.Layout == rope.NeoX, "rope neox")
			add(len(l.Rope.Factors) > 0, "rope factors")
			add(l.Rope.Scaling != rope.None, "rope scaling")
		}
		add(l.QKNorm, "qk norm")
		add(l.QKVBias, "qkv bias")
		add(l.PostNorms, "post norms")
		add(l.Window > 0, "sliding window")
	}
	add(a.Activation == GELUTanh, "gelu")
	add(a.EmbedScale != 0 && a.EmbedScale != 1, "embedding scale")
	add(a.QueryScale != 0, "query scale")
	add(a.AttentionScale != 0, "attention scale")
	add(a.ResidualScale != 0 && a.ResidualScale != 1, "residual scale")
	add(a.LogitScale != 0 && a.LogitScale != 1, "logit scale")
	add(a.LogitSoftcap > 0, "logit soft-cap")
	return fs
}

// Unsupported returns an error naming the features of a that are not in
// have (a backend's list of what it implements, in Features' names), or
// nil when it has them all.
func (a *Arch) Unsupported(backend string, have ...string) error {
	var missing []string
	for _, f := range a.Features() {
		ok := false
		for _, h := range have {
			ok = ok || h == f
		}
		if !ok {
			missing = append(missing, f)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("%s: architecture %s uses %q, which this backend does not implement", backend, a.Name, missing)
}
