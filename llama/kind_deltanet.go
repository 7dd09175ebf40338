package llama

import (
	"fmt"
	"math"

	"github.com/smolgo/smolgo/gguf"
	"github.com/smolgo/smolgo/tensor"
)

// GatedDeltaNet is the Gated DeltaNet token mixer of Qwen3.5 (and
// Qwen3-Next), a linear-attention layer whose sequences keep, per value
// head, a HeadSize×HeadSize state matrix instead of keys and values, as
// llama.cpp's qwen35 graph computes it with its fused gated_delta_net op:
//
//	q, k, v = split(causal_conv(h·Wqkv), Kernel taps) then SiLU   (attn_qkv, ssm_conv1d)
//	q, k = L2-normalized per head                                 (KeyHeads heads of HeadSize)
//	β = sigmoid(h·Wβ), g = softplus(h·Wα + dt_bias)·A             (ssm_beta, ssm_alpha, ssm_dt.bias, ssm_a; one per value head)
//	per value head h, with key head h mod KeyHeads, token by token:
//	    S = e^g·S;  S = S + k·(β·(v − Sᵀk))ᵀ;  o = Sᵀq / √HeadSize
//	a = (RMSNorm(o per head, ssm_norm) ⊙ SiLU(h·Wz))·Wout          (attn_gate, ssm_out)
//
// The value heads take their key head by h mod KeyHeads (ggml's
// broadcast), not h / (ValueHeads/KeyHeads).
//
// Prefill runs the same token-by-token recurrence as a decode step (what
// llama.cpp's CPU backend runs: its fused op, not the chunked
// formulation), so a prompt gives the same numbers in one pass or many.
type GatedDeltaNet struct {
	// Kernel is the causal convolution's length (ssm.conv_kernel; 4).
	Kernel int
	// HeadSize is the size of every key and value head (ssm.state_size;
	// 128 in Qwen3.5).
	HeadSize int
	// KeyHeads is the number of query and key heads (ssm.group_count).
	KeyHeads int
	// ValueHeads is the number of value heads, each with its own state
	// matrix (ssm.time_step_rank); a multiple of KeyHeads.
	ValueHeads int
}

// Kind is "gated deltanet".
func (*GatedDeltaNet) Kind() string { return "gated deltanet" }

func (g *GatedDeltaNet) clone() kind { c := *g; return &c }

// keyDim, valueDim and convDim are the widths of q and k, of v, and of the
// convolved q, k, v together.
func (g *GatedDeltaNet) keyDim() int   { return g.HeadSize * g.KeyHeads }
func (g *GatedDeltaNet) valueDim() int { return g.HeadSize * g.ValueHeads }
func (g *GatedDeltaNet) convDim() int  { return 2*g.keyDim() + g.valueDim() }

// maxDeltaState bounds one layer's state matrices (float32 values per
// sequence): Qwen3.5's largest has 32 heads of 128×128, half a million.
const maxDeltaState = 1 << 26

func (g *GatedDeltaNet) validate(_ *Arch, cfg Config) error {
	switch {
	case g.Kernel < 2 || g.Kernel > 64:
		return fmt.Errorf("gated deltanet convolution of length %d: want 2 to 64", g.Kernel)
	case g.HeadSize < 1 || g.HeadSize > 1024:
		return fmt.Errorf("gated deltanet head size %d: want 1 to 1024", g.HeadSize)
	case g.KeyHeads < 1 || g.ValueHeads < 1 || g.ValueHeads > 1<<16:
		return fmt.Errorf("gated deltanet with %d key heads and %d value heads: want at least one of each, at most 65536 value heads", g.KeyHeads, g.ValueHeads)
	case g.ValueHeads%g.KeyHeads != 0:
		return fmt.Errorf("gated deltanet: %d value heads are not a multiple of %d key heads", g.ValueHeads, g.KeyHeads)
	case g.ValueHeads*g.HeadSize*g.HeadSize > maxDeltaState:
		return fmt.Errorf("gated deltanet: %d state matrices of %d×%d are more than %d values", g.ValueHeads, g.HeadSize, g.HeadSize, maxDeltaState)
	}
	return nil
}

func (g *GatedDeltaNet) features(func(bool, string)) {}

// stateSize is one sequence's state of the layer: the convolution's window
// (Kernel−1 rows of convDim inputs, oldest first) and then the value heads'
// state matrices (HeadSize×HeadSize each, by columns: see tensor.DeltaRule).
func (g *GatedDeltaNet) stateSize(Config) int {
	return (g.Kernel-1)*g.convDim() + g.ValueHeads*g.HeadSize*g.HeadSize
}

// GatedDeltaNetFromGGUF reads a Gated DeltaNet layer's hyper-parameters from
// a file's `<arch>.ssm.*` keys: conv_kernel, state_size, group_count (key
// heads), time_step_rank (value heads) and inner_size, which must be
// state_size × time_step_rank. An error names the key.
func GatedDeltaNetFromGGUF(f *gguf.File, cfg Config) (*GatedDeltaNet, error) {
	key := func(k string) string { return cfg.Arch + ".ssm." + k }
	get := func(k string) (int, error) {
		v, err := f.Uint32(key(k))
		if err != nil {
			return 0, fmt.Errorf("llama: %w", err)
		}
		if v == 0 || v > 1<<24 {
			return 0, fmt.Errorf("llama: %s = %d is out of range", key(k), v)
		}
		return int(v), nil
	}
	g := &GatedDeltaNet{}
	var inner int
	for _, k := range []struct {
		name string
		dst  *int
	}{{"conv_kernel", &g.Kernel}, {"state_size", &g.HeadSize}, {"group_count", &g.KeyHeads},
		{"time_step_rank", &g.ValueHeads}, {"inner_size", &inner}} {
		v, err := get(k.name)
		if err != nil {
			return nil, err
		}
		*k.dst = v
	}
	if inner != g.HeadSize*g.ValueHeads {
		return nil, fmt.Errorf("llama: %s = %d, but %s × %s = %d × %d: the value heads must be as wide as the state", key("inner_size"), inner,
			key("state_size"), key("time_step_rank"), g.HeadSize, g.ValueHeads)
	}
	if err := g.validate(nil, cfg); err != nil {
		return nil, fmt.Errorf("llama: %s: %w", cfg.Arch, err)
	}
	return g, nil
}

// GatedDeltaNetWeights are a Gated DeltaNet layer's tensors.
type GatedDeltaNetWeights struct {
	QKV    *tensor.Matrix // attn_qkv [convDim rows × Embd]: q, k, v before the convolution
	Gate   *tensor.Matrix // attn_gate [valueDim × Embd]: z, the output gate
	Beta   *tensor.Matrix // ssm_beta [ValueHeads × Embd]
	Alpha  *tensor.Matrix // ssm_alpha [ValueHeads × Embd]
	Conv   []float32      // ssm_conv1d [convDim × Kernel]: per channel its taps, oldest input first
	DTBias []float32      // ssm_dt.bias [ValueHeads]
	A      []float32      // ssm_a [ValueHeads]: −e^A_log, as the converter writes it
	Norm   []float32      // ssm_norm [HeadSize]
	Out    *tensor.Matrix // ssm_out [Embd × valueDim]
}

func (w *GatedDeltaNetWeights) matrices() []**tensor.Matrix {
	return []**tensor.Matrix{&w.QKV, &w.Gate, &w.Beta, &w.Alpha, &w.Out}
}

func (g *GatedDeltaNet) load(ld *loader, cfg Config, i int, lw *LayerWeights) {
	n := func(s string) string { return fmt.Sprintf("blk.%d.%s", i, s) }
	E, H := cfg.Embd, g.ValueHeads
	lw.GatedDeltaNet = &GatedDeltaNetWeights{
		QKV:    ld.matrix(n("attn_qkv.weight"), E, g.convDim()),
		Gate:   ld.matrix(n("attn_gate.weight"), E, g.valueDim()),
		Beta:   ld.matrix(n("ssm_beta.weight"), E, H),
		Alpha:  ld.matrix(n("ssm_alpha.weight"), E, H),
		Conv:   ld.vectorShaped(n("ssm_conv1d.weight"), g.Kernel, g.convDim()),
		DTBias: ld.vector(n("ssm_dt.bias"), H),
		A:      ld.vector(n("ssm_a"), H),
		Norm:   ld.vector(n("ssm_norm.weight"), g.HeadSize),
		Out:    ld.matrix(n("ssm_out.weight"), g.valueDim(), E),
	}
	ld.unused(ld.arch+" (a gated deltanet layer)", n("attn_q.weight"), n("attn_k.weight"), n("attn_v.weight"),
		n("attn_output.weight"), n("ssm_conv1d.bias"), n("ssm_in.weight"))
}

// gdnScratch is the work area of the Gated DeltaNet layers and of Qwen3.5's
// gated attention, grown to the largest pass.
type gdnScratch struct {
	qg []float32 // Attention.QueryGate: each row's queries and gates, head by head [rows × 2·QDim]

	qkv   []float32   // the q, k, v projection [rows × convDim]
	conv  []float32   // qkv convolved, then SiLU [rows × convDim]
	z     []float32   // the output gate [rows × valueDim]
	beta  []float32   // β, as h·Wβ then its sigmoid [rows × ValueHeads]
	gate  []float32   // h·Wα, then the decay e^g [rows × ValueHeads]
	o     []float32   // the recurrence's output, then normed and gated [rows × valueDim]
	ones  []float32   // 1s, to run SiLU as SwiGLU and the L2 norm as an RMSNorm
	keep  [][]float32 // the pieces' kept states (piece.keepFrom...), in order
	first []int       // per piece: its first entry in keep
	job   deltaJob
	job2  convJob
}

// gatedDeltaNetStep is a Gated DeltaNet layer on the CPU.
type gatedDeltaNetStep struct {
	spec *GatedDeltaNet
	w    *GatedDeltaNetWeights
	taps []float32 // the convolution's weights tap by tap: [Kernel × convDim]
}

func (g *GatedDeltaNet) newStep(m *CPU, l int, lw *LayerWeights) (sublayer, error) {
	if lw.GatedDeltaNet == nil {
		return nil, fmt.Errorf("llama: layer %d: a gated deltanet without its weights", l)
	}
	C, K := g.convDim(), g.Kernel
	taps := make([]float32, K*C)
	for ch := range C {
		for k := range K {
			taps[k*C+ch] = lw.GatedDeltaNet.Conv[ch*K+k]
		}
	}
	return &gatedDeltaNetStep{spec: g, w: lw.GatedDeltaNet, taps: taps}, nil
}

// forward runs the Gated DeltaNet of layer l over the pass's rows: the
// products over the pass's spans, the convolution (its channels shared out
// among the pool's threads), the L2 norms, β and the decays row by row, the
// recurrence of every (piece, value head) pair over the pool, then the
// gated norm and the output product.
func (s *gatedDeltaNetStep) forward(m *CPU, p *pass, l int, in, out []float32) error {
	b, n := p.b, p.n
	g, w := s.spec, s.w
	E, C, VD, H, S := m.Config.Embd, g.convDim(), g.valueDim(), g.ValueHeads, g.HeadSize
	sc := &b.gdn
	sc.qkv = grow(sc.qkv, n*C)
	sc.conv = grow(sc.conv, n*C)
	sc.z = grow(sc.z, n*VD)
	sc.beta = grow(sc.beta, n*H)
	sc.gate = grow(sc.gate, n*H)
	sc.o = grow(sc.o, n*VD)
	if len(sc.ones) < max(C, VD) {
		sc.ones = make([]float32, max(C, VD))
		for i := range sc.ones {
			sc.ones[i] = 1
		}
	}
	for _, sp := range b.spans {
		lo, hi := sp.lo, sp.hi
		if err := tensor.MulInto(m.pool, &b.mm, in[lo*E:hi*E], hi-lo,
			tensor.Out{M: w.QKV, Dst: sc.qkv[lo*C : hi*C]}, tensor.Out{M: w.Gate, Dst: sc.z[lo*VD : hi*VD]},
			tensor.Out{M: w.Beta, Dst: sc.beta[lo*H : hi*H]}, tensor.Out{M: w.Alpha, Dst: sc.gate[lo*H : hi*H]}); err != nil {
			return fmt.Errorf("llama: layer %d: %w", l, err)
		}
	}
	s.convolve(m, p, l)

	// q and k L2-normalized per head: ggml_rms_norm with eps/HeadSize, then
	// a scale by 1/√HeadSize; β and the decay per value head.
	KD := g.keyDim()
	eps := m.Config.RMSEps / float32(S)
	inv := 1 / float32(math.Sqrt(float64(S)))
	for r := range n {
		qk := sc.conv[r*C : r*C+2*KD]
		tensor.RMSNormRows(qk, qk, sc.ones[:S], eps)
		tensor.Scale(qk, inv)
		beta, gate := sc.beta[r*H:(r+1)*H], sc.gate[r*H:(r+1)*H]
		sigmoid(beta)
		for h, a := range gate { // the decay e^g, g = softplus(α + dt_bias)·A
			gate[h] = float32(math.Exp(float64(softplus(a+w.DTBias[h]) * w.A[h])))
		}
	}

	sc.job = deltaJob{s: s, p: p, l: l, scale: inv}
	units := len(p.ps) * H
	// Hand a thread at least ~64K state values (a decode step's head of
	// 128×128 is 16K).
	grain := max(1, (1<<16)*units/max(1, n*H*S*S))
	m.pool.Run(units, grain, &sc.job)
	sc.job = deltaJob{}

	// The gated norm: RMSNorm of each head's output (ssm_norm), times
	// SiLU(z) (SwiGLU(z, normed): the same products).
	o := sc.o[:n*VD]
	tensor.RMSNormRows(o, o, w.Norm, m.Config.RMSEps)
	tensor.SwiGLU(o, sc.z[:n*VD], o)
	for _, sp := range b.spans {
		if err := w.Out.Mul(m.pool, &b.mm, out[sp.lo*E:sp.hi*E], o[sp.lo*VD:sp.hi*VD], sp.hi-sp.lo); err != nil {
			return fmt.Errorf("llama: layer %d: %w", l, err)
		}
	}
	return nil
}

// convolve runs the causal convolution and its SiLU over each piece's rows
// of the q, k, v projection (sc.qkv) into sc.conv, the channels shared out
// among the pool's threads, then moves each piece's window (the first
// part of its state: the last Kernel−1 inputs) on by its tokens. It makes
// the points of the piece's kept rows (keepState) and copies the window
// after each such row into them; the recurrence adds the matrices.
func (s *gatedDeltaNetStep) convolve(m *CPU, p *pass, l int) {
	g, sc := s.spec, &p.b.gdn
	C, K := g.convDim(), g.Kernel
	sc.job2 = convJob{s: s, p: p, l: l}
	m.pool.Run(len(p.ps)*((C+convBlock-1)/convBlock), 1, &sc.job2)
	sc.job2 = convJob{}
	sc.keep, sc.first = sc.keep[:0], sc.first[:0]
	for _, pc := range p.ps {
		sc.first = append(sc.first, len(sc.keep))
		win := pc.c.state[l][:(K-1)*C]
		in := sc.qkv[pc.row*C : (pc.row+len(pc.tokens))*C]
		for t := pc.keepFrom; t < pc.keepTo; t++ {
			dst := pc.c.keepState(l, pc.pos+t+1)
			windowAfter(dst[:(K-1)*C], win, in, t+1, C)
			sc.keep = append(sc.keep, dst)
		}
		windowAfter(win, win, in, len(pc.tokens), C)
	}
}

// windowAfter writes to dst the window of the last K−1 inputs (rows of C,
// oldest first; len(dst) = (K−1)·C) after the first n rows of in have
// followed the window win. dst may be win.
func windowAfter(dst, win, in []float32, n, C int) {
	k := len(dst) / C
	if n >= k {
		copy(dst, in[(n-k)*C:n*C])
		return
	}
	copy(dst, win[n*C:]) // the old rows that stay, moved up (copy handles the overlap)
	copy(dst[(k-n)*C:], in[:n*C])
}

// convBlock is how many channels a unit of the convolution's job takes
// (a multiple of 8, so that SiLU takes every value through the same path).
const convBlock = 256

// convJob is the convolution of a pass: unit u is piece u/blocks's
// channels [b·convBlock, (b+1)·convBlock) with b = u%blocks.
type convJob struct {
	s *gatedDeltaNetStep
	p *pass
	l int
}

func (j *convJob) Do(lo, hi int) {
	g, sc := j.s.spec, &j.p.b.gdn
	C, K := g.convDim(), g.Kernel
	blocks := (C + convBlock - 1) / convBlock
	for u := lo; u < hi; u++ {
		pc := &j.p.ps[u/blocks]
		c0 := (u % blocks) * convBlock
		c1 := min(C, c0+convBlock)
		win := pc.c.state[j.l][:(K-1)*C]
		for t := range pc.tokens {
			r := pc.row + t
			out := sc.conv[r*C+c0 : r*C+c1]
			// ggml_ssm_conv: the window oldest first, each product
			// rounded, summed in that order; input t-K+1+k is a window
			// row while it precedes the piece.
			clear(out)
			for k := range K {
				src := t - (K - 1) + k
				var x []float32
				if src < 0 {
					x = win[(K-1+src)*C+c0 : (K-1+src)*C+c1]
				} else {
					x = sc.qkv[(pc.row+src)*C+c0 : (pc.row+src)*C+c1]
				}
				w := j.s.taps[k*C+c0 : k*C+c1]
				for i := range out {
					out[i] += float32(x[i] * w[i])
				}
			}
			tensor.SwiGLU(out, out, sc.ones[:len(out)])
		}
	}
}

// deltaJob is the recurrence of every (piece, value head) pair of a pass,
// unit i being piece i/ValueHeads's head i%ValueHeads.
type deltaJob struct {
	s     *gatedDeltaNetStep
	p     *pass
	l     int // the layer
	scale float32
}

func (j *deltaJob) Do(lo, hi int) {
	g, sc := j.s.spec, &j.p.b.gdn
	C, H, S, KD, VD := g.convDim(), g.ValueHeads, g.HeadSize, g.keyDim(), g.valueDim()
	l := j.l
	win := (g.Kernel - 1) * C
	for u := lo; u < hi; u++ {
		i, h := u/H, u%H
		pc := &j.p.ps[i]
		kh := h % g.KeyHeads
		st := pc.c.state[l][win+h*S*S : win+(h+1)*S*S]
		kept := sc.keep[sc.first[i]:]
		row := sc.conv[pc.row*C:]
		q, k, v := row[kh*S:], row[KD+kh*S:], row[2*KD+h*S:]
		o, decay, beta := sc.o[pc.row*VD+h*S:], sc.gate[pc.row*H+h:], sc.beta[pc.row*H+h:]
		// Run the tokens up to each kept row in one call, then keep the
		// state after that row.
		for t := 0; t < len(pc.tokens); {
			end := len(pc.tokens)
			if t < pc.keepTo {
				end = max(t, pc.keepFrom) + 1
			}
			tensor.DeltaRuleTokens(st, q[t*C:], k[t*C:], v[t*C:], o[t*VD:], C, VD, decay[t*H:], beta[t*H:], H, end-t, j.scale)
			if end-1 >= pc.keepFrom && end-1 < pc.keepTo {
				copy(kept[end-1-pc.keepFrom][win+h*S*S:win+(h+1)*S*S], st)
			}
			t = end
		}
	}
}

// softplus is ggml's: x above 20 as it is, else log(1 + e^x) in float32.
func softplus(x float32) float32 {
	if x > 20 {
		return x
	}
	return float32(math.Log(float64(1 + float32(math.Exp(float64(x))))))
}
