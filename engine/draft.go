package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/smolgo/smolgo/sample"
)

// Speculative decoding with a draft model (Config.Draft): a smaller model
// of the same vocabulary proposes the next few tokens one by one, and the
// model checks them all in one step, which on a CPU costs little more than
// computing one token (a step reads the weights once for every row). The
// draft keeps its own cache per session (draftSeq), which follows the
// session's tokens: before each draft it drops what the model rejected and
// computes what is new (the accepted part of the last draft, the token
// sampled after it). On the first draft of a conversation that is the
// whole prompt, which the prompt cache shares as it does the model's.
//
// The answers are the model's alone. Greedily, the draft proposes its own
// argmax and the model keeps a drafted token only if its argmax is the same,
// so the tokens are those of decoding without a draft, one by one. Sampled,
// the draft draws each token x from its distribution q (the model's
// sampler chain, penalties, logit bias and constraint, over the draft's
// logits), and the model accepts x with probability min(1, p(x)/q(x)) under
// its own distribution p of the same chain; at the first rejection it draws
// from the rest of p, max(0, p-q) normalized, and drops the rest of the
// draft (Leviathan et al. 2023, "Fast Inference from Transformers via
// Speculative Decoding"; Chen et al. 2023). Each token then has exactly the
// distribution p, whatever the draft: a good draft only makes acceptance
// likely.
//
// A draft stops early at an end of turn, before a token the draft model is
// less sure of than Config.DraftPMin, and where the constraint allows
// nothing; one shorter than Config.DraftMin is dropped. A draft model that
// fails (not a cancelled request) turns drafting off for the rest of the
// generation, with a log line: the answer goes on without it.

// maxVocabDifference is how many more tokens one of a model and its draft
// may have than the other (llama.cpp's SPEC_VOCAB_MAX_SIZE_DIFFERENCE):
// families pad their embedding tables differently (Qwen2.5-0.5B has 151,936
// rows, Qwen2.5-7B 152,064), and the extra ids are never text. The ids both
// have must be the same tokens.
const maxVocabDifference = 128

// vocabProbe is tokenized by both models of a pair: their tokenizers must
// give the same ids, which their tables alone do not prove (merges,
// pre-tokenizer, normalization).
const vocabProbe = "Hello, world! The quick brown fox, 1234567 ünïcödé 日本語 😀 <b>code</b>\n\tdef f(x):\n    return x**2 # done."

// checkDraft reports how the vocabulary of draft differs from the one of
// the model of backend b and format f, or nil when it may draft for it.
func checkDraft(b Backend, f Format, draft *Model) error {
	if draft.b == nil {
		return errors.New("engine: the draft model does not generate (an encoder)")
	}
	tt, err := f.Tokenizer()
	if err != nil {
		return fmt.Errorf("engine: a draft model needs the model's tokenizer: %w", err)
	}
	td, err := draft.f.Tokenizer()
	if err != nil {
		return fmt.Errorf("engine: the draft model's tokenizer: %w", err)
	}
	nt, nd := tt.Len(), td.Len()
	if d := nt - nd; d > maxVocabDifference || -d > maxVocabDifference {
		return fmt.Errorf("engine: the draft model's vocabulary has %d tokens, the model's %d: more than %d apart", nd, nt, maxVocabDifference)
	}
	if d := b.Vocab() - draft.b.Vocab(); d > maxVocabDifference || -d > maxVocabDifference {
		return fmt.Errorf("engine: the draft model has %d logits per token, the model %d: more than %d apart", draft.b.Vocab(), b.Vocab(), maxVocabDifference)
	}
	et, ed := slices.Sorted(slices.Values(tt.EndOfGeneration())), slices.Sorted(slices.Values(td.EndOfGeneration()))
	if !slices.Equal(et, ed) {
		return fmt.Errorf("engine: the draft model's end-of-generation tokens are %v, the model's %v", ed, et)
	}
	for id := range int32(min(nt, nd)) {
		switch {
		case tt.Normal(id) != td.Normal(id):
			return fmt.Errorf("engine: token %d (%q) is special in one of the model (%v) and its draft (%v) only", id, tt.TokenBytes(id), !tt.Normal(id), !td.Normal(id))
		case !bytes.Equal(tt.TokenBytes(id), td.TokenBytes(id)):
			return fmt.Errorf("engine: token %d is %q for the model, %q for the draft model", id, tt.TokenBytes(id), td.TokenBytes(id))
		case f.EndOfTurn(id) != draft.f.EndOfTurn(id):
			return fmt.Errorf("engine: token %d (%q) ends a turn for one of the model (%v) and its draft (%v) only", id, tt.TokenBytes(id), f.EndOfTurn(id), draft.f.EndOfTurn(id))
		}
	}
	pt, pd := tt.Encode(vocabProbe, false), td.Encode(vocabProbe, false)
	if !slices.Equal(pt, pd) {
		i := commonPrefix(pt, pd)
		return fmt.Errorf("engine: the model and its draft tokenize %q differently from token %d on: %v against the draft's %v", vocabProbe, i, pt[i:min(len(pt), i+4)], pd[i:min(len(pd), i+4)])
	}
	return nil
}

// draftSeq is a session's sequence on its model's draft model: the
// draft's own cache, and the tokens in it.
type draftSeq struct {
	m      *Model // the draft model whose cache it is
	cache  Cache
	tokens []int32
}

func (d *draftSeq) close() {
	if d != nil && d.cache != nil {
		d.cache.Close()
		d.cache = nil
	}
}

// modelDrafter drafts one generation's tokens with the draft model.
type modelDrafter struct {
	g     *generation
	d     *Model        // the draft model
	pc    *PromptCache  // where the draft's prompts are shared (nil: nowhere)
	owner snapshotOwner // the draft's entries' owner in pc (nil: pc is the draft's own)
	seq   *draftSeq
	mtp   *mtpSource // drafting with the model's MTP block instead (d, pc, seq nil)

	sampler *sample.Sampler // the model's chain, the draft's own random stream
	greedy  bool
	cons    *constrained // the generation's constraint, with the draft's buffers
	V, Vd   int          // the model's and the draft's logits per token

	raw    []float32 // the draft's last logits (Vd)
	row    []float32 // a row of them at the model's size, biased
	q      []float32 // sampled: the draft's distribution at each drafted token, rows of V
	want   []int32   // the tokens the draft's cache must hold before drafting
	failed bool
}

// newModelDrafter prepares a generation's drafts on the draft model,
// with the session's draft cache (made on first use).
func (g *generation) newModelDrafter() (*modelDrafter, error) {
	d, s := g.m.cfg.Draft, g.s
	if s.draft == nil || s.draft.m != d {
		s.draft.close()
		c, err := d.b.NewCache()
		if err != nil {
			return nil, fmt.Errorf("engine: creating the draft model's cache: %w", err)
		}
		s.draft = &draftSeq{m: d, cache: c}
	}
	md := &modelDrafter{g: g, d: d, seq: s.draft, V: g.m.b.Vocab(), Vd: d.b.Vocab()}
	switch {
	case d.pc != nil:
		md.pc = d.pc
	case g.m.pc != nil:
		md.pc, md.owner = g.m.pc, d
	}
	md.init()
	return md, nil
}

// newMTPDrafter prepares a generation's drafts on the model's MTP block
// (mtp.go), with the session's MTP cache (made on first use).
func (g *generation) newMTPDrafter() (*modelDrafter, error) {
	q, err := g.mtpSession()
	if err != nil {
		return nil, err
	}
	V := g.m.b.Vocab()
	md := &modelDrafter{g: g, mtp: &mtpSource{g: g, head: g.m.mtp, seq: q}, V: V, Vd: V}
	md.init()
	return md, nil
}

// init sets up the drafter's sampler, constraint and rows.
func (md *modelDrafter) init() {
	g := md.g
	cfg := g.sampler.Config()
	md.greedy = cfg.Temperature <= 0
	cfg.Seed ^= 0x2545f4914f6cdd1d // its own stream, repeatable with the seed
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	md.sampler = sample.New(cfg)
	if g.cons != nil {
		md.cons = &constrained{c: g.cons.c}
	}
	md.raw = make([]float32, md.Vd)
	md.row = make([]float32, md.V)
}

// propose appends a draft of at most k tokens to input, whose one token is
// the one about to be computed (already sampled and taken).
func (md *modelDrafter) propose(ctx context.Context, input []int32, k int) ([]int32, error) {
	g := md.g
	md.want = append(append(md.want[:0], g.s.tokens...), input[0])
	if md.mtp != nil {
		// The block's positions go one further than the draft: the
		// first drafted token comes from the step at input[0].
		k = min(k, md.mtp.seq.cache.MaxLen()-len(md.want)+1)
		if k <= 0 {
			return input, nil
		}
		if err := md.mtp.start(ctx, input[0], md.raw); err != nil {
			return input, fmt.Errorf("engine: the MTP block's step: %w", err)
		}
	} else if k = min(k, md.seq.cache.MaxLen()-len(md.want)); k <= 0 {
		return input, nil
	} else if err := md.catchUp(ctx); err != nil {
		return input, err
	}
	if h, ok := md.holder(); ok {
		// The draft goes one token per step; a recurrent cache comes back
		// here when the model rejects part of it.
		if err := h.Hold(); err != nil {
			return input, fmt.Errorf("engine: holding the draft model's state: %w", err)
		}
	}
	if md.cons != nil {
		back := md.cons.c.(Marker).Mark()
		defer back()
	}
	md.sampler.CopyWindow(g.sampler)
	if !md.greedy {
		md.q = grow(md.q, k*md.V)
	}
	budget := g.budget()
	start := len(input)
	for j := range k {
		in, ok := md.next(budget - j)
		if !ok {
			break
		}
		var x int32
		if md.greedy {
			x = md.sampler.Sample(in)
		} else {
			q := md.q[j*md.V : (j+1)*md.V]
			md.sampler.Probs(in, q)
			x = md.sampler.Draw(q)
		}
		if x == sample.NoToken {
			break
		}
		if md.cons != nil && md.cons.c.Accept(x) != nil {
			break
		}
		input = append(input, x)
		if g.m.f.EndOfTurn(x) || j == k-1 {
			break
		}
		md.sampler.Accept(x)
		if md.mtp != nil {
			if err := md.mtp.advance(ctx, x, md.raw); err != nil {
				return input[:start], fmt.Errorf("engine: the MTP block's step: %w", err)
			}
			continue
		}
		if err := md.d.sched.decode(ctx, md.seq.cache, input[len(input)-1:], md.raw); err != nil {
			return input[:start], fmt.Errorf("engine: the draft model's step: %w", err)
		}
		md.seq.tokens = append(md.seq.tokens, x)
	}
	if len(input)-start < g.m.cfg.DraftMin {
		return input[:start], nil
	}
	return input, nil
}

// holder is the draft model's cache as a Holder (a recurrent draft); the
// MTP block's attention cache goes back anywhere and needs none.
func (md *modelDrafter) holder() (Holder, bool) {
	if md.mtp != nil {
		return nil, false
	}
	h, ok := md.seq.cache.(Holder)
	return h, ok
}

// next returns the draft model's last logits as a row of the model's
// vocabulary, under the logit bias and the constraint (with budget tokens
// left), or false when the draft should end there: the constraint allows
// nothing, or the draft model is less sure than DraftPMin.
func (md *modelDrafter) next(budget int) ([]float32, bool) {
	g := md.g
	in := md.row
	n := copy(in, md.raw)
	for i := n; i < len(in); i++ {
		in[i] = float32(math.Inf(-1)) // ids the draft model has no logit for
	}
	for id, b := range g.opts.LogitBias {
		in[id] += b
	}
	if md.cons != nil {
		var err error
		if in, err = md.cons.apply(in, budget); err != nil {
			return nil, false
		}
	}
	if p := g.m.cfg.DraftPMin; p > 0 && topProb(in) < float64(p) {
		return nil, false
	}
	return in, true
}

// topProb is the probability of the most likely token under softmax(l).
func topProb(l []float32) float64 {
	m := float32(math.Inf(-1))
	for _, v := range l {
		m = max(m, v)
	}
	if math.IsInf(float64(m), -1) {
		return 0
	}
	sum := 0.0
	for _, v := range l {
		sum += math.Exp(float64(v - m))
	}
	return 1 / sum
}

// catchUp makes the draft's cache hold md.want but its last token, and
// computes that one: md.raw is then the draft's prediction after want.
func (md *modelDrafter) catchUp(ctx context.Context) error {
	g, seq, want := md.g, md.seq, md.want
	promptLen := min(g.stats.PromptTokens, len(want)-1)
	common := commonPrefix(seq.tokens, want)
	if md.pc != nil && common < promptLen {
		n, _, err := md.pc.restore(ctx, md.owner, seq.cache, want[:promptLen], common)
		if err != nil {
			return fmt.Errorf("engine: reusing a shared prompt prefix for the draft model: %w", err)
		}
		if n > common {
			seq.tokens = append(seq.tokens[:common], want[common:n]...)
			common = n
		}
	}
	common = floor(seq.cache, min(common, len(want)-1))
	seq.tokens = seq.tokens[:common]
	if seq.cache.Len() > common {
		if err := seq.cache.Truncate(common); err != nil {
			return fmt.Errorf("engine: rewinding the draft model's cache to %d tokens: %w", common, err)
		}
	}
	if common < promptLen {
		if err := md.feed(ctx, want[:promptLen], true); err != nil {
			return err
		}
		if md.pc != nil {
			if err := md.pc.save(md.owner, seq.cache, want[:promptLen], md.raw); err != nil {
				return fmt.Errorf("engine: saving the draft model's prompt in the prompt cache: %w", err)
			}
		}
	}
	return md.feed(ctx, want, false)
}

// feed computes upto's tokens after those the draft's cache holds, in the
// draft model's chunks, leaving the last one's logits in md.raw. A
// prompt's recurrent state is kept where the model's is (see prefill).
func (md *modelDrafter) feed(ctx context.Context, upto []int32, prompt bool) error {
	seq := md.seq
	_, recurrent := seq.cache.(Checkpointer)
	recurrent = recurrent && prompt
	every := md.d.cfg.CheckpointInterval
	for len(seq.tokens) < len(upto) {
		pos := len(seq.tokens)
		end := len(upto)
		if recurrent {
			end = md.g.checkpointEnd(pos, end, every)
		}
		n, err := md.d.sched.prefill(ctx, seq.cache, upto[pos:end], md.raw)
		if err != nil {
			return fmt.Errorf("engine: the draft model computing tokens %d..%d: %w", pos, len(upto)-1, err)
		}
		seq.tokens = append(seq.tokens, upto[pos:pos+n]...)
		if recurrent && md.g.checkpointAt(len(seq.tokens), len(upto), every) {
			if err := checkpoint(seq.cache); err != nil {
				return fmt.Errorf("engine: checkpoint of the draft model at %d tokens: %w", len(seq.tokens), err)
			}
		}
	}
	return nil
}

// Marker is implemented by constraints that can come back to where they
// are (package grammar's Constraint): a draft model drafts under the
// constraint, which then goes back for the model to check the draft.
// Without it a constrained generation is not drafted by a draft model.
type Marker interface {
	// Mark returns a function that brings the constraint back to this
	// point; it is called once, after a few tokens.
	Mark() (back func())
}

// verify checks drafted token x, which the draft drew from q, against the
// model's row of logits: it returns x and true when the rejection rule
// accepts it, else a token drawn from the rest of the model's distribution
// and false. Like pick, it applies the logit bias and the constraint,
// makes the constraint accept the token and records its log-probability.
func (g *generation) verify(logits []float32, x int32, q []float32) (int32, bool, error) {
	in, err := g.constrain(logits)
	if err != nil {
		return 0, false, err
	}
	p := grow(g.probs, len(in))
	g.probs = p
	if !g.sampler.Probs(in, p) {
		return 0, false, fmt.Errorf("engine: no token can be sampled at position %d: every logit is -Inf or NaN", len(g.s.tokens))
	}
	accept := g.m.acceptRule
	if accept == nil {
		accept = leviathan
	}
	tok, ok := x, accept(float64(p[x]), float64(q[x]), g.sampler.Uniform())
	if !ok {
		// The rest of p: what q did not already propose.
		for i, pi := range p {
			p[i] = max(0, pi-q[i])
		}
		if tok = g.sampler.Draw(p); tok == sample.NoToken {
			// p and q agree to rounding: a rejection that had no chance.
			g.sampler.Probs(in, p)
			tok = g.sampler.Draw(p)
		}
	}
	if err := g.record(tok, logits); err != nil {
		return 0, false, err
	}
	return tok, ok, nil
}

// leviathan is the acceptance rule of speculative sampling: a token the
// draft drew with probability q is kept with probability min(1, p/q), u
// being uniform in [0, 1).
func leviathan(p, q, u float64) bool { return u*q < p }
