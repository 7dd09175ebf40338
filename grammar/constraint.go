package grammar

import (
	"context"
	"errors"
	"fmt"
	"math"
)

// ErrEnded is returned by Constraint.Accept after an end-of-generation token.
var ErrEnded = errors.New("grammar: the output has already ended")

// maxCachedMasks bounds the masks a Constraint keeps, one per state: for a
// 128K vocabulary 128 KB each plus at most 256 KB of ids (so at most 12 MB,
// usually far less).
const maxCachedMasks = 32

// Constraint applies a Grammar to one generation, token by token. Before
// each sampling step, Allow says which tokens may come next; after it,
// Accept records the token that was picked. A Constraint is not safe for
// concurrent use; make one per generation (they are cheap: the compiled
// Grammar and the Vocab are shared).
//
// Allow walks the vocabulary trie together with the grammar's automaton,
// cutting every subtree whose prefix the grammar rejects, and remembers the
// resulting mask per automaton state: inside a JSON string, for instance,
// every content token leads back to the same state, so the mask is computed
// once per string.
type Constraint struct {
	v     *Vocab
	m     *machine
	start int32
	state int32
	ended bool
	n     int // bytes accepted so far

	walk  []int32
	saved []float32 // Apply's buffer
	cache map[maskKey]*maskEntry
	order []maskKey // cached masks, oldest first

	budget // Limit's state (budget.go)

	ctx   context.Context // SetContext's; nil: never cancelled
	spare *maskEntry      // a mask not kept in the cache, for reuse
	none  *maskEntry      // the empty mask
	err   error           // why the last mask allows nothing (Err)
	marks int             // marks not yet rewound (Mark): no rebase meanwhile
}

// ErrTooAmbiguous is wrapped by Err when the output cannot go on because
// finding any token would cost more than a mask may (eight times its
// budget): the grammar is too ambiguous to follow.
// Rewrite it so that fewer alternatives overlap (for instance [^ ]* instead
// of [^"]* before a space).
var ErrTooAmbiguous = errors.New("grammar: the grammar is too ambiguous to follow here")

// SetContext makes Allow and Apply stop when ctx is done: a mask that is
// expensive to compute (a cold cache, a large grammar) then allows nothing,
// and Err returns ctx.Err(). A server passes the request's context, so
// that a client that hangs up frees its slot at once.
func (c *Constraint) SetContext(ctx context.Context) { c.ctx = ctx }

// Err says why the last Allow or Apply allowed no token at all, when it was
// not the grammar itself: the context of SetContext ended, or the grammar
// was too ambiguous to follow (ErrTooAmbiguous). It is nil otherwise.
func (c *Constraint) Err() error { return c.err }

// maskKey names a cached mask: the state, and the most tokens the next
// state may need to finish (noCap: no limit).
type maskKey struct{ state, cap int32 }

// maskEntry is the cached answer of Allow for one state, in two forms: the
// mask, and the shorter of the lists of allowed and disallowed ids (what
// Apply writes).
type maskEntry struct {
	allowed []bool
	listed  bool // ids and few are set (by the first Apply)
	ids     []int32
	few     bool // ids lists the allowed tokens, else the disallowed ones
	count   int  // allowed tokens
}

// list fills ids and few.
func (e *maskEntry) list() {
	e.few = e.count <= len(e.allowed)/2
	e.ids = e.ids[:0]
	for id, ok := range e.allowed {
		if ok == e.few {
			e.ids = append(e.ids, int32(id))
		}
	}
	e.listed = true
}

// NewConstraint returns a Constraint that matches g over the tokens of v.
func (g *Grammar) NewConstraint(v *Vocab) *Constraint {
	c := &Constraint{v: v, m: newMachine(g), walk: make([]int32, v.maxDepth+1), cache: map[maskKey]*maskEntry{}}
	c.budget.init(g, v)
	c.start = c.m.start()
	c.state = c.start
	return c
}

// Mark returns a function that brings the constraint back to where it is
// now: the output accepted so far and the limit. A speculative decoder
// drafts tokens under the constraint (Apply, then Accept for each), goes
// back, and lets the tokens that are checked be accepted again. Until the
// function is called, the automaton is not started over when it outgrows
// its bounds (which would renumber the state the mark holds), so call it
// after a few tokens, and once.
func (c *Constraint) Mark() (back func()) {
	state, ended, n, limit := c.state, c.ended, c.n, c.limit
	c.marks++
	done := false
	return func() {
		if done {
			return
		}
		done = true
		c.state, c.ended, c.n, c.limit = state, ended, n, limit
		c.marks--
	}
}

// Reset starts the constraint over, for a new generation with the same
// grammar (cached masks are kept; the limit is removed).
func (c *Constraint) Reset() {
	c.state, c.ended, c.n, c.limit = c.start, false, 0, 0
}

// Allow sets mask[id] to whether token id may come next: its bytes keep
// the output a valid prefix of the grammar's language, or it is an
// end-of-generation token and the output is complete. mask must have
// Vocab.Len() entries (extra entries are set to false; a shorter mask
// receives only its part). After an end-of-generation token nothing is
// allowed.
func (c *Constraint) Allow(mask []bool) {
	if c.ended {
		clear(mask)
		return
	}
	n := copy(mask, c.entry().allowed)
	clear(mask[n:])
}

// Apply sets the logits of the tokens that may not come next to -Inf, so
// that any sampler picks an allowed token, and returns how many are
// allowed: Allow and the masking in one call, for generation loops. It
// writes only the shorter of the allowed and disallowed lists, so it costs
// little more than Allow. len(logits) must be Vocab.Len().
func (c *Constraint) Apply(logits []float32) int {
	negInf := float32(math.Inf(-1))
	if c.ended {
		for i := range logits {
			logits[i] = negInf
		}
		return 0
	}
	e := c.entry()
	if !e.listed {
		e.list()
	}
	if !e.few {
		for _, id := range e.ids {
			logits[id] = negInf
		}
		return e.count
	}
	c.saved = c.saved[:0]
	for _, id := range e.ids {
		c.saved = append(c.saved, logits[id])
	}
	for i := range logits {
		logits[i] = negInf
	}
	for i, id := range e.ids {
		logits[id] = c.saved[i]
	}
	return e.count
}

// entry returns the mask of the current state under the current limit,
// computing it if needed.
func (c *Constraint) entry() *maskEntry {
	if c.m.full() && c.marks == 0 {
		c.state = c.m.rebase(c.state)
		c.start = c.m.start()
		clear(c.cache)
		c.order = c.order[:0]
		c.budget.forget()
	}
	key := maskKey{c.state, noCap}
	if c.limit > 0 {
		// Tokens are allowed when the state after them can finish in
		// limit-2 tokens (the token itself and the end of generation take
		// the other two); when every allowed token's state can, the limit
		// changes nothing.
		key.cap = int32(max(c.limit-2, -1))
		if u := c.most(c.state); u >= 0 && u <= key.cap {
			key.cap = noCap
		}
	}
	if e, ok := c.cache[key]; ok {
		return e
	}
	c.err = nil
	if c.ctx != nil && c.ctx.Err() != nil {
		c.err = c.ctx.Err()
		return c.empty()
	}
	var e *maskEntry
	if c.spare != nil {
		e, c.spare = c.spare, nil
		clear(e.allowed)
	} else if len(c.order) >= maxCachedMasks {
		old := c.order[0]
		c.order = append(c.order[:0], c.order[1:]...)
		e = c.cache[old]
		delete(c.cache, old)
		clear(e.allowed)
	} else {
		e = &maskEntry{allowed: make([]bool, c.v.size)}
	}
	var most, least int32
	c.m.resetBudget()
	e.count, most, least = c.fill(e.allowed, key.cap)
	if c.err != nil || c.m.truncated {
		// Cut short (the context ended, or the mask's budget ran out):
		// usable for this token, but not worth keeping.
		c.remember(key, e, false)
		if e.count == 0 && c.err == nil {
			c.err = fmt.Errorf("%w (the mask took more than its budget of work)", ErrTooAmbiguous)
		}
		if c.err != nil {
			clear(e.allowed)
			e.count = 0
		}
		e.listed = false
		return e
	}
	if e.count == 0 && c.m.ambiguous {
		c.err = fmt.Errorf("%w: every way forward has more than %d parses at once (after %d bytes)", ErrTooAmbiguous, MaxStacks, c.n)
	}
	if key.cap != noCap {
		c.setMost(c.state, most)
		if most <= key.cap {
			key.cap = noCap // the same mask as without a limit
		} else if e.count == 0 && least < noSpelling {
			// The budget was already too small when the limit was set: the
			// value cannot close in time. Take the quickest way towards
			// the end instead of allowing nothing.
			key.cap = least
			clear(e.allowed)
			e.count, _, _ = c.fill(e.allowed, least)
		} else if e.count == 0 {
			key.cap = noCap
			e.count, _, _ = c.fill(e.allowed, noCap)
		}
	}
	e.listed = false
	c.remember(key, e, true)
	return e
}

// remember caches e as the mask of key, or (keep false) sets it aside for
// reuse by the next mask computed.
func (c *Constraint) remember(key maskKey, e *maskEntry, keep bool) {
	if !keep {
		c.spare = e
		return
	}
	c.cache[key] = e
	c.order = append(c.order, key)
}

// empty returns a mask that allows nothing (not cached).
func (c *Constraint) empty() *maskEntry {
	if c.none == nil {
		c.none = &maskEntry{allowed: make([]bool, c.v.size)}
	}
	c.none.listed = false
	return c.none
}

// fill computes the mask of the current state into m (all false on entry)
// and returns the number of allowed tokens. Unless cap is noCap, it allows
// only tokens after which the output can finish in at most cap tokens, and
// also returns the most and the fewest tokens to finish after any token the
// grammar allows.
func (c *Constraint) fill(m []bool, cap int32) (count int, most, least int32) {
	most, least = -1, noSpelling
	v, mc := c.v, c.m
	// walk[d] is the transition row (state*256) after the first d bytes of
	// the current trie path.
	walk := c.walk
	walk[0] = c.state << 8
	mc.found = mc.complete(c.state) && len(v.eog) > 0 // the end is a way forward
	node, next, first, ids := v.node, v.next, v.first, v.ids
	for i := 0; i < len(node); {
		if i&0xFFF == 0 && c.ctx != nil && c.ctx.Err() != nil {
			c.err = c.ctx.Err()
			return 0, most, least
		}
		nd := node[i]
		d := nd >> nodeDepthShift
		row := walk[d-1]
		// The memoized transition, inlined: one lookup per trie node.
		t := mc.trans[row+int32(nd&0xFF)]
		if t < 0 {
			t = mc.step(row>>8, byte(nd))
		}
		if t == deadState {
			i = int(next[i])
			continue
		}
		walk[d] = t << 8
		if nd&nodeHasTokens != 0 {
			ok := true
			if cap != noCap {
				u := c.left(t)
				most, least = max(most, u), min(least, u)
				ok = u <= cap
			}
			if ok {
				here := ids[first[i]:first[i+1]]
				for _, id := range here {
					m[id] = true
				}
				count += len(here)
				mc.found = true
			}
		}
		i++
	}
	if mc.complete(c.state) {
		for _, id := range v.eog {
			m[id] = true
		}
		count += len(v.eog)
	}
	return count, most, least
}

// Accept records token id as the next one of the output. It returns an
// error, and leaves the constraint unchanged, when the token is not
// allowed (Allow would have said false).
func (c *Constraint) Accept(id int32) error {
	if c.ended {
		return ErrEnded
	}
	if id < 0 || int(id) >= c.v.size {
		return fmt.Errorf("grammar: token id %d is outside the vocabulary of %d tokens", id, c.v.size)
	}
	if c.v.isEOG(id) {
		if !c.m.complete(c.state) {
			return fmt.Errorf("grammar: end-of-generation token %d after %d bytes, but the output is not complete (at least %d more bytes needed)", id, c.n, c.m.remaining(c.state))
		}
		c.ended = true
		return nil
	}
	c.m.resetBudget() // the token's transitions are known: its mask was computed
	b := c.v.tokens[id]
	if len(b) == 0 {
		return fmt.Errorf("grammar: token %d has no text and is not allowed in constrained output", id)
	}
	s := c.state
	for i, ch := range b {
		if s = c.m.step(s, ch); s == deadState {
			return fmt.Errorf("grammar: token %d %q does not fit at byte %d of the output (byte %q is not allowed there)", id, b, c.n+i, ch)
		}
	}
	c.state = s
	c.n += len(b)
	return nil
}

// Done reports whether the output so far is complete: an end-of-generation
// token is allowed now (or was accepted).
func (c *Constraint) Done() bool { return c.ended || c.m.complete(c.state) }

// Finished reports whether the output is complete and nothing can follow
// it: only an end-of-generation token is allowed. A generation loop may stop
// here without sampling.
func (c *Constraint) Finished() bool {
	st := c.m.states[c.state]
	return c.ended || len(st) == 1 && st[0] == emptyNode
}

// Remaining returns the fewest bytes that complete the output (0 when Done).
// A generation loop that runs out of tokens can use it to steer towards the
// shortest completion.
func (c *Constraint) Remaining() int {
	if c.ended {
		return 0
	}
	return c.m.remaining(c.state)
}

// Match reports whether text is a prefix of a string in g's language
// (prefix) and whether it is one (complete). It is the byte-level check that
// Constraint applies per token, useful to validate text after the fact.
func (g *Grammar) Match(text []byte) (prefix, complete bool) {
	m := newMachine(g)
	s := m.start()
	for _, ch := range text {
		m.resetBudget() // only the bound on parses applies here
		if s = m.step(s, ch); s == deadState {
			return false, false
		}
	}
	return true, m.complete(s)
}
