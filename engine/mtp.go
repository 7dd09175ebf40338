package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/smolgo/smolgo/backend"
)

// Drafting with the model's own multi-token-prediction block (Config.MTP,
// backend.NextNer: Qwen3.5's MTP layer), as llama.cpp's draft-mtp does.
// The block predicts token x_{p+1} from the token x_p and the model's final
// hidden state h_{p-1} at the position before it (from which the model
// itself predicted x_p): one token further than the model. Its cache follows
// the session's tokens one position behind the model's hidden states: every
// step of the model (prompt chunks, and each decode step's rows that the
// answer kept) is fed to the block with the hidden states that step
// returned, so that the block's cache holds position p as (x_p, h_{p-1}).
// A draft then starts at the token about to be computed, x_n, with h_{n-1},
// and goes on with each drafted token and the block's own hidden state. The
// draft's positions in the block's cache are dropped before the next feed,
// which writes what the model kept. The checks are the draft model's (see
// draft.go): greedy answers are the model's tokens one by one, sampled ones
// follow its distribution.
//
// The last step of an answer is fed when the answer ends (not when it is
// cancelled). Positions whose hidden states this session did not compute (a
// prefix restored from the prompt cache, the end of a cancelled answer) are
// fed with zeros: the block then sees less of the context, and its drafts
// are accepted less often, but the answer does not change.

// mtpHead is a model's MTP block as Config.MTP opened it.
type mtpHead struct {
	b  Backend
	mu sync.Mutex // one Step at a time (Backend's rule)
	E  int        // the model's hidden width
}

// newMTPHead opens the MTP block of backend b.
func newMTPHead(b Backend) (*mtpHead, error) {
	nn, ok := b.(backend.NextNer)
	if !ok {
		return nil, errors.New("engine: the backend has no multi-token-prediction block (backend.NextNer)")
	}
	hs, ok := b.(HiddenStates)
	if !ok {
		return nil, errors.New("engine: multi-token prediction needs the model's hidden states (backend.HiddenStates)")
	}
	h, err := nn.NextN()
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	return &mtpHead{b: h, E: hs.HiddenDim()}, nil
}

func (h *mtpHead) close() error {
	if c, ok := h.b.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// step runs the block on one sequence's tokens with the hidden states
// before them (rows of E), writing the last row's logits and hidden state
// when asked.
func (h *mtpHead) step(ctx context.Context, c Cache, tokens []int32, hin, logits, hout []float32) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.b.Step(ctx, []Seq{{Cache: c, Tokens: tokens, Embeds: hin, Logits: logits, Hidden: hout}})
}

// mtpSeq is a session's sequence on the model's MTP block.
type mtpSeq struct {
	cache  Cache
	tokens []int32   // the tokens at the cache's positions
	h      []float32 // the model's hidden state at position hAt, the input of position hAt+1
	hAt    int       // -1: none known
}

func (q *mtpSeq) close() {
	if q != nil && q.cache != nil {
		q.cache.Close()
		q.cache = nil
	}
}

// mtpSource drafts with the MTP block for a modelDrafter: the block's
// cache follows the session (feed), and start and advance leave its
// logits in the drafter's raw row.
type mtpSource struct {
	g    *generation
	head *mtpHead
	seq  *mtpSeq
	in   []float32 // reused: input hidden rows
	hout []float32 // the block's hidden state after its last step (E)
}

// mtpSession returns the session's MTP sequence, made on first use.
func (g *generation) mtpSession() (*mtpSeq, error) {
	s := g.s
	if s.mtp == nil || s.mtp.cache == nil {
		c, err := g.m.mtp.b.NewCache()
		if err != nil {
			return nil, fmt.Errorf("engine: creating the MTP block's cache: %w", err)
		}
		s.mtp = &mtpSeq{cache: c, hAt: -1}
	}
	return s.mtp, nil
}

// feed tells the block the model computed positions [pos, pos+n) of the
// session's tokens (all: the session's tokens, at least pos+n of them),
// with hidden their rows of hidden states (nil: not known). The block's
// cache drops what it holds from pos on (a draft's positions), fills any
// gap before pos with unknown hidden states, and computes positions
// [pos, pos+n).
func (q *mtpSeq) feed(ctx context.Context, head *mtpHead, all []int32, pos, n int, hidden []float32, buf *[]float32) error {
	E := head.E
	keep := min(commonPrefix(q.tokens, all[:pos]), q.cache.Len())
	if keep < q.cache.Len() {
		if err := q.cache.Truncate(keep); err != nil {
			return fmt.Errorf("engine: rewinding the MTP block's cache to %d: %w", keep, err)
		}
	}
	q.tokens = q.tokens[:keep]
	if keep < pos { // positions computed out of its sight: no hidden states
		if err := q.feed(ctx, head, all, keep, pos-keep, nil, buf); err != nil {
			return err
		}
	}
	if n == 0 {
		return nil
	}
	in := grow(*buf, n*E)
	*buf = in
	clear(in[:E])
	if q.hAt == pos-1 && len(q.h) == E {
		copy(in[:E], q.h)
	}
	if hidden != nil {
		copy(in[E:n*E], hidden[:(n-1)*E])
	} else {
		clear(in[E : n*E])
	}
	for at := 0; at < n; {
		k := min(n-at, head.b.BatchSize())
		if err := head.step(ctx, q.cache, all[pos+at:pos+at+k], in[at*E:(at+k)*E], nil, nil); err != nil {
			return fmt.Errorf("engine: the MTP block computing positions %d..%d: %w", pos+at, pos+at+k-1, err)
		}
		q.tokens = append(q.tokens, all[pos+at:pos+at+k]...)
		at += k
	}
	q.hAt = -1
	if hidden != nil {
		q.h = append(q.h[:0], hidden[(n-1)*E:n*E]...)
		q.hAt = pos + n - 1
	}
	return nil
}

// start computes the block at the session's next position, with the token
// about to be computed (x) and the model's last hidden state, after
// feeding what the last step kept: raw then holds its logits.
func (src *mtpSource) start(ctx context.Context, x int32, raw []float32) error {
	g, q := src.g, src.seq
	E := src.head.E
	if err := src.catchUp(ctx); err != nil {
		return err
	}
	n := len(g.s.tokens)
	src.in = grow(src.in, E)
	clear(src.in[:E])
	if q.hAt == n-1 && len(q.h) == E {
		copy(src.in, q.h)
	}
	src.hout = grow(src.hout, E)
	return src.head.step(ctx, q.cache, []int32{x}, src.in[:E], raw, src.hout[:E])
}

// catchUp feeds the block the rows of the model's last step that the
// answer kept (g.hid, from position g.hidFrom), and any positions it has
// not seen.
func (src *mtpSource) catchUp(ctx context.Context) error {
	g, q := src.g, src.seq
	n := len(g.s.tokens)
	from := min(g.hidFrom, n)
	var hidden []float32
	if g.hid != nil && g.hidFrom <= n {
		hidden = g.hid
	} else {
		from = n
	}
	err := q.feed(ctx, src.head, g.s.tokens, from, n-from, hidden, &src.in)
	g.hid = nil // fed, or lost with the error
	return err
}

// advance computes the block at the next position with drafted token x and
// the block's own last hidden state: raw then holds its logits.
func (src *mtpSource) advance(ctx context.Context, x int32, raw []float32) error {
	E := src.head.E
	src.in = grow(src.in, E)
	copy(src.in, src.hout[:E])
	return src.head.step(ctx, src.seq.cache, []int32{x}, src.in[:E], raw, src.hout[:E])
}

// feedMTP feeds the block the prompt rows [pos, pos+n) the model just
// computed, with their hidden states.
func (g *generation) feedMTP(ctx context.Context, pos, n int, hidden []float32) error {
	q, err := g.mtpSession()
	if err != nil {
		return err
	}
	return q.feed(ctx, g.m.mtp, g.s.tokens, pos, n, hidden, &g.mtpIn)
}

// mtpFailed turns drafting by the MTP block off for the rest of the
// generation after err (a cancelled ctx leaves it: the generation ends).
func (g *generation) mtpFailed(ctx context.Context, err error) {
	g.hid = nil
	if ctx.Err() != nil {
		return
	}
	g.m.cfg.Logger.Warn("engine: the MTP block failed; decoding goes on without drafts", "error", err)
	g.md = nil
}
