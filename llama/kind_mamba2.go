package llama

import (
	"fmt"
	"math"
	"strings"

	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/tensor"
)

// Mamba2 is the Mamba-2 selective state-space mixer, a recurrent token
// mixer, as llama.cpp's build_mamba2_layer (src/models/mamba-base.cpp) and
// ggml's CPU ops ssm_conv and ssm_scan compute it. With Inner = Heads ·
// HeadDim channels of x, Groups groups of B and C of State values each, and
// head h reading group g = h / (Heads/Groups):
//
//	z, xBC, dt = split(h·Win)                  ssm_in: Inner, Channels = Inner + 2·Groups·State, Heads rows
//	xBC = silu(conv(xBC) + conv_bias)          ssm_conv1d: a causal depthwise convolution of Kernel taps
//	x, B, C = split(xBC)                       Inner, Groups·State, Groups·State
//	dt_h = softplus(dt_h + dt_bias_h)          ssm_dt.bias
//	S_h = S_h·exp(dt_h·A_h) + (x_h·dt_h) ⊗ B_g  the head's HeadDim × State matrix (ssm_a: A = -exp(A_log))
//	y_h = S_h·C_g + D_h·x_h                    ssm_d
//	y = RMSNorm(y ⊙ silu(z)) per group          ssm_norm: Inner weights, Groups groups of Inner/Groups
//	a = y·Wout                                 ssm_out
//
// Each sequence keeps, per layer, the last Kernel-1 inputs of the
// convolution and every head's S: StateSize floats whatever the context
// length (Granite-4.0-H-Micro: 3·4,352 + 4,096·128 = 537,344 floats, 2.1 MB
// per Mamba layer).
//
// Numerics follow llama.cpp's AVX2 CPU build, which ../shared/golden-next's
// logits come from (tensor.SSMConv and tensor.SSMScan say how): every
// element-wise step is its own float32 operation (the bias add, y + x·D),
// silu uses ggml's vectorized exp, softplus is log(1 + exp(x)) in float32
// (x itself above 20), the decay exp(dt·A) in float32.
type Mamba2 struct {
	// Kernel is the convolution's length (ssm.conv_kernel, d_conv; 4 in
	// every published Mamba-2).
	Kernel int
	// Inner is the width of x and z (ssm.inner_size, d_inner), Heads ·
	// HeadDim.
	Inner int
	// State is the state size per channel (ssm.state_size, d_state), the
	// length of B and C.
	State int
	// Groups is the number of B and C groups (ssm.group_count), shared by
	// Heads/Groups heads each.
	Groups int
	// Heads is the number of heads (ssm.time_step_rank, which Mamba-2
	// files use for it), each with its own time step, decay and skip.
	Heads int
}

// Kind is "mamba2".
func (*Mamba2) Kind() string { return "mamba2" }

// HeadDim is the channels of x per head, Inner/Heads.
func (mb *Mamba2) HeadDim() int { return mb.Inner / mb.Heads }

// Channels is the convolution's width: x, B and C (Inner + 2·Groups·State).
func (mb *Mamba2) Channels() int { return mb.Inner + 2*mb.Groups*mb.State }

// InProj is the rows of ssm_in: z, xBC and dt.
func (mb *Mamba2) InProj() int { return 2*mb.Inner + 2*mb.Groups*mb.State + mb.Heads }

// StateSize is the float32 values one sequence keeps for such a layer:
// the convolution's window, Kernel-1 inputs per channel (channel after
// channel, oldest first), then each head's state, Heads × HeadDim × State
// (ggml's layouts: state index k of channel i of head h at
// (h·HeadDim + i)·State + k).
func (mb *Mamba2) StateSize() int { return (mb.Kernel-1)*mb.Channels() + mb.Inner*mb.State }

func (mb *Mamba2) stateSize(Config) int { return mb.StateSize() }

func (mb *Mamba2) convSize() int { return (mb.Kernel - 1) * mb.Channels() }

func (mb *Mamba2) clone() kind { c := *mb; return &c }

// maxMamba2State bounds Inner·State, one sequence's state matrices of a
// layer (2^28 floats: 1 GiB), so that a hostile header cannot ask for more
// before its tensors are checked.
const maxMamba2State = 1 << 28

func (mb *Mamba2) validate(_ *Arch, cfg Config) error {
	for _, c := range []struct {
		what   string
		v, max int
	}{{"convolution length", mb.Kernel, 64}, {"inner size", mb.Inner, 1 << 24}, {"state size", mb.State, 1 << 16},
		{"group count", mb.Groups, 1 << 16}, {"head count", mb.Heads, 1 << 16}} {
		if c.v < 1 || c.v > c.max {
			return fmt.Errorf("Mamba-2 %s %d: want 1 to %d", c.what, c.v, c.max)
		}
	}
	switch {
	case mb.Kernel < 2:
		return fmt.Errorf("Mamba-2 convolution length %d: want 2 or more", mb.Kernel)
	case mb.Inner%mb.Heads != 0:
		return fmt.Errorf("Mamba-2 inner size %d is not a multiple of the head count %d", mb.Inner, mb.Heads)
	case mb.Heads%mb.Groups != 0:
		return fmt.Errorf("Mamba-2 head count %d is not a multiple of the group count %d", mb.Heads, mb.Groups)
	case mb.Inner*mb.State > maxMamba2State:
		return fmt.Errorf("Mamba-2 inner size %d × state size %d is over %d values per sequence", mb.Inner, mb.State, maxMamba2State)
	}
	return nil
}

func (mb *Mamba2) features(func(bool, string)) {}

// Mamba2FromGGUF reads a Mamba-2 mixer's hyper-parameters from a file's
// `<arch>.ssm.*` keys: conv_kernel, inner_size, state_size, group_count
// and time_step_rank (the head count), all required, as llama.cpp's
// Mamba-2 loaders read them. An error names the key.
func Mamba2FromGGUF(f *gguf.File, cfg Config) (*Mamba2, error) {
	mb := &Mamba2{}
	for _, k := range []struct {
		key string
		dst *int
	}{{"ssm.conv_kernel", &mb.Kernel}, {"ssm.inner_size", &mb.Inner}, {"ssm.state_size", &mb.State},
		{"ssm.group_count", &mb.Groups}, {"ssm.time_step_rank", &mb.Heads}} {
		key := cfg.Arch + "." + k.key
		v, err := f.Uint32(key)
		if err != nil {
			return nil, fmt.Errorf("llama: %w", err)
		}
		if v == 0 || v > 1<<24 {
			return nil, fmt.Errorf("llama: %s = %d is out of range", key, v)
		}
		*k.dst = int(v)
	}
	if err := mb.validate(nil, cfg); err != nil {
		return nil, fmt.Errorf("llama: %s.ssm.*: %w", cfg.Arch, err)
	}
	return mb, nil
}

// Mamba2Weights are a Mamba-2 layer's tensors.
type Mamba2Weights struct {
	In       *tensor.Matrix // ssm_in [InProj rows × Embd]: z, xBC, dt
	Conv     []float32      // ssm_conv1d.weight [Channels × Kernel]: per channel its taps, oldest input first
	ConvBias []float32      // ssm_conv1d.bias [Channels]
	DtBias   []float32      // ssm_dt.bias [Heads]
	A        []float32      // ssm_a [Heads]: each head's decay rate, negative (-exp(A_log))
	D        []float32      // ssm_d [Heads]: each head's skip
	Norm     []float32      // ssm_norm.weight [Inner]: the grouped RMSNorm's weights, group after group
	Out      *tensor.Matrix // ssm_out [Embd rows × Inner]
}

func (w *Mamba2Weights) matrices() []**tensor.Matrix { return []**tensor.Matrix{&w.In, &w.Out} }

func (mb *Mamba2) load(ld *loader, cfg Config, i int, lw *LayerWeights) {
	n := func(s string) string { return fmt.Sprintf("blk.%d.%s", i, s) }
	E, H, ch := cfg.Embd, mb.Heads, mb.Channels()
	lw.Mamba2 = &Mamba2Weights{
		In:       ld.matrix(n("ssm_in.weight"), E, mb.InProj()),
		Conv:     ld.vectorShaped(n("ssm_conv1d.weight"), mb.Kernel, ch),
		ConvBias: ld.vector(n("ssm_conv1d.bias"), ch),
		DtBias:   ld.vector(n("ssm_dt.bias"), H),
		// ggml keeps [1, Heads] and [Inner/Groups, Groups]; a trailing
		// dimension of 1 may be left out of the file.
		A:    ld.floatsShaped(n("ssm_a"), H, []int{1, H}, []int{H}),
		D:    ld.floatsShaped(n("ssm_d"), H, []int{1, H}, []int{H}),
		Norm: ld.floatsShaped(n("ssm_norm.weight"), mb.Inner, []int{mb.Inner / mb.Groups, mb.Groups}, []int{mb.Inner}),
		Out:  ld.matrix(n("ssm_out.weight"), mb.Inner, E),
	}
	// Attention's tensors in a Mamba layer, and Mamba-1's, would be
	// another model than the one described.
	ld.unused(ld.arch+" (a Mamba-2 layer)", n("attn_q.weight"), n("attn_qkv.weight"), n("attn_output.weight"),
		n("ssm_x.weight"), n("ssm_dt.weight"))
}

// floatsShaped reads an f32 tensor of n elements stored in one of the
// given shapes.
func (l *loader) floatsShaped(name string, n int, shapes ...[]int) []float32 {
	if l.err != nil {
		return nil
	}
	t, ok := l.f.Tensor(name)
	if !ok {
		l.err = fmt.Errorf("tensor %s is missing", name)
		return nil
	}
	for _, s := range shapes {
		if len(s) != len(t.Dims) {
			continue
		}
		same := true
		for i := range s {
			same = same && t.Dims[i] == uint64(s[i])
		}
		if same {
			return l.floats(t, n)
		}
	}
	var want []string
	for _, s := range shapes {
		want = append(want, fmt.Sprint(s))
	}
	l.err = fmt.Errorf("tensor %s has shape %v, the config needs %s", name, t.Dims, strings.Join(want, " or "))
	return nil
}

// mamba2Step is a Mamba-2 layer on the CPU.
type mamba2Step struct {
	spec *Mamba2
	w    *Mamba2Weights
	eps  float32
}

func (mb *Mamba2) newStep(m *CPU, l int, lw *LayerWeights) (sublayer, error) {
	if lw.Mamba2 == nil {
		return nil, fmt.Errorf("llama: layer %d: a Mamba-2 mixer without its weights", l)
	}
	return &mamba2Step{spec: mb, w: lw.Mamba2, eps: m.Config.RMSEps}, nil
}

// mamba2Scratch holds the Mamba-2 layers' work buffers, grown to the
// largest pass.
type mamba2Scratch struct {
	proj   []float32   // ssm_in's output: z, xBC, dt     [rows × InProj]
	xbc    []float32   // x, B, C after the convolution  [rows × Channels]
	y      []float32   // the scan's output, gated        [rows × Inner]
	dt, dA []float32   // one piece's time steps, decays  [tokens × Heads]
	keeps  [][]float32 // one piece's kept states (the rows keepFrom…keepTo)
	conv   mamba2Conv
	scan   mamba2Scan
}

// forward runs the Mamba-2 layer l over the pass's rows: ssm_in over the
// product spans, then per piece the convolution (channels shared out over
// the threads) and the scan (heads shared out) on that sequence's state,
// the grouped norm, and ssm_out over the spans.
func (s *mamba2Step) forward(m *CPU, p *pass, l int, in, out []float32) error {
	b := p.b
	sp := s.spec
	E, P, I := m.Config.Embd, sp.InProj(), sp.Inner
	ms := &b.mamba2
	ms.proj = grow(ms.proj, p.n*P)
	ms.xbc = grow(ms.xbc, p.n*sp.Channels())
	ms.y = grow(ms.y, p.n*I)
	for _, span := range b.spans {
		if err := s.w.In.Mul(m.pool, &b.mm, ms.proj[span.lo*P:span.hi*P], in[span.lo*E:span.hi*E], span.hi-span.lo); err != nil {
			return fmt.Errorf("llama: layer %d: %w", l, err)
		}
	}
	for i := range p.ps {
		pc := &p.ps[i]
		state := pc.c.state[l]
		ms.keeps = ms.keeps[:0]
		for t := pc.keepFrom; t < pc.keepTo; t++ {
			ms.keeps = append(ms.keeps, pc.c.keepState(l, pc.pos+t+1))
		}
		nt := len(pc.tokens)
		ms.dt, ms.dA = grow(ms.dt, nt*sp.Heads), grow(ms.dA, nt*sp.Heads)
		ms.conv = mamba2Conv{s: s, pc: pc, ms: ms, window: state[:sp.convSize()]}
		m.pool.Run(sp.Channels(), 64, &ms.conv)
		ms.scan = mamba2Scan{s: s, pc: pc, ms: ms, ssm: state[sp.convSize():]}
		m.pool.Run(sp.Heads, 1, &ms.scan)
	}
	gs := I / sp.Groups
	for r := range p.n {
		y := ms.y[r*I : (r+1)*I]
		for g := range sp.Groups {
			tensor.RMSNorm(y[g*gs:(g+1)*gs], y[g*gs:(g+1)*gs], s.w.Norm[g*gs:(g+1)*gs], s.eps)
		}
	}
	for _, span := range b.spans {
		if err := s.w.Out.Mul(m.pool, &b.mm, out[span.lo*E:span.hi*E], ms.y[span.lo*I:span.hi*I], span.hi-span.lo); err != nil {
			return fmt.Errorf("llama: layer %d: %w", l, err)
		}
	}
	return nil
}

// mamba2Conv is the convolution of one piece, shared out by channels:
// each channel runs the piece's tokens in order through its window, adds
// its bias and takes silu, and after each of the rows keepFrom…keepTo its
// window goes to the kept state of that row.
type mamba2Conv struct {
	s      *mamba2Step
	pc     *piece
	ms     *mamba2Scratch
	window []float32 // the sequence's convolution state
}

func (j *mamba2Conv) Do(lo, hi int) {
	sp, w, pc, ms := j.s.spec, j.s.w, j.pc, j.ms
	P, I, Ch, K := sp.InProj(), sp.Inner, sp.Channels(), sp.Kernel
	win := j.window[lo*(K-1) : hi*(K-1)]
	for t := range pc.tokens {
		r := pc.row + t
		xbc := ms.xbc[r*Ch+lo : r*Ch+hi]
		tensor.SSMConv(xbc, win, ms.proj[r*P+I+lo:r*P+I+hi], w.Conv[lo*K:hi*K])
		for c, b := range w.ConvBias[lo:hi] {
			xbc[c] += b
		}
		tensor.SiLU(xbc, xbc)
		if k := t - pc.keepFrom; k >= 0 && t < pc.keepTo {
			copy(ms.keeps[k][lo*(K-1):hi*(K-1)], win)
		}
	}
}

// mamba2Scan is the scan of one piece, shared out by heads: each head
// takes its time step and decay for every token, then runs the piece's
// tokens in order on its own state (HeadDim × State floats, which stay in
// the core's cache from token to token), adds the D skip and gates by
// silu(z); after each of the rows keepFrom…keepTo its state goes to the
// kept state of that row.
type mamba2Scan struct {
	s   *mamba2Step
	pc  *piece
	ms  *mamba2Scratch
	ssm []float32 // the sequence's head states
}

func (j *mamba2Scan) Do(lo, hi int) {
	sp, w, pc, ms := j.s.spec, j.s.w, j.pc, j.ms
	P, I, H, N, Ch, hd := sp.InProj(), sp.Inner, sp.Heads, sp.State, sp.Channels(), sp.HeadDim()
	conv := sp.convSize()
	perGroup := H / sp.Groups
	for h := lo; h < hi; h++ {
		for t := range pc.tokens {
			v := softplus(ms.proj[(pc.row+t)*P+I+Ch+h] + w.DtBias[h])
			ms.dt[t*H+h] = v
			ms.dA[t*H+h] = expf32(v * w.A[h])
		}
	}
	for h := lo; h < hi; h++ {
		g := h / perGroup
		S := j.ssm[h*hd*N : (h+1)*hd*N]
		for t := range pc.tokens {
			r := pc.row + t
			xbc := ms.xbc[r*Ch : (r+1)*Ch]
			x := xbc[h*hd : (h+1)*hd]
			B := xbc[I+g*N : I+(g+1)*N]
			C := xbc[I+(sp.Groups+g)*N : I+(sp.Groups+g+1)*N]
			y := ms.y[r*I+h*hd : r*I+(h+1)*hd]
			tensor.SSMScan(y, S, x, B, C, ms.dA[t*H+h], ms.dt[t*H+h])
			d := w.D[h]
			for i, xi := range x {
				y[i] += float32(xi * d)
			}
			tensor.SwiGLU(y, ms.proj[r*P+h*hd:r*P+(h+1)*hd], y)
			if k := t - pc.keepFrom; k >= 0 && t < pc.keepTo {
				copy(ms.keeps[k][conv+h*hd*N:conv+(h+1)*hd*N], S)
			}
		}
	}
}

// expf32 is e^x rounded to float32 (libm's expf, which ggml's scalar code
// calls, is within an ulp of it).
func expf32(x float32) float32 { return float32(math.Exp(float64(x))) }
