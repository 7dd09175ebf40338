package llama

import (
	"fmt"

	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/tensor"
)

// GLU is the dense gated feed-forward network of the llama block, of width
// Config.FFN:
//
//	f = (act(h·Wgate) ⊙ h·Wup)·Wdown
type GLU struct {
	// Activation is the gate's nonlinearity: SiLU (SwiGLU) or GELUTanh
	// (GEGLU).
	Activation Activation
}

// Activation is a gated feed-forward's nonlinearity.
type Activation int

const (
	// SiLU gives SwiGLU: silu(gate) ⊙ up, silu(x) = x/(1+e^-x).
	SiLU Activation = iota
	// GELUTanh gives GEGLU with the tanh approximation of GELU, as
	// ggml computes it (a float16 table).
	GELUTanh
	// SwiGLUOAI is gpt-oss's clamped SwiGLU (mixtures of experts only):
	// x = min(gate, 7), y = clamp(up, -7, 7), x·σ(1.702·x)·(y+1).
	SwiGLUOAI
)

func (a Activation) String() string {
	switch a {
	case SiLU:
		return "silu"
	case GELUTanh:
		return "gelu-tanh"
	case SwiGLUOAI:
		return "swiglu-oai"
	}
	return fmt.Sprintf("Activation(%d)", int(a))
}

// Kind is "glu".
func (*GLU) Kind() string { return "glu" }

func (g *GLU) clone() kind { c := *g; return &c }

func (g *GLU) validate(_ *Arch, cfg Config) error {
	if cfg.FFN <= 0 {
		return fmt.Errorf("a dense feed-forward needs feed_forward_length, which the file lacks")
	}
	if g.Activation != SiLU && g.Activation != GELUTanh {
		return fmt.Errorf("unknown activation %v", g.Activation)
	}
	return nil
}

func (g *GLU) features(add func(bool, string)) { add(g.Activation == GELUTanh, "gelu") }

// GLUWeights are a dense gated feed-forward's tensors.
type GLUWeights struct {
	Gate, Up, Down *tensor.Matrix
}

func (w *GLUWeights) matrices() []**tensor.Matrix { return []**tensor.Matrix{&w.Gate, &w.Up, &w.Down} }

// load reads gate and up as separate tensors or as one fused tensor (Phi-3's
// ffn_up: the gate rows, then up), read as row ranges without a copy.
func (g *GLU) load(ld *loader, cfg Config, i int, lw *LayerWeights) {
	n := func(s string) string { return fmt.Sprintf("blk.%d.%s", i, s) }
	w := &GLUWeights{}
	if _, gated := ld.f.Tensor(n("ffn_gate.weight")); gated || !fusedUp(ld.f, n("ffn_up.weight"), cfg) {
		w.Gate = ld.matrix(n("ffn_gate.weight"), cfg.Embd, cfg.FFN)
		w.Up = ld.matrix(n("ffn_up.weight"), cfg.Embd, cfg.FFN)
	} else if up := ld.split(n("ffn_up.weight"), cfg.Embd, cfg.FFN, cfg.FFN); up != nil {
		w.Gate, w.Up = up[0], up[1]
	}
	w.Down = ld.matrix(n("ffn_down.weight"), cfg.FFN, cfg.Embd)
	// Biases the block has no place for (llama.cpp's llama and granite
	// graphs take them where a file has them).
	ld.unused(ld.arch, n("ffn_gate.bias"), n("ffn_up.bias"), n("ffn_down.bias"))
	lw.GLU = w
}

// fusedUp reports whether the tensor named up holds the gate's rows and
// then up's (2·FFN rows), as Phi-3 stores them.
func fusedUp(f *gguf.File, up string, cfg Config) bool {
	t, ok := f.Tensor(up)
	return ok && len(t.Dims) == 2 && t.Dims[1] == 2*uint64(cfg.FFN)
}

// gluStep is a dense gated feed-forward on the CPU.
type gluStep struct {
	w   *GLUWeights
	glu func(p *tensor.Pool, s *tensor.Scratch, dst, gateBuf, upBuf []float32, gate, up *tensor.Matrix, x []float32, n int) error
}

func (g *GLU) newStep(m *CPU, l int, lw *LayerWeights) (sublayer, error) {
	if lw.GLU == nil {
		return nil, fmt.Errorf("llama: layer %d: a feed-forward without its weights", l)
	}
	s := &gluStep{w: lw.GLU, glu: tensor.MulSwiGLU}
	if g.Activation == GELUTanh {
		s.glu = tensor.MulGEGLU
	}
	return s, nil
}

func (s *gluStep) forward(m *CPU, p *pass, l int, in, out []float32) error {
	b := p.b
	E, F := m.Config.Embd, m.Config.FFN
	for _, sp := range b.spans {
		lo, hi := sp.lo, sp.hi
		gate, up := b.gate[lo*F:hi*F], b.up[lo*F:hi*F]
		if err := s.glu(m.pool, &b.mm, gate, gate, up, s.w.Gate, s.w.Up, in[lo*E:hi*E], hi-lo); err != nil {
			return fmt.Errorf("llama: layer %d: %w", l, err)
		}
		if err := s.w.Down.Mul(m.pool, &b.mm, out[lo*E:hi*E], gate, hi-lo); err != nil {
			return fmt.Errorf("llama: layer %d: %w", l, err)
		}
	}
	return nil
}
