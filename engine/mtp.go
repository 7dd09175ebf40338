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
// cancelled).
//
// With a prompt cache (Config.PromptCacheBytes) the block's cache is
// shared as the model's is: once the block has been fed a whole prompt,
// the prompt cache keeps a snapshot of the block's cache over the
// prompt's positions under the block's own owner (the *mtpHead; see
// snapshotOwner), together with the hidden state the next position needs,
// the model's at the prompt's last position (the entry's row, where the
// model's entries keep their logits). Before the block is fed positions
// after a gap (positions before them that its cache does not hold: a
// prefix the model restored from the prompt cache), it restores the
// longest prefix of the gap that the prompt cache holds for the block,
// and with it that hidden state when the prefix is a whole snapshot: a
// session whose prompt starts with one that some session computed with the
// block gives the block the same inputs there as that session did.
//
// The rest of a gap (a prefix the model read from disk, where the block's
// snapshots never go; one that a generation without the block's drafts
// computed, or whose block snapshot was evicted; the end of a cancelled
// answer) is fed with zeros for hidden states, and so is the position
// after a restored prefix that is not a whole snapshot: the block then sees
// less of the context, and its drafts are accepted less often, but the
// answer does not change.

// mtpHead is a model's MTP block as Config.MTP opened it.
type mtpHead struct {
	b  Backend
	mu sync.Mutex // one Step at a time (Backend's rule)
	E  int        // the model's hidden width
	// pc is the model's prompt cache, which keeps the block's snapshots
	// beside the model's (nil: none).
	pc *PromptCache
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
// cache drops what it holds from pos on (a draft's positions), restores
// what it can of a gap before pos from the prompt cache, fills the rest of
// the gap with unknown hidden states, and computes positions [pos, pos+n).
func (q *mtpSeq) feed(ctx context.Context, head *mtpHead, all []int32, pos, n int, hidden []float32, buf *[]float32) error {
	E := head.E
	keep := min(commonPrefix(q.tokens, all[:pos]), q.cache.Len())
	if keep < q.cache.Len() {
		if err := q.cache.Truncate(keep); err != nil {
			return fmt.Errorf("engine: rewinding the MTP block's cache to %d: %w", keep, err)
		}
	}
	q.tokens = q.tokens[:keep]
	if keep < pos && head.pc != nil {
		got, h, err := head.pc.restore(ctx, head, q.cache, all[:pos], keep)
		if err != nil {
			return fmt.Errorf("engine: reusing a shared prompt prefix for the MTP block: %w", err)
		}
		if got > keep {
			q.tokens = append(q.tokens, all[keep:got]...)
			keep = got
			q.hAt = -1 // the hidden state at got-1 is known only with the whole snapshot
			if len(h) == E {
				q.h = append(q.h[:0], h...)
				q.hAt = got - 1
			}
		}
	}
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

// saveMTP keeps a snapshot of the block's cache over prompt, with the
// model's hidden state at its last position, in the model's prompt cache,
// when the block has been fed the whole prompt and that hidden state. A
// block that cannot be saved only costs the next session's drafts their
// inputs there: it is logged, and the generation goes on.
func (g *generation) saveMTP(prompt []int32) {
	q, head := g.s.mtp, g.m.mtp
	if head == nil || head.pc == nil || q == nil || q.cache == nil {
		return
	}
	n := len(prompt)
	if len(q.tokens) != n || commonPrefix(q.tokens, prompt) != n || q.hAt != n-1 || len(q.h) != head.E {
		return
	}
	if err := head.pc.save(head, q.cache, prompt, q.h); err != nil {
		g.m.cfg.Logger.Warn("engine: saving the MTP block's prompt in the prompt cache", "error", err)
	}
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
