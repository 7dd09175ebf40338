package llama

import (
	"fmt"

	"github.com/smolgo/smolgo/tensor"
)

// ShortConv is LFM2's gated short convolution, a recurrent token mixer
// (llama.cpp's lfm2 graph):
//
//	b, c, x = split(h·Win, 3)            (shortconv.in_proj: 3·Embd rows)
//	u = b ⊙ x
//	y_t = Σ_k w_k ⊙ u_{t-Kernel+1+k}     (a causal depthwise convolution, shortconv.conv)
//	a = (c ⊙ y)·Wout                     (shortconv.out_proj)
//
// Each sequence keeps the last Kernel-1 values of u per channel: its state,
// Embd·(Kernel-1) floats whatever the context length.
type ShortConv struct {
	// Kernel is the convolution's length (shortconv.l_cache; LFM2: 3).
	Kernel int
}

// Kind is "shortconv".
func (*ShortConv) Kind() string { return "shortconv" }

func (sc *ShortConv) clone() kind { c := *sc; return &c }

func (sc *ShortConv) validate(_ *Arch, cfg Config) error {
	if sc.Kernel < 2 || sc.Kernel > 64 {
		return fmt.Errorf("short convolution of length %d: want 2 to 64", sc.Kernel)
	}
	return nil
}

func (sc *ShortConv) features(func(bool, string)) {}

func (sc *ShortConv) stateSize(cfg Config) int { return (sc.Kernel - 1) * cfg.Embd }

// ShortConvWeights are a short-convolution layer's tensors.
type ShortConvWeights struct {
	In   *tensor.Matrix // shortconv.in_proj [3·Embd rows × Embd]: b, c, x
	Conv []float32      // shortconv.conv [Embd × Kernel]: per channel, its Kernel weights, oldest input first
	Out  *tensor.Matrix // shortconv.out_proj [Embd × Embd]
}

func (w *ShortConvWeights) matrices() []**tensor.Matrix { return []**tensor.Matrix{&w.In, &w.Out} }

func (sc *ShortConv) load(ld *loader, cfg Config, i int, lw *LayerWeights) {
	n := func(s string) string { return fmt.Sprintf("blk.%d.%s", i, s) }
	E := cfg.Embd
	lw.ShortConv = &ShortConvWeights{
		In:   ld.matrix(n("shortconv.in_proj.weight"), E, 3*E),
		Conv: ld.vectorShaped(n("shortconv.conv.weight"), sc.Kernel, E),
		Out:  ld.matrix(n("shortconv.out_proj.weight"), E, E),
	}
	ld.unused(ld.arch+" (a short-convolution layer)", n("attn_q.weight"), n("attn_qkv.weight"))
}

// shortConvStep is a short-convolution layer on the CPU.
type shortConvStep struct {
	spec *ShortConv
	w    *ShortConvWeights
}

func (sc *ShortConv) newStep(m *CPU, l int, lw *LayerWeights) (sublayer, error) {
	if lw.ShortConv == nil {
		return nil, fmt.Errorf("llama: layer %d: a short convolution without its weights", l)
	}
	return &shortConvStep{spec: sc, w: lw.ShortConv}, nil
}

// forward runs the short convolution of layer l over the pass's rows. The
// state of each piece's cache (Kernel-1 rows of Embd values, oldest first)
// is the convolution's window before the piece's first token; it moves on
// by the piece's tokens. Channels are independent, so a piece of more than
// a few tokens shares them out over the threads.
func (s *shortConvStep) forward(m *CPU, p *pass, l int, in, out []float32) error {
	b := p.b
	E := m.Config.Embd
	bcx := grow(b.conv, p.n*3*E)
	b.conv = bcx
	for _, sp := range b.spans {
		if err := s.w.In.Mul(m.pool, &b.mm, bcx[sp.lo*3*E:sp.hi*3*E], in[sp.lo*E:sp.hi*E], sp.hi-sp.lo); err != nil {
			return fmt.Errorf("llama: layer %d: %w", l, err)
		}
	}
	y := b.xb2[:p.n*E]
	job := &b.shortConv
	for i := range p.ps {
		pc := &p.ps[i]
		job.keeps = job.keeps[:0]
		for t := pc.keepFrom; t < pc.keepTo; t++ {
			job.keeps = append(job.keeps, pc.c.keepState(l, pc.pos+t+1))
		}
		*job = shortConvJob{s: s, pc: pc, bcx: bcx, y: y, state: pc.c.state[l], E: E, keeps: job.keeps}
		if len(pc.tokens) < shortConvSplit {
			job.Do(0, E)
		} else {
			m.pool.Run(E, 64, job)
		}
	}
	for _, sp := range b.spans {
		if err := s.w.Out.Mul(m.pool, &b.mm, out[sp.lo*E:sp.hi*E], y[sp.lo*E:sp.hi*E], sp.hi-sp.lo); err != nil {
			return fmt.Errorf("llama: layer %d: %w", l, err)
		}
	}
	return nil
}

// shortConvSplit is the fewest tokens of a piece whose convolution is
// shared out over the threads; a decode step's is not worth the handoff.
const shortConvSplit = 8

// shortConvJob is the convolution of one piece, shared out by channels:
// each channel runs the piece's tokens in order through its window (the
// state's column of that channel), and after each of the rows
// keepFrom…keepTo its column goes to the kept state of that row.
type shortConvJob struct {
	s      *shortConvStep
	pc     *piece
	bcx, y []float32 // in_proj's b, c, x rows; the output rows
	state  []float32 // the sequence's window: (Kernel-1) rows of E
	E      int
	keeps  [][]float32 // the piece's kept states (the rows keepFrom…keepTo)
}

func (j *shortConvJob) Do(lo, hi int) {
	E, K, pc, state := j.E, j.s.spec.Kernel, j.pc, j.state
	for t := range pc.tokens {
		r := pc.row + t
		row := j.bcx[r*3*E : (r+1)*3*E]
		bb, cc, xx := row[:E], row[E:2*E], row[2*E:]
		yr := j.y[r*E : (r+1)*E]
		for ch := lo; ch < hi; ch++ {
			u := bb[ch] * xx[ch]
			w := j.s.w.Conv[ch*K : (ch+1)*K]
			// ggml_ssm_conv: the window oldest first, summed in float32
			// in that order.
			var sum float32
			for k := range K - 1 {
				sum += float32(state[k*E+ch] * w[k])
			}
			sum += float32(u * w[K-1])
			yr[ch] = cc[ch] * sum
			// Slide the window by one: u becomes its newest row.
			for k := range K - 2 {
				state[k*E+ch] = state[(k+1)*E+ch]
			}
			state[(K-2)*E+ch] = u
		}
		if k := t - pc.keepFrom; k >= 0 && t < pc.keepTo {
			for row := range K - 1 {
				copy(j.keeps[k][row*E+lo:row*E+hi], state[row*E+lo:row*E+hi])
			}
		}
	}
}
