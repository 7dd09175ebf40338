package llama

import (
	"context"
	"fmt"
	"math"

	"github.com/smolgo/smolgo/backend"

	"github.com/smolgo/smolgo/tensor"
)

// One forward pass computes several sequences at once (continuous batching):
// their rows (one per new token) are stacked, every weight product runs over
// the stack so each weight block is read once per pass for all of them, and
// only RoPE, the KV store and attention look at which sequence a row belongs
// to. Forward is the one-sequence case of the same code.
//
// A sequence's numbers do not depend on its neighbours. The products are the
// only place where rows meet, and quant's kernels give a row the same bits in
// any product of fewer than gemmRows rows (the four-token kernels compute what
// MatVec does); a product of gemmRows or more goes through the K-quant GEMM,
// which sums in another order. So the rows of "small" sequences (fewer than
// gemmRows new tokens: decode steps, drafts) share product calls of at most
// maxSmallRows rows, and each larger sequence (a prompt chunk) gets product
// calls of its own, exactly the calls it would get alone.

const (
	// gemmRows is the product size from which quant's K-quant MatMul
	// switches to its GEMM (quant's gemmMinTokens).
	gemmRows = 24
	// maxSmallRows is the most rows of small sequences one product call
	// takes: just under gemmRows.
	maxSmallRows = gemmRows - 1
)

// job is one sequence's work in Forward or Step: tokens to append to c and
// where the logits of the last len(out)/Vocab of them go.
type job struct {
	c      *Cache
	tokens []int32
	out    []float32
	hidden []float32 // the final hidden states of the last len(hidden)/Embd tokens (Seq.Hidden)
	in     input     // rows given in place of token embeddings (Seq.Embeds, Bidirectional, Pos)
	start  int       // c.Len() before the call
	done   int       // tokens already run
}

// piece is one sequence's part of a pass: tokens placed at positions pos...
// in the rows [row, row+len(tokens)) of the pass's buffers, and where the
// logits of its last len(out)/Vocab tokens go (nil: none).
type piece struct {
	c      *Cache
	tokens []int32
	pos    int
	out    []float32
	hidden []float32 // the hidden states of its last len(hidden)/Embd tokens
	in     input     // its part of the job's input rows
	row    int
	// keepFrom, keepTo: the recurrent layers keep their state after each
	// of the tokens [keepFrom, keepTo) of the piece (rows whose logits
	// were asked for, so that a draft's rejected tail can be dropped:
	// state.go).
	keepFrom, keepTo int
}

// input is what a sequence gives besides token ids (backend.Seq's Embeds,
// Bidirectional and Pos): rows in place of the tokens' embeddings, whether
// they attend to each other both ways, and their rotary positions. The
// zero input is plain tokens at their places in the cache.
type input struct {
	embeds []float32          // len(tokens) rows of inputWidth; nil: the tokens' embeddings
	bidi   bool               // the rows see each other in both directions (one piece)
	pos    []backend.Position // per row; nil: the row's place in the cache
}

// slice returns the input of rows [lo, hi) of rows W wide.
func (in input) slice(lo, hi, W int) input {
	out := input{bidi: in.bidi}
	if in.embeds != nil {
		out.embeds = in.embeds[lo*W : hi*W]
	}
	if in.pos != nil {
		out.pos = in.pos[lo:hi]
	}
	return out
}

// inputWidth is the width of a row given in place of a token's embedding:
// Embd, times 1 + Arch.Deepstack with deepstack slices.
func (m *CPU) inputWidth() int { return m.Config.Embd * (1 + m.Arch.Deepstack) }

// addDeepstack adds, after block l, slice l+1 of each given input row to
// its hidden state (Arch.Deepstack); token rows get nothing.
func (m *CPU) addDeepstack(b *buffers, ps []piece, l int) {
	E, W := m.Config.Embd, m.inputWidth()
	for _, p := range ps {
		if p.in.embeds == nil {
			continue
		}
		for t := range p.tokens {
			r := p.row + t
			tensor.Add(b.x[r*E:(r+1)*E], p.in.embeds[t*W+(l+1)*E:t*W+(l+2)*E])
		}
	}
}

// span is a range of rows that one product call covers.
type span struct{ lo, hi int }

// run runs jobs (already checked) in passes of at most batch tokens: each
// job's tokens are cut at multiples of batch from its first, as Forward
// always has, and packed into passes in order. On any error every cache goes
// back to its length before the call.
func (m *CPU) run(ctx context.Context, b *buffers, jobs []job, batch int) error {
	for i := range jobs {
		j := &jobs[i]
		j.start, j.done = j.c.n, 0
		j.c.reserve(j.start + len(j.tokens))
		j.c.beginStep()
	}
	V := m.Config.Vocab
	for {
		ps, room := b.pieces[:0], batch
		for i := range jobs {
			j := &jobs[i]
			n := len(j.tokens)
			take := min(n-j.done, batch)
			if take == 0 || take > room {
				continue
			}
			p := piece{c: j.c, tokens: j.tokens[j.done : j.done+take], pos: j.start + j.done,
				in: j.in.slice(j.done, j.done+take, m.inputWidth())}
			// The logits asked for are the last R rows of the job; this
			// piece holds the ones in [max(first, done), done+take).
			first := n - len(j.out)/V
			if lo := max(first, j.done); lo < j.done+take {
				p.out = j.out[(lo-first)*V : (j.done+take-first)*V]
			}
			E := m.Config.Embd
			first = n - len(j.hidden)/E
			if lo := max(first, j.done); lo < j.done+take {
				p.hidden = j.hidden[(lo-first)*E : (j.done+take-first)*E]
			}
			// Keep the recurrent state after every row asked for but the
			// job's last (whose state is the cache's own).
			if rows := len(j.out) / V; j.c.recurrent() && rows > 1 && rows-1 <= maxStepPoints {
				lo, hi := max(n-rows, j.done), min(n-1, j.done+take)
				if lo < hi {
					p.keepFrom, p.keepTo = lo-j.done, hi-j.done
				}
			}
			ps = append(ps, p)
			j.done += take
			room -= take
		}
		b.pieces = ps
		if len(ps) == 0 {
			return nil
		}
		if err := m.pass(ctx, b, ps); err != nil {
			for i := range jobs {
				if jobs[i].done > 0 {
					jobs[i].c.failStep() // some recurrent state may have moved on
				}
				jobs[i].c.n = jobs[i].start
			}
			return err
		}
	}
}

// layout places entries of counts[i] rows (0 for none) in rows[i]: the small
// ones (fewer than gemmRows) first, in order, then the others, and returns
// the product calls over them: the small rows cut into even calls of at most
// maxSmallRows, then one call per large entry.
func layout(counts, rows []int, spans []span) []span {
	r := 0
	for i, n := range counts {
		if n > 0 && n < gemmRows {
			rows[i] = r
			r += n
		}
	}
	spans = spans[:0]
	if small := r; small > 0 {
		k := (small + maxSmallRows - 1) / maxSmallRows
		for j := range k {
			spans = append(spans, span{small * j / k, small * (j + 1) / k})
		}
	}
	for i, n := range counts {
		if n >= gemmRows {
			rows[i] = r
			spans = append(spans, span{r, r + n})
			r += n
		}
	}
	return spans
}

// pass runs one forward pass over pieces of distinct caches, at most the
// model's batch size in all, and grows each cache by its piece.
func (m *CPU) pass(ctx context.Context, b *buffers, ps []piece) error {
	cfg := &m.Config
	E := cfg.Embd
	n := 0
	b.counts, b.rows = b.counts[:0], b.rows[:0]
	for _, p := range ps {
		n += len(p.tokens)
		b.counts = append(b.counts, len(p.tokens))
		b.rows = append(b.rows, 0)
	}
	b.ensure(m, n)
	b.spans = layout(b.counts, b.rows, b.spans)
	x := b.x[:n*E]
	scale := m.Arch.EmbedScale
	for i := range ps {
		p := &ps[i]
		p.row = b.rows[i]
		for t, tok := range p.tokens {
			r := p.row + t
			xr := x[r*E : (r+1)*E]
			if p.in.embeds != nil {
				// Rows given as they are: an image's rows are not scaled
				// as token embeddings are (llama.cpp scales only tokens).
				W := m.inputWidth()
				copy(xr, p.in.embeds[t*W:t*W+E])
			} else {
				if err := m.embd.Row(int(tok), xr); err != nil {
					return fmt.Errorf("llama: embedding: %w", err)
				}
				if scale != 0 && scale != 1 {
					for e := range xr {
						xr[e] *= scale
					}
				}
			}
			for k, rc := range m.ropes {
				half := rc.Dims / 2
				cos, sin := b.cos[k][r*half:(r+1)*half], b.sin[k][r*half:(r+1)*half]
				if p.in.pos != nil {
					q := p.in.pos[t]
					rc.AnglesAt(int(q.T), int(q.Y), int(q.X), cos, sin)
				} else {
					rc.Angles(p.pos+t, cos, sin)
				}
			}
		}
	}
	for l := range m.layers {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := m.layer(b, ps, l, n); err != nil {
			return err
		}
		if l < m.Arch.Deepstack {
			m.addDeepstack(b, ps, l)
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, p := range ps {
		p.c.n = p.pos + len(p.tokens)
	}
	m.hiddenStates(b, ps)
	return m.logits(b, ps)
}

// hiddenStates writes the final hidden states the pieces ask for: the
// output norm of their last rows, the vectors the logits are projected
// from (what a decoder's embeddings are pooled from).
func (m *CPU) hiddenStates(b *buffers, ps []piece) {
	E := m.Config.Embd
	for _, p := range ps {
		k := len(p.hidden) / E
		first := p.row + len(p.tokens) - k
		for t := range k {
			tensor.RMSNorm(p.hidden[t*E:(t+1)*E], b.x[(first+t)*E:(first+t+1)*E], m.outNorm, m.Config.RMSEps)
		}
	}
}

// logits writes the logits of the pieces that ask for them: final norm and
// output projection of those rows only, grouped as the layers' products.
func (m *CPU) logits(b *buffers, ps []piece) error {
	cfg := &m.Config
	E, V := cfg.Embd, cfg.Vocab
	b.counts = b.counts[:0]
	for _, p := range ps {
		b.counts = append(b.counts, len(p.out)/V)
	}
	b.spans = layout(b.counts, b.rows, b.spans)
	if len(b.spans) == 0 {
		return nil
	}
	small := 0
	for i, p := range ps {
		k := b.counts[i]
		if k < gemmRows {
			small += k
		}
		first := p.row + len(p.tokens) - k
		for t := range k {
			o := (b.rows[i] + t) * E
			tensor.RMSNorm(b.xb[o:o+E], b.x[(first+t)*E:(first+t+1)*E], m.outNorm, cfg.RMSEps)
		}
	}
	// A call that is one piece's rows writes straight into its logits;
	// calls shared by several pieces go through b.logits.
	b.logits = grow(b.logits, small*V)
	for _, s := range b.spans {
		dst := b.logits[min(s.lo, small)*V : min(s.hi, small)*V]
		for i, p := range ps {
			if b.counts[i] > 0 && b.rows[i] == s.lo && b.rows[i]+b.counts[i] == s.hi {
				dst = p.out
				b.counts[i] = -b.counts[i] // written
			}
		}
		if err := m.output.Mul(m.pool, &b.mm, dst, b.xb[s.lo*E:s.hi*E], s.hi-s.lo); err != nil {
			return fmt.Errorf("llama: output: %w", err)
		}
	}
	for i, p := range ps {
		if k := b.counts[i]; k > 0 {
			copy(p.out, b.logits[b.rows[i]*V:(b.rows[i]+k)*V])
		}
	}
	if c := m.Arch.LogitScale; c != 0 && c != 1 {
		inv := 1 / c // as llama.cpp scales them
		for _, p := range ps {
			tensor.Scale(p.out, inv)
		}
	}
	if c := m.Arch.LogitSoftcap; c > 0 {
		for _, p := range ps {
			softcap(p.out, c)
		}
	}
	return nil
}

// softcap maps every logit z to c·tanh(z/c), as ggml does it: a scale by
// 1/c, tanhf, a scale by c, each rounded to float32.
func softcap(z []float32, c float32) {
	inv := 1 / c
	for i, v := range z {
		z[i] = float32(math.Tanh(float64(v*inv))) * c
	}
}

// pass is what the layers' kinds see of one forward pass: the work
// buffers (with the product calls' row spans), the pieces of the sequences
// in it and the number of rows.
type pass struct {
	b  *buffers
	ps []piece
	n  int
}

// A sublayer is the CPU step of a mixer or FFN kind: it reads the pass's
// normed input rows in and writes its output rows to out (n rows of Embd
// values each), using the pass's buffers and the pieces' caches.
type sublayer interface {
	forward(m *CPU, p *pass, l int, in, out []float32) error
}

// layer runs block l on the n rows of the pass: the skeleton of Arch
// around the layer's mixer and feed-forward steps.
func (m *CPU) layer(b *buffers, ps []piece, l, n int) error {
	cfg := &m.Config
	w := &m.layers[l]
	st := &m.steps[l]
	E := cfg.Embd
	x, xb, out := b.x[:n*E], b.xb[:n*E], b.proj[:n*E]
	p := &b.pass // in the buffers: a pass on the stack would escape through the interface calls
	*p = pass{b: b, ps: ps, n: n}

	tensor.RMSNormRows(xb, x, w.AttnNorm, cfg.RMSEps)
	if err := st.mixer.forward(m, p, l, xb, out); err != nil {
		return err
	}
	if w.PostAttnNorm != nil {
		tensor.RMSNormRows(out, out, w.PostAttnNorm, cfg.RMSEps)
	}
	m.residual(x, out)

	tensor.RMSNormRows(xb, x, w.FFNNorm, cfg.RMSEps)
	if err := st.ffn.forward(m, p, l, xb, out); err != nil {
		return err
	}
	if w.PostFFNNorm != nil {
		tensor.RMSNormRows(out, out, w.PostFFNNorm, cfg.RMSEps)
	}
	m.residual(x, out)
	return nil
}

// residual adds a block's output to the residual stream x, scaled by
// Arch.ResidualScale where it is set.
func (m *CPU) residual(x, out []float32) {
	if s := m.Arch.ResidualScale; s != 0 && s != 1 {
		tensor.Scale(out, s)
	}
	tensor.Add(x, out)
}
