package llama

import (
	"fmt"
	"math"

	"github.com/smolgo/smolgo/tensor"
)

// MoE is a mixture-of-experts feed-forward network: a router scores the
// Experts gated feed-forwards (each of width Width) for every position, the
// Used best of them run on it, and their outputs are summed, each weighted
// by its routing weight (llama.cpp's build_moe_ffn):
//
//	z = h·Wrouter (+ router bias)
//	p = Gating(z): softmax(z), or z itself (TopKSoftmax), or sigmoid(z)
//	experts = the Used largest p (+ selection bias), largest first (ties as llama.cpp breaks them)
//	w = p[experts], softmax over them (TopKSoftmax), / their sum (NormWeights), · WeightScale
//	f = Σ w_i · FFN_expert_i(h)          (+ shared expert, see SharedWidth)
//
// Expert i's FFN is (act(h·Wgate_i + bg_i) ⊙ (h·Wup_i + bu_i))·Wdown_i + bd_i,
// the biases only where ExpertBias is set. The weights are 3-D tensors
// ffn_{gate,up,down}_exps, read as one matrix per expert: views of the
// file's rows, never copied whole.
type MoE struct {
	// Experts is the number of experts (expert_count), at most MaxExperts.
	Experts int
	// Used is how many of them each position runs (expert_used_count).
	Used int
	// Width is each expert's feed-forward width
	// (expert_feed_forward_length).
	Width int
	// Gating is how router logits become expert choices and weights.
	Gating Gating
	// NormWeights divides the chosen experts' weights by their sum
	// (Qwen3-MoE, Mixtral), the sum clamped below at 2^-14 as llama.cpp
	// does.
	NormWeights bool
	// WeightScale multiplies the chosen experts' weights (0 means 1).
	WeightScale float32
	// RouterBias adds ffn_gate_inp.bias to the router's logits (gpt-oss).
	RouterBias bool
	// SelectionBias adds exp_probs_b.bias, one value per expert, to the
	// gating's probabilities for choosing the experts only: the chosen
	// experts are weighted by their unbiased probabilities (llama.cpp's
	// ffn_exp_probs_b, introduced by DeepSeek V3; LFM2-8B-A1B).
	SelectionBias bool
	// ExpertBias adds each expert's biases ffn_{gate,up,down}_exps.bias
	// after its products (gpt-oss).
	ExpertBias bool
	// Activation is the experts' gate: SiLU (SwiGLU), GELUTanh or
	// SwiGLUOAI (gpt-oss).
	Activation Activation
	// SharedWidth, when positive, adds a shared expert that every position
	// runs, a dense SwiGLU of this width (ffn_{gate,up,down}_shexp), to the
	// routed experts' sum (Qwen2-MoE).
	SharedWidth int
	// SharedGate scales the shared expert's output by sigmoid(h·w) with w
	// the vector ffn_gate_inp_shexp (Qwen2-MoE).
	SharedGate bool
}

// MaxExperts bounds MoE.Experts, as llama.cpp's LLAMA_MAX_EXPERTS does.
const MaxExperts = 1024

// Gating is how a mixture of experts turns router logits into choices and
// weights.
type Gating int

const (
	// SoftmaxTopK takes the softmax over every expert's logit, then the
	// Used most probable experts, weighted by their probabilities
	// (llama.cpp's LLAMA_EXPERT_GATING_FUNC_TYPE_SOFTMAX: Qwen3-MoE,
	// Mixtral, Qwen2-MoE).
	SoftmaxTopK Gating = iota
	// TopKSoftmax takes the Used largest logits, then the softmax over
	// those (SOFTMAX_WEIGHT: gpt-oss).
	TopKSoftmax
	// SigmoidTopK takes the sigmoid of each logit, then the Used largest
	// (SIGMOID).
	SigmoidTopK
)

func (g Gating) String() string {
	switch g {
	case SoftmaxTopK:
		return "softmax-top-k"
	case TopKSoftmax:
		return "top-k-softmax"
	case SigmoidTopK:
		return "sigmoid-top-k"
	}
	return fmt.Sprintf("Gating(%d)", int(g))
}

// SwiGLU-OAI's constants (gpt-oss; llama.cpp hard-codes them too).
const (
	oaiAlpha = 1.702
	oaiLimit = 7.0
)

// Kind is "moe".
func (*MoE) Kind() string { return "moe" }

func (e *MoE) clone() kind { c := *e; return &c }

func (e *MoE) validate(_ *Arch, cfg Config) error {
	switch {
	case e.Experts < 1 || e.Experts > MaxExperts:
		return fmt.Errorf("%d experts: want 1 to %d", e.Experts, MaxExperts)
	case e.Used < 1 || e.Used > e.Experts:
		return fmt.Errorf("%d experts used of %d: want 1 to %d", e.Used, e.Experts, e.Experts)
	case e.Width < 1 || e.Width > 1<<24:
		return fmt.Errorf("expert width %d is out of range", e.Width)
	case e.SharedWidth < 0 || e.SharedWidth > 1<<24:
		return fmt.Errorf("shared expert width %d is out of range", e.SharedWidth)
	case e.SharedGate && e.SharedWidth == 0:
		return fmt.Errorf("a shared-expert gate without a shared expert")
	case e.Gating != SoftmaxTopK && e.Gating != TopKSoftmax && e.Gating != SigmoidTopK:
		return fmt.Errorf("unknown expert gating %v", e.Gating)
	case e.Activation != SiLU && e.Activation != GELUTanh && e.Activation != SwiGLUOAI:
		return fmt.Errorf("unknown activation %v", e.Activation)
	}
	if math.IsNaN(float64(e.WeightScale)) || math.IsInf(float64(e.WeightScale), 0) || e.WeightScale < 0 {
		return fmt.Errorf("expert weight scale %v must be a finite number, 0 or more", e.WeightScale)
	}
	return nil
}

func (e *MoE) features(add func(bool, string)) {
	add(e.Gating == TopKSoftmax, "moe top-k softmax")
	add(e.Gating == SigmoidTopK, "moe sigmoid")
	add(e.RouterBias, "moe router bias")
	add(e.SelectionBias, "moe selection bias")
	add(e.ExpertBias, "moe expert bias")
	add(e.Activation == GELUTanh, "gelu")
	add(e.Activation == SwiGLUOAI, "swiglu-oai")
	add(e.SharedWidth > 0, "shared expert")
}

// MoEWeights are a mixture of experts' tensors: the router, one matrix per
// expert of each 3-D expert tensor (row views of the file), and the
// optional biases and shared expert.
type MoEWeights struct {
	Router     *tensor.Matrix   // ffn_gate_inp [Experts rows × Embd]
	RouterBias []float32        // MoE.RouterBias: [Experts]
	// SelectionBias is MoE.SelectionBias's exp_probs_b.bias: [Experts]
	SelectionBias []float32
	Gate, Up   []*tensor.Matrix // per expert [Width rows × Embd]
	Down       []*tensor.Matrix // per expert [Embd rows × Width]

	GateBias, UpBias, DownBias [][]float32 // MoE.ExpertBias: per expert [Width], [Width], [Embd]

	SharedGate, SharedUp, SharedDown *tensor.Matrix // MoE.SharedWidth
	SharedRouter                     *tensor.Matrix // MoE.SharedGate: ffn_gate_inp_shexp [1 row × Embd]
}

func (w *MoEWeights) matrices() []**tensor.Matrix {
	ms := []**tensor.Matrix{}
	for i := range w.Gate {
		ms = append(ms, &w.Gate[i], &w.Up[i], &w.Down[i])
	}
	if w.SharedGate != nil {
		ms = append(ms, &w.SharedGate, &w.SharedUp, &w.SharedDown)
	}
	return ms
}

func (w *MoEWeights) clone() *MoEWeights {
	c := *w
	c.Gate, c.Up, c.Down = append([]*tensor.Matrix(nil), w.Gate...), append([]*tensor.Matrix(nil), w.Up...), append([]*tensor.Matrix(nil), w.Down...)
	return &c
}

func (e *MoE) load(ld *loader, cfg Config, i int, lw *LayerWeights) {
	n := func(s string) string { return fmt.Sprintf("blk.%d.%s", i, s) }
	E, W, X := cfg.Embd, e.Width, e.Experts
	w := &MoEWeights{}
	w.Router = ld.matrix(n("ffn_gate_inp.weight"), E, X)
	if e.RouterBias {
		w.RouterBias = ld.vector(n("ffn_gate_inp.bias"), X)
	} else {
		ld.unused(ld.arch, n("ffn_gate_inp.bias"))
	}
	if e.SelectionBias {
		w.SelectionBias = ld.vector(n("exp_probs_b.bias"), X)
	} else {
		ld.unused(ld.arch, n("exp_probs_b.bias"))
	}
	w.Gate = ld.experts(n("ffn_gate_exps.weight"), E, W, X)
	w.Up = ld.experts(n("ffn_up_exps.weight"), E, W, X)
	w.Down = ld.experts(n("ffn_down_exps.weight"), W, E, X)
	if e.ExpertBias {
		w.GateBias = ld.vectors(n("ffn_gate_exps.bias"), W, X)
		w.UpBias = ld.vectors(n("ffn_up_exps.bias"), W, X)
		w.DownBias = ld.vectors(n("ffn_down_exps.bias"), E, X)
	} else {
		ld.unused(ld.arch, n("ffn_gate_exps.bias"), n("ffn_up_exps.bias"), n("ffn_down_exps.bias"))
	}
	if S := e.SharedWidth; S > 0 {
		w.SharedGate = ld.matrix(n("ffn_gate_shexp.weight"), E, S)
		w.SharedUp = ld.matrix(n("ffn_up_shexp.weight"), E, S)
		w.SharedDown = ld.matrix(n("ffn_down_shexp.weight"), S, E)
	} else {
		ld.unused(ld.arch, n("ffn_gate_shexp.weight"), n("ffn_up_shexp.weight"), n("ffn_down_shexp.weight"))
	}
	if e.SharedGate {
		w.SharedRouter = ld.rowMatrix(n("ffn_gate_inp_shexp.weight"), E)
	} else {
		ld.unused(ld.arch, n("ffn_gate_inp_shexp.weight"))
	}
	// A dense feed-forward beside the experts would be another block.
	ld.unused(ld.arch+" (a mixture-of-experts layer)", n("ffn_gate.weight"), n("ffn_up.weight"), n("ffn_down.weight"))
	lw.MoE = w
}

// moeStep is a mixture of experts on the CPU.
type moeStep struct {
	spec *MoE
	w    *MoEWeights
	act  func(gate, up []float32) // the experts' activation, in place on gate
}

func (e *MoE) newStep(m *CPU, l int, lw *LayerWeights) (sublayer, error) {
	if lw.MoE == nil {
		return nil, fmt.Errorf("llama: layer %d: a mixture of experts without its weights", l)
	}
	s := &moeStep{spec: e, w: lw.MoE}
	switch e.Activation {
	case SiLU:
		s.act = func(g, u []float32) { tensor.SwiGLU(g, g, u) }
	case GELUTanh:
		s.act = func(g, u []float32) { tensor.GEGLU(g, g, u) }
	case SwiGLUOAI:
		s.act = swigluOAI
	}
	return s, nil
}

// swigluOAI is gpt-oss's clamped SwiGLU in place on gate, as ggml's
// swiglu_oai computes it: x = min(gate, 7), y = clamp(up, -7, 7),
// x/(1+e^(-1.702·x)) · (y+1), each step rounded to float32.
func swigluOAI(gate, up []float32) {
	for i, g := range gate {
		x := min(g, oaiLimit)
		y := max(-oaiLimit, min(up[i], oaiLimit))
		e := expf(float32(oaiAlpha * -x))
		glu := x / float32(1+e)
		gate[i] = glu * float32(y+1)
	}
}

// moeScratch are a mixture of experts' work buffers, grown to the largest
// pass seen.
type moeScratch struct {
	logits  []float32 // router logits (then probabilities)   [rows × Experts]
	order   []int32   // argsort scratch                       [Experts]
	sel     []float32 // biased probabilities (SelectionBias)  [Experts]
	ids     []int32   // chosen experts, best first            [rows × Used]
	weights []float32 // their weights                         [rows × Used]
	count   []int32   // entries per expert                    [Experts+1]
	entry   []int32   // entries (row·Used + slot), expert-major [rows × Used]
	at      []int32   // where each (row, slot) lies in entry  [rows × Used]
	x       []float32 // the calls' gathered inputs, per entry [rows × Used × Embd]
	gate    []float32 // per entry: gate, then activation      [rows × Used × Width]
	up      []float32 // per entry: up                         [rows × Used × Width]
	y       []float32 // every entry's expert output           [rows × Used × Embd]
	shared  []float32 // the shared expert's output            [rows × Embd]
	calls   []expertCall
	prods   []tensor.Product
}

func growInt32(s []int32, n int) []int32 {
	if cap(s) < n {
		return make([]int32, n)
	}
	return s[:n]
}

func (s *moeScratch) ensure(n, X, K, E, W, S int) {
	s.logits = grow(s.logits, n*X)
	s.order = growInt32(s.order, X)
	s.sel = grow(s.sel, X)
	s.ids = growInt32(s.ids, n*K)
	s.weights = grow(s.weights, n*K)
	s.count = growInt32(s.count, X+1)
	s.entry = growInt32(s.entry, n*K)
	s.at = growInt32(s.at, n*K)
	s.x = grow(s.x, n*K*E)
	s.gate = grow(s.gate, n*max(K*W, S))
	s.up = grow(s.up, n*max(K*W, S))
	s.y = grow(s.y, n*K*E)
	if S > 0 {
		s.shared = grow(s.shared, n*E)
	}
}

// forward runs the mixture of experts of layer l over the pass's rows.
//
// The rows are grouped by expert, and each expert's products run over its
// rows only (llama.cpp's MUL_MAT_ID): an expert chosen by several rows of
// the pass reads its weights once for all of them. A row's numbers do not
// depend on its neighbours, as in the dense block: rows of small sequences
// (fewer than gemmRows new tokens) share product calls of at most
// maxSmallRows rows, and the rows of each larger sequence routed to an
// expert get a call of their own, the call that sequence gets alone.
func (s *moeStep) forward(m *CPU, p *pass, l int, in, out []float32) error {
	spec, w := s.spec, s.w
	b, n := p.b, p.n
	X, K, E, W, S := spec.Experts, spec.Used, m.Config.Embd, spec.Width, spec.SharedWidth
	sc := &b.moe
	sc.ensure(n, X, K, E, W, S)

	// Route.
	for _, sp := range b.spans {
		if err := w.Router.Mul(m.pool, &b.mm, sc.logits[sp.lo*X:sp.hi*X], in[sp.lo*E:sp.hi*E], sp.hi-sp.lo); err != nil {
			return fmt.Errorf("llama: layer %d: router: %w", l, err)
		}
	}
	for r := range n {
		z := sc.logits[r*X : (r+1)*X]
		if w.RouterBias != nil {
			tensor.Add(z, w.RouterBias)
		}
		if err := spec.route(z, w.SelectionBias, sc.sel, sc.order, sc.ids[r*K:(r+1)*K], sc.weights[r*K:(r+1)*K]); err != nil {
			return fmt.Errorf("llama: layer %d: row %d: %w", l, r, err)
		}
	}

	// Group the (row, slot) entries by expert, in row order within each.
	count := sc.count
	clear(count)
	for _, e := range sc.ids[:n*K] {
		count[e+1]++
	}
	for e := range X {
		count[e+1] += count[e]
	}
	next := sc.order[:X] // the argsort scratch, free again: next entry per expert
	for e := range X {
		next[e] = count[e]
	}
	for i, e := range sc.ids[:n*K] {
		sc.entry[next[e]] = int32(i)
		sc.at[i] = next[e]
		next[e]++
	}

	// Each expert's calls: its small rows in even calls of at most
	// maxSmallRows, then one call per larger piece. Rows [0, small) are
	// the small pieces' (layout puts them first).
	small := 0
	for _, pc := range p.ps {
		if len(pc.tokens) < gemmRows {
			small += len(pc.tokens)
		}
	}
	sc.calls = sc.calls[:0]
	for e := range X {
		lo, hi := int(count[e]), int(count[e+1])
		if lo == hi {
			continue
		}
		ns := lo
		for ns < hi && int(sc.entry[ns])/K < small {
			ns++
		}
		if k := ns - lo; k > 0 {
			calls := (k + maxSmallRows - 1) / maxSmallRows
			for c := range calls {
				sc.calls = append(sc.calls, expertCall{e: e, lo: lo + k*c/calls, hi: lo + k*(c+1)/calls})
			}
		}
		for a := ns; a < hi; {
			piece := pieceOf(p.ps, int(sc.entry[a])/K)
			z := a
			for z < hi && pieceOf(p.ps, int(sc.entry[z])/K) == piece {
				z++
			}
			sc.calls = append(sc.calls, expertCall{e: e, lo: a, hi: z})
			a = z
		}
	}
	if err := s.experts(m, b, l, in); err != nil {
		return err
	}

	// The shared expert, over every row.
	if S > 0 {
		if err := s.sharedExpert(m, b, l, in, n); err != nil {
			return err
		}
	}

	// Combine each row's experts in its slots' order, as ggml adds them:
	// ((w0·y0 + w1·y1) + w2·y2) + ..., then the shared expert.
	for r := range n {
		o := out[r*E : (r+1)*E]
		for k := range K {
			wk := sc.weights[r*K+k]
			y := sc.y[int(sc.at[r*K+k])*E:][:E]
			if k == 0 {
				for i := range o {
					o[i] = wk * y[i]
				}
				continue
			}
			for i := range o {
				o[i] += float32(wk * y[i])
			}
		}
		if S > 0 {
			tensor.Add(o, sc.shared[r*E:(r+1)*E])
		}
	}
	return nil
}

// pieceOf returns the index of the piece whose rows hold row r.
func pieceOf(ps []piece, r int) int {
	for i, pc := range ps {
		if r >= pc.row && r < pc.row+len(pc.tokens) {
			return i
		}
	}
	return -1
}

// expertCall is one product call of an expert: the entries [lo, hi) of
// the grouping, all routed to expert e.
type expertCall struct{ e, lo, hi int }

// experts runs every call of the pass: the gate and up products of all of
// them in one pass over the pool (tensor.MulEach), the activation, then
// every down product in another, each entry's output going to its rows of
// the scratch's y.
func (s *moeStep) experts(m *CPU, b *buffers, l int, in []float32) error {
	sc, w := &b.moe, s.w
	K, E, W := s.spec.Used, m.Config.Embd, s.spec.Width
	prods := sc.prods[:0]
	for _, c := range sc.calls {
		k := c.hi - c.lo
		// The call's inputs: the rows themselves where they are
		// consecutive (a decode step's one row, which every expert then
		// converts once), else gathered.
		r0 := int(sc.entry[c.lo]) / K
		x := in[r0*E : (r0+k)*E]
		for j, ent := range sc.entry[c.lo:c.hi] {
			if int(ent)/K != r0+j {
				x = sc.x[c.lo*E : c.hi*E]
				for j, ent := range sc.entry[c.lo:c.hi] {
					r := int(ent) / K
					copy(x[j*E:(j+1)*E], in[r*E:(r+1)*E])
				}
				break
			}
		}
		prods = append(prods,
			tensor.Product{M: w.Gate[c.e], X: x, N: k, Dst: sc.gate[c.lo*W : c.hi*W]},
			tensor.Product{M: w.Up[c.e], X: x, N: k, Dst: sc.up[c.lo*W : c.hi*W]})
	}
	if err := tensor.MulEach(m.pool, &b.mm, prods); err != nil {
		return fmt.Errorf("llama: layer %d: experts: %w", l, err)
	}
	prods = prods[:0]
	for _, c := range sc.calls {
		if w.GateBias != nil {
			for a := c.lo; a < c.hi; a++ {
				tensor.Add(sc.gate[a*W:(a+1)*W], w.GateBias[c.e])
				tensor.Add(sc.up[a*W:(a+1)*W], w.UpBias[c.e])
			}
		}
		s.act(sc.gate[c.lo*W:c.hi*W], sc.up[c.lo*W:c.hi*W])
		prods = append(prods, tensor.Product{M: w.Down[c.e], X: sc.gate[c.lo*W : c.hi*W], N: c.hi - c.lo, Dst: sc.y[c.lo*E : c.hi*E]})
	}
	err := tensor.MulEach(m.pool, &b.mm, prods)
	clear(prods) // drop the matrix pointers
	sc.prods = prods[:0]
	if err != nil {
		return fmt.Errorf("llama: layer %d: experts: %w", l, err)
	}
	if w.DownBias != nil {
		for _, c := range sc.calls {
			for a := c.lo; a < c.hi; a++ {
				tensor.Add(sc.y[a*E:(a+1)*E], w.DownBias[c.e])
			}
		}
	}
	return nil
}

// sharedExpert runs the shared expert over the pass's n rows into the
// scratch's shared, gated by sigmoid(h·w) where the MoE has a gate
// (computed as llama.cpp does, silu(z)/z).
func (s *moeStep) sharedExpert(m *CPU, b *buffers, l int, in []float32, n int) error {
	sc, w := &b.moe, s.w
	E, S := m.Config.Embd, s.spec.SharedWidth
	for _, sp := range b.spans {
		lo, hi := sp.lo, sp.hi
		g, u := sc.gate[lo*S:hi*S], sc.up[lo*S:hi*S]
		if err := tensor.MulSwiGLU(m.pool, &b.mm, g, g, u, w.SharedGate, w.SharedUp, in[lo*E:hi*E], hi-lo); err != nil {
			return fmt.Errorf("llama: layer %d: shared expert: %w", l, err)
		}
		if err := w.SharedDown.Mul(m.pool, &b.mm, sc.shared[lo*E:hi*E], g, hi-lo); err != nil {
			return fmt.Errorf("llama: layer %d: shared expert: %w", l, err)
		}
	}
	if w.SharedRouter != nil {
		z := sc.gate[:n] // free again
		for _, sp := range b.spans {
			if err := w.SharedRouter.Mul(m.pool, &b.mm, z[sp.lo:sp.hi], in[sp.lo*E:sp.hi*E], sp.hi-sp.lo); err != nil {
				return fmt.Errorf("llama: layer %d: shared expert gate: %w", l, err)
			}
		}
		for r, zr := range z {
			gate := float32(zr/float32(1+expf(-zr))) / zr
			tensor.Scale(sc.shared[r*E:(r+1)*E], gate)
		}
	}
	return nil
}

// route picks the experts of one row from its router logits z (changed in
// place into the gating's probabilities), writing them best first to ids and
// their weights to weights (len Used each). With a selection bias (len
// Experts, else nil) the choice is by the probabilities plus the bias, put
// in sel, and the weights are the unbiased probabilities; sel and order
// are scratch of len Experts.
func (e *MoE) route(z, bias, sel []float32, order []int32, ids []int32, weights []float32) error {
	for i, v := range z {
		if v != v {
			return fmt.Errorf("router logit %d is NaN", i)
		}
	}
	switch e.Gating {
	case SoftmaxTopK:
		routerSoftmax(z)
	case SigmoidTopK:
		for i, v := range z {
			z[i] = 1 / (1 + expf(-v))
		}
	}
	by := z
	if bias != nil {
		for i, v := range z {
			sel[i] = v + bias[i] // ggml_add(probs, exp_probs_b)
		}
		by = sel
	}
	argsortDesc(order, by)
	for k := range ids {
		ids[k] = order[k]
		weights[k] = z[order[k]]
	}
	if e.Gating == TopKSoftmax {
		routerSoftmax(weights)
	}
	if e.NormWeights {
		var sum float64 // ggml_sum_rows: a double sum, rounded to float
		for _, v := range weights {
			sum += float64(v)
		}
		s := max(float32(sum), 6.103515625e-5)
		for k := range weights {
			weights[k] /= s
		}
	}
	if ws := e.WeightScale; ws != 0 && ws != 1 {
		for k := range weights {
			weights[k] *= ws
		}
	}
	return nil
}

// routerSoftmax is ggml's soft_max over one row as its AVX2 kernel computes
// it (the CPU backend the golden references ran): e^(x-max) by the SIMD
// exponential (tensor.Expf) in chunks of 8, each chunk summed in float32 in
// the order of its horizontal add and the chunks' sums added in double;
// the last len%8 by the C library's expf, added in double; then one scale
// by 1/sum.
func routerSoftmax(x []float32) {
	mx := float32(math.Inf(-1))
	for _, v := range x {
		mx = max(mx, v)
	}
	var sum float64
	i := 0
	for ; i+7 < len(x); i += 8 {
		var v [8]float32
		for j := range v {
			v[j] = tensor.Expf(x[i+j] - mx)
			x[i+j] = v[j]
		}
		a := [4]float32{v[0] + v[4], v[1] + v[5], v[2] + v[6], v[3] + v[7]}
		s := (a[0] + a[2]) + (a[1] + a[3])
		sum += float64(s)
	}
	for ; i < len(x); i++ {
		v := expf(x[i] - mx)
		x[i] = v
		sum += float64(v)
	}
	inv := float32(1 / sum)
	for i := range x {
		x[i] *= inv
	}
}
