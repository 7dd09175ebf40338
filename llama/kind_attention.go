package llama

import (
	"fmt"
	"math"

	"github.com/smolgo/smolgo/rope"
	"github.com/smolgo/smolgo/tensor"
)

// Attention is the token mixer of the llama block: grouped-query attention
// over the sequence's keys and values, which each sequence keeps in its
// Cache.
//
//	q, k, v = h·Wq (+bq), h·Wk (+bk), h·Wv (+bv)
//	q, k = RMSNorm per head (QKNorm), then RoPE (unless Rope is nil: NoPE)
//	a = softmax(q·QueryScale · kᵀ · scale) · v over the window
//	    (scale: Scale, or 1/√HeadDim; 1 when QueryScale is set)
//	a = a ⊙ sigmoid(g) (QueryGate: g from Wq's rows beside the query's), then ·Wo
type Attention struct {
	// Rope is the rotary embedding of q and k; nil is a NoPE layer (no
	// positional encoding). Layers with the same rotation should share
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
	// Window, when positive, limits attention to the Window most recent
	// positions, the query's own included (sliding-window attention): a
	// query at position p sees keys p-Window+1 ... p. The cache of such a
	// layer keeps only a ring of the positions still visible.
	Window int
	// QueryScale, when not 0, multiplies the queries after RoPE, and the
	// softmax then takes the scores unscaled (Gemma's
	// query_pre_attn_scalar). 0 means the usual 1/√HeadDim inside the
	// softmax. The two differ by rounding only, which is why both exist.
	QueryScale float32
	// Scale, when not 0, scales the scores inside the softmax instead of
	// 1/√HeadDim (Granite's attention_multiplier). At most one of
	// QueryScale and Scale is set.
	Scale float32
	// Sinks gives each query head a learned sink logit (tensor
	// attn_sinks, [Heads]): it joins the softmax's denominator as one
	// more position with no value, so a head can attend to nothing
	// (gpt-oss).
	Sinks bool
	// OutBias adds attn_output.bias after the output projection (gpt-oss).
	OutBias bool
	// QueryGate gates each query head's output (Qwen3.5's and
	// Qwen3-Next's full attention): attn_q has 2·HeadDim rows per head,
	// the head's query then its gate g, and the attention's output for
	// that head is multiplied by sigmoid(g) before the output projection.
	QueryGate bool
}

// Kind is "attention".
func (*Attention) Kind() string { return "attention" }

func (at *Attention) clone() kind { c := *at; return &c }

func (at *Attention) validate(a *Arch, cfg Config) error {
	if at.Window < 0 {
		return fmt.Errorf("a negative attention window %d", at.Window)
	}
	if at.LongRope != nil && (at.Rope == nil || a.LongContext <= 0) {
		return fmt.Errorf("a long-context rotation without a rotation and a context length to switch at")
	}
	for _, c := range []struct {
		what string
		v    float32
	}{{"query scale", at.QueryScale}, {"attention scale", at.Scale}} {
		if math.IsNaN(float64(c.v)) || math.IsInf(float64(c.v), 0) || c.v < 0 {
			return fmt.Errorf("%s %v must be a finite number, 0 or more", c.what, c.v)
		}
	}
	if at.QueryGate && at.QKVBias {
		return fmt.Errorf("a query gate with q, k, v biases (no file has both)")
	}
	if at.QueryScale != 0 && at.Scale != 0 {
		return fmt.Errorf("a query scale (%v) and an attention scale (%v) both scale the scores; set one", at.QueryScale, at.Scale)
	}
	for _, r := range []*rope.Config{at.Rope, at.LongRope} {
		if r == nil {
			continue
		}
		if err := r.Validate(); err != nil {
			return err
		}
		if r.Dims > cfg.HeadDim {
			return fmt.Errorf("rotates %d dimensions of a head of %d", r.Dims, cfg.HeadDim)
		}
		if n := len(r.Factors); n != 0 && n != r.Dims/2 {
			return fmt.Errorf("%d RoPE frequency factors for %d rotated pairs", n, r.Dims/2)
		}
	}
	return nil
}

func (at *Attention) features(add func(bool, string)) {
	add(at.Rope == nil, "nope")
	add(at.LongRope != nil, "long rope")
	if at.Rope != nil {
		add(at.Rope.Layout == rope.NeoX, "rope neox")
		add(len(at.Rope.Factors) > 0, "rope factors")
		add(at.Rope.Scaling != rope.None, "rope scaling")
		add(at.Rope.Sections != [4]int{}, "rope sections")
	}
	add(at.QKNorm, "qk norm")
	add(at.QKVBias, "qkv bias")
	add(at.Window > 0, "sliding window")
	add(at.QueryScale != 0, "query scale")
	add(at.Scale != 0, "attention scale")
	add(at.Sinks, "attention sinks")
	add(at.OutBias, "output bias")
	add(at.QueryGate, "query gate")
}

// AttentionWeights are an attention layer's tensors. Optional ones are nil
// unless the Attention asks for them.
type AttentionWeights struct {
	Q, K, V, O          *tensor.Matrix // projections (Q: 2·QDim rows with Attention.QueryGate, each head's query then its gate)
	QBias, KBias, VBias []float32      // Attention.QKVBias: [QDim], [KVDim], [KVDim]
	QNorm, KNorm        []float32      // Attention.QKNorm: per-head RMSNorm weights [HeadDim]
	Sinks               []float32      // Attention.Sinks: one logit per query head [Heads]
	OBias               []float32      // Attention.OutBias: [Embd]
}

func (w *AttentionWeights) matrices() []**tensor.Matrix {
	return []**tensor.Matrix{&w.Q, &w.K, &w.V, &w.O}
}

// load reads q, k and v as separate tensors or as one fused tensor
// (attn_qkv: the q rows, then k, then v), which the block reads as row
// ranges of the one tensor, without a copy.
func (at *Attention) load(ld *loader, cfg Config, i int, lw *LayerWeights) {
	n := func(s string) string { return fmt.Sprintf("blk.%d.%s", i, s) }
	w := &AttentionWeights{}
	arch := ld.arch
	qRows := cfg.QDim()
	if at.QueryGate {
		qRows *= 2
	}
	if _, fused := ld.f.Tensor(n("attn_qkv.weight")); fused {
		ld.unused(arch+" (attn_qkv.weight fuses them)", n("attn_q.weight"), n("attn_k.weight"), n("attn_v.weight"))
		if qkv := ld.split(n("attn_qkv.weight"), cfg.Embd, qRows, cfg.KVDim(), cfg.KVDim()); qkv != nil {
			w.Q, w.K, w.V = qkv[0], qkv[1], qkv[2]
		}
	} else {
		w.Q = ld.matrix(n("attn_q.weight"), cfg.Embd, qRows)
		w.K = ld.matrix(n("attn_k.weight"), cfg.Embd, cfg.KVDim())
		w.V = ld.matrix(n("attn_v.weight"), cfg.Embd, cfg.KVDim())
	}
	w.O = ld.matrix(n("attn_output.weight"), cfg.QDim(), cfg.Embd)
	if at.QKVBias {
		w.QBias = ld.vector(n("attn_q.bias"), cfg.QDim())
		w.KBias = ld.vector(n("attn_k.bias"), cfg.KVDim())
		w.VBias = ld.vector(n("attn_v.bias"), cfg.KVDim())
	} else {
		ld.unused(arch, n("attn_q.bias"), n("attn_k.bias"), n("attn_v.bias"))
	}
	if at.QKNorm {
		w.QNorm = ld.vector(n("attn_q_norm.weight"), cfg.HeadDim)
		w.KNorm = ld.vector(n("attn_k_norm.weight"), cfg.HeadDim)
	} else {
		ld.unused(arch, n("attn_q_norm.weight"), n("attn_k_norm.weight"))
	}
	if at.Sinks {
		w.Sinks = ld.vector(n("attn_sinks.weight"), cfg.Heads)
	} else {
		ld.unused(arch, n("attn_sinks.weight"))
	}
	if at.OutBias {
		w.OBias = ld.vector(n("attn_output.bias"), cfg.Embd)
	} else {
		// llama.cpp's llama and granite graphs take it where a file has
		// it; a family that wants it says OutBias.
		ld.unused(arch, n("attn_output.bias"))
	}
	lw.Attention = w
}

// attentionStep is an attention layer on the CPU.
type attentionStep struct {
	spec *Attention
	w    *AttentionWeights
	rope int // the layer's rotation in CPU.ropes, or -1 (NoPE)
}

func (at *Attention) newStep(m *CPU, l int, lw *LayerWeights) (sublayer, error) {
	if lw.Attention == nil {
		return nil, fmt.Errorf("llama: layer %d: attention without its weights", l)
	}
	return &attentionStep{spec: at, w: lw.Attention, rope: m.layerRope[l]}, nil
}

// forward runs the attention of layer l over the pass's rows: in holds
// their normed inputs, out receives the projected outputs.
func (s *attentionStep) forward(m *CPU, p *pass, l int, in, out []float32) error {
	cfg := &m.Config
	b, ps, n := p.b, p.ps, p.n
	w, spec := s.w, s.spec
	E, Q, KV := cfg.Embd, cfg.QDim(), cfg.KVDim()
	hd := cfg.HeadDim
	qOut, qw := b.q, Q // where the q projection goes, and its width
	if spec.QueryGate {
		b.gdn.qg = grow(b.gdn.qg, n*2*Q)
		qOut, qw = b.gdn.qg, 2*Q
	}
	for _, sp := range b.spans {
		lo, hi := sp.lo, sp.hi
		if err := tensor.MulInto(m.pool, &b.mm, in[lo*E:hi*E], hi-lo,
			tensor.Out{M: w.Q, Dst: qOut[lo*qw : hi*qw]}, tensor.Out{M: w.K, Dst: b.k[lo*KV : hi*KV]}, tensor.Out{M: w.V, Dst: b.v[lo*KV : hi*KV]}); err != nil {
			return fmt.Errorf("llama: layer %d: %w", l, err)
		}
	}
	if spec.QueryGate {
		// Each head's query, then its gate: the queries go to b.q, the
		// gates become sigmoid(g) where they are.
		for t := range n {
			for h := range cfg.Heads {
				row := b.gdn.qg[t*2*Q+h*2*hd : t*2*Q+(h+1)*2*hd]
				copy(b.q[t*Q+h*hd:t*Q+(h+1)*hd], row[:hd])
				sigmoid(row[hd:])
			}
		}
	}
	if w.QBias != nil {
		for t := range n {
			tensor.Add(b.q[t*Q:(t+1)*Q], w.QBias)
			tensor.Add(b.k[t*KV:(t+1)*KV], w.KBias)
			tensor.Add(b.v[t*KV:(t+1)*KV], w.VBias)
		}
	}
	if w.QNorm != nil {
		tensor.RMSNormRows(b.q[:n*Q], b.q[:n*Q], w.QNorm[:hd], cfg.RMSEps)
		tensor.RMSNormRows(b.k[:n*KV], b.k[:n*KV], w.KNorm[:hd], cfg.RMSEps)
	}
	if k := s.rope; k >= 0 {
		rc := m.ropes[k]
		half := rc.Dims / 2
		for t := range n {
			cos, sin := b.cos[k][t*half:(t+1)*half], b.sin[k][t*half:(t+1)*half]
			for h := range cfg.Heads {
				rc.Rotate(b.q[t*Q+h*hd:t*Q+(h+1)*hd], cos, sin)
			}
			for h := range cfg.KVHeads {
				rc.Rotate(b.k[t*KV+h*hd:t*KV+(h+1)*hd], cos, sin)
			}
		}
	}
	scale := float32(1 / math.Sqrt(float64(hd)))
	if as := spec.Scale; as != 0 {
		scale = as
	}
	if qs := spec.QueryScale; qs != 0 {
		for i := range b.q[:n*Q] {
			b.q[i] *= qs
		}
		scale = 1
	}
	b.attnJobs, b.attnEnds = b.attnJobs[:0], b.attnEnds[:0]
	units, work := 0, 0
	for _, pc := range ps {
		k := len(pc.tokens)
		r0, r1 := pc.row, pc.row+k
		q, kk, v := b.q[r0*Q:r1*Q], b.k[r0*KV:r1*KV], b.v[r0*KV:r1*KV]
		store := pc.c.kv[l]
		var qq []byte
		if pc.c.typ == KVQ8_0 {
			qb := Q / q8Block * q8Bytes
			qq = b.qq[r0*qb : r1*qb]
		}
		store.prepare(q, kk, v, qq) // a q8_0 cache rotates them (kvq8.go)
		pc.c.put(l, pc.pos, kk, v)
		j := attnJob{m: m, kv: store, ring: pc.c.ring[l], window: spec.Window, pos: pc.pos, n: k, bidi: pc.in.bidi,
			q: q, qq: qq, out: b.att[r0*Q : r1*Q], scale: scale, tiled: store.tiled(k), sinks: w.Sinks,
			runM: b.runM[r0*cfg.Heads : r1*cfg.Heads], runS: b.runS[r0*cfg.Heads : r1*cfg.Heads]}
		u := j.units()
		units += u
		seen := pc.pos + k
		if spec.Window > 0 {
			seen = min(seen, spec.Window+k)
		}
		work += u * seen
		b.attnJobs = append(b.attnJobs, j)
		b.attnEnds = append(b.attnEnds, units)
	}
	// Hand a thread at least ~64K multiply-adds of attention (decode over a
	// short cache is less work than a wake-up is worth).
	grain := max(1, (1<<16)*units/(max(1, work)*hd*2))
	b.attn = attnBatch{jobs: b.attnJobs, ends: b.attnEnds}
	m.pool.Run(units, grain, &b.attn)
	b.attn = attnBatch{}
	clear(b.attnJobs) // drop the cache pointers
	for _, pc := range ps {
		pc.c.kv[l].finish(b.att[pc.row*Q : (pc.row+len(pc.tokens))*Q])
	}
	if spec.QueryGate {
		for t := range n {
			for h := range cfg.Heads {
				a := b.att[t*Q+h*hd : t*Q+(h+1)*hd]
				g := b.gdn.qg[t*2*Q+h*2*hd+hd : t*2*Q+(h+1)*2*hd]
				for i := range a {
					a[i] *= g[i]
				}
			}
		}
	}
	for _, sp := range b.spans {
		if err := w.O.Mul(m.pool, &b.mm, out[sp.lo*E:sp.hi*E], b.att[sp.lo*Q:sp.hi*Q], sp.hi-sp.lo); err != nil {
			return fmt.Errorf("llama: layer %d: %w", l, err)
		}
	}
	if w.OBias != nil {
		for t := range n {
			tensor.Add(out[t*E:(t+1)*E], w.OBias)
		}
	}
	return nil
}

// sigmoid sets x[i] = 1 / (1 + e^-x[i]) as ggml's CPU sigmoid computes it
// in float32 (with the C library's expf).
func sigmoid(x []float32) {
	for i, v := range x {
		x[i] = 1 / (1 + float32(math.Exp(float64(-v))))
	}
}

// attnBatch is the attention of every piece of a pass as one job for the
// pool: the units of piece i (its (token, head) or (tile, KV head) pairs,
// see attnJob) are [ends[i-1], ends[i]).
type attnBatch struct {
	jobs []attnJob
	ends []int
}

func (a *attnBatch) Do(lo, hi int) {
	start := 0
	for i := range a.jobs {
		end := a.ends[i]
		if s, e := max(lo, start), min(hi, end); s < e {
			a.jobs[i].Do(s-start, e-start)
		}
		if end >= hi {
			return
		}
		start = end
	}
}
