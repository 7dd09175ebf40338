package bert

import (
	"math"
	"sync"

	"github.com/smolgo/smolgo/backend"
	"github.com/smolgo/smolgo/tensor"
)

// The pass, as llama.cpp's graph (src/models/bert.cpp) computes it:
//
//	x = LayerNorm(token_embd[t] + token_types[0] + position_embd[p])
//	for each layer:
//	    q, k, v = x·Wq + bq, x·Wk + bk, x·Wv + bv
//	    a = softmax(q·kᵀ/√d) · v   per head, over the sequence's own tokens
//	    x = LayerNorm(a·Wo + bo + x)           (attn_output_norm)
//	    x = LayerNorm(gelu(x·Wup + bup)·Wdown + bdown + x)   (layer_output_norm)
//	pool x: mean, the first token (CLS) or the last;
//	rank: s = cls_out·tanh(cls·x_cls + b) + b_out
//
// Every token has type 0 ("sentence A"), as in llama.cpp (which does not
// pass token types), also for a reranker's document. Attention is
// llama.cpp's flash attention for a batch of 64 tokens or more: keys and
// values rounded to float16 (the cast llama.cpp makes for an encoder
// without a cache), scores and the weighted sum in float32.
//
// The last layer computes only the rows pooling reads (llama.cpp's
// inp_out_ids): every row of a mean-pooled sequence, one row otherwise.
// Its keys and values still come from every token.

// buffers are an encoder's work memory, grown to the largest pass.
type buffers struct {
	seqs []seqSpan
	x    []float32 // [n × E] the hidden state
	q    []float32 // [n × E]
	k    []float32 // [n × E], then per head [seq][head][token × hd] (khead)
	v    []float32
	att  []float32 // [n × E] attention output
	proj []float32 // [n × E]
	up   []float32 // [n × FFN]
	sc   []float32 // attention scratch, per (sequence, head)
	pool []float32 // pooled rows [seqs × E], and the head's hidden layer
	rows []int     // the last layer's output rows
	s    scratch
	attn attnJob
}

func (b *buffers) ensure(cfg *Config, n int) {
	E, F := cfg.Embd, cfg.FFN
	grow := func(p *[]float32, size int) {
		if cap(*p) < size {
			*p = make([]float32, size)
		}
		*p = (*p)[:size]
	}
	grow(&b.x, n*E)
	grow(&b.q, n*E)
	grow(&b.k, n*E)
	grow(&b.v, n*E)
	grow(&b.att, n*E)
	grow(&b.proj, n*E)
	grow(&b.up, n*F)
	grow(&b.pool, 2*len(b.seqs)*E)
}

// embed writes the first hidden state of every token of the pass.
func (e *Encoder) embed(batch []backend.EncodeSeq, n int) error {
	b := &e.buf
	E := e.cfg.Embd
	for i, sp := range b.seqs {
		for p, tok := range batch[i].Tokens {
			x := b.x[(sp.row+p)*E : (sp.row+p+1)*E]
			if err := e.w.Embd.Row(int(tok), x); err != nil {
				return err
			}
			if e.w.Types != nil {
				tensor.Add(x, e.w.Types)
			}
			pos := b.proj[:E]
			if err := e.w.Positions.Row(p, pos); err != nil {
				return err
			}
			for j := range x {
				x[j] = pos[j] + x[j]
			}
			tensor.LayerNorm(x, x, e.w.EmbdNorm.W, e.w.EmbdNorm.B, e.cfg.Eps)
		}
	}
	return nil
}

// layer runs block l over the n rows of the pass; in the last layer only
// the outs rows pooling reads go past attention, packed to the front of
// the buffers.
func (e *Encoder) layer(l, n, outs int, last bool) error {
	b := &e.buf
	ops := &e.layers[l]
	w := &e.w.Layers[l]
	E, F := e.cfg.Embd, e.cfg.FFN
	x := b.x[:n*E]
	if ops.qkv != nil {
		bias := func(lo, hi int) []float32 {
			if ops.qkv.bias == nil {
				return nil
			}
			return ops.qkv.bias[lo:hi]
		}
		if err := ops.qkv.p.MulInto(e.pool, &b.s.pack, x, n,
			tensor.PackedOut{Dst: b.q, Bias: bias(0, E)}, tensor.PackedOut{Dst: b.k, Bias: bias(E, 2*E)},
			tensor.PackedOut{Dst: b.v, Bias: bias(2*E, 3*E)}); err != nil {
			return err
		}
	} else {
		for _, p := range []struct {
			l   *linear
			dst []float32
		}{{ops.q, b.q}, {ops.k, b.k}, {ops.v, b.v}} {
			if err := p.l.mul(e.pool, &b.s, p.dst, x, n, false); err != nil {
				return err
			}
		}
	}
	m := n // rows past attention
	if last {
		m = outs
	}
	if err := e.attention(n, last); err != nil {
		return err
	}
	// From here on, row i of att is output row i; in the last layer the
	// residual rows are gathered to match.
	if last && m != n {
		for i, r := range b.rows {
			copy(b.x[i*E:(i+1)*E], b.x[r*E:(r+1)*E])
		}
	}
	x = b.x[:m*E]
	proj := b.proj[:m*E]
	if err := ops.o.mulAdd(e.pool, &b.s, proj, b.att[:m*E], m, false, x); err != nil {
		return err
	}
	for t := range m {
		tensor.LayerNorm(x[t*E:(t+1)*E], proj[t*E:(t+1)*E], w.AttnNorm.W, w.AttnNorm.B, e.cfg.Eps)
	}
	up := b.up[:m*F]
	if err := ops.up.mul(e.pool, &b.s, up, x, m, true); err != nil {
		return err
	}
	if err := ops.down.mulAdd(e.pool, &b.s, proj, up, m, false, x); err != nil {
		return err
	}
	for t := range m {
		tensor.LayerNorm(x[t*E:(t+1)*E], proj[t*E:(t+1)*E], w.OutNorm.W, w.OutNorm.B, e.cfg.Eps)
	}
	return nil
}

// attention computes b.att for the rows of every sequence (in the last
// layer only its output rows, packed in b.rows' order), each head over the
// sequence's own keys and values (tensor.FullAttention), the heads shared
// out among the pool's threads.
func (e *Encoder) attention(n int, last bool) error {
	b := &e.buf
	E := e.cfg.Embd
	tensor.RoundF16s(b.k[:n*E], b.k[:n*E])
	tensor.RoundF16s(b.v[:n*E], b.v[:n*E])
	b.rows = b.rows[:0]
	scratch := 0
	for i := range b.seqs {
		sp := &b.seqs[i]
		if last {
			sp.outRow = len(b.rows)
			for r := sp.attnLo; r < sp.attnLo+sp.attnN; r++ {
				b.rows = append(b.rows, sp.row+r)
			}
		} else {
			sp.outRow = sp.row
		}
		sp.scratch = scratch
		scratch += e.cfg.Heads * tensor.FullAttentionScratch(sp.n, e.cfg.HeadDim)
	}
	if cap(b.sc) < scratch {
		b.sc = make([]float32, scratch)
	}
	b.attn = attnJob{e: e, last: last}
	e.pool.Run(len(b.seqs)*e.cfg.Heads, 1, &b.attn)
	err := b.attn.err
	b.attn = attnJob{}
	return err
}

// attnJob is the attention of a pass as the pool's work: unit u is head
// u%Heads of sequence u/Heads.
type attnJob struct {
	e    *Encoder
	last bool
	mu   sync.Mutex
	err  error
}

func (j *attnJob) Do(lo, hi int) {
	e := j.e
	b := &e.buf
	E, H, hd := e.cfg.Embd, e.cfg.Heads, e.cfg.HeadDim
	scale := float32(1 / math.Sqrt(float64(hd)))
	for u := lo; u < hi; u++ {
		sp := &b.seqs[u/H]
		h := u % H
		size := tensor.FullAttentionScratch(sp.n, hd)
		scratch := b.sc[sp.scratch+h*size : sp.scratch+(h+1)*size]
		q0, nq := 0, sp.n
		if j.last {
			q0, nq = sp.attnLo, sp.attnN
		}
		kv := sp.row*E + h*hd
		err := tensor.FullAttention(b.att[sp.outRow*E+h*hd:], E, b.q[(sp.row+q0)*E+h*hd:], E, nq,
			b.k[kv:], b.v[kv:], E, sp.n, hd, scale, scratch)
		if err != nil {
			j.mu.Lock()
			j.err = err
			j.mu.Unlock()
		}
	}
}

// poolOut writes each sequence's embedding or scores from the last layer's
// output rows.
func (e *Encoder) poolOut(outs int) error {
	b := &e.buf
	E := e.cfg.Embd
	for _, sp := range b.seqs {
		x := b.x[sp.outRow*E : (sp.outRow+sp.attnN)*E]
		switch sp.pool {
		case backend.PoolMean:
			inv := 1 / float32(sp.n)
			for j := range E {
				var s float64
				for t := range sp.n {
					s += float64(x[t*E+j])
				}
				sp.out[j] = float32(s) * inv
			}
		case backend.PoolCLS, backend.PoolLast:
			copy(sp.out, x[:E])
		case backend.PoolRank:
			h := x[:E]
			if e.cls != nil {
				hid := b.pool[:E]
				if err := e.cls.mul(e.pool, &b.s, hid, h, 1, false); err != nil {
					return err
				}
				for j, v := range hid {
					hid[j] = float32(math.Tanh(float64(v)))
				}
				h = hid
			}
			if err := e.clsOut.mul(e.pool, &b.s, sp.out, h, 1, false); err != nil {
				return err
			}
		}
	}
	return nil
}
