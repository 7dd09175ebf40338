package grammar

import "math"

// A budget makes a constrained answer close in time: once Limit says how
// many tokens are left, Allow keeps only the tokens after which the output
// can still be finished within them.
//
// That needs, for any automaton state, a number of tokens within which the
// output can surely be finished. Constraint uses left(s): the fewest tokens
// of the vocabulary that spell the state's canonical completion, the
// shortest completion in bytes that Grammar.canonAlt and Grammar.setByte
// fix. left(s) is an upper bound on the true fewest tokens (a longer
// completion may take fewer of them), and it is consistent: if the first
// token of the canonical completion's best spelling leads from s to s', the
// rest of that completion is the canonical completion of one of the stacks
// of s' (canonical strings are fixed derivations, and the automaton keeps
// the stack that follows them), so left(s') <= left(s)-1.
//
// That gives the guarantee. With n tokens left, Allow keeps the tokens
// after which left <= n-2 (the token and the end-of-generation token take
// the other two) and the end-of-generation token when the output is
// complete. If left(s)+1 <= n when the limit is first set and the limit then
// drops by one per accepted token, the token above always remains allowed,
// so every sequence of allowed tokens ends, complete, within the n tokens.
// If the budget is smaller than that from the start, the output cannot
// close in time; Allow then keeps the tokens that bring it closest to the
// end (the fewest left) rather than allowing nothing.
//
// Canonical completions longer than maxCanonical bytes (nesting thousands
// deep) are spelled in full only up to there; the rest counts one token per
// byte when every canonical byte is a token of its own, else as
// noSpelling, which keeps the bound an upper bound and consistent.
type budget struct {
	limit    int     // tokens left; 0: no limit
	needs    []int32 // per state: left(s), -1 until computed
	mosts    []int32 // per state: the largest left after an allowed token, -1 until known
	canon    []byte
	best     []int32
	byteTail bool // every canonical byte is a token of its own
}

// noCap is the cap of a mask that no limit restricts.
const noCap = math.MaxInt32

// maxCanonical bounds the canonical completion spelled per state.
const maxCanonical = 4096

func (b *budget) init(g *Grammar, v *Vocab) {
	b.byteTail = true
	for _, c := range g.setByte {
		b.byteTail = b.byteTail && v.bytes[c]
	}
}

// forget drops what was computed per state (the machine was rebased).
func (b *budget) forget() {
	b.needs, b.mosts = b.needs[:0], b.mosts[:0]
}

// grow extends s to hold state id, with -1 for the new entries.
func grow(s []int32, id int32) []int32 {
	for int(id) >= len(s) {
		s = append(s, -1)
	}
	return s
}

// Limit tells the constraint that at most n more tokens will be generated,
// counting the end-of-generation token; n <= 0 removes the limit. Until the
// next call, Allow and Apply allow only tokens after which the output can
// still be completed within the budget. Call it before every token with
// what is left (package engine does, through engine.Limiter): if the first
// call's n is at least MinBudget, every output ends complete within it.
func (c *Constraint) Limit(n int) { c.limit = max(n, 0) }

// MinBudget returns a number of tokens, counting the end-of-generation
// token, within which the output can surely be completed from here (0 once
// it has ended): the smallest budget for which Limit guarantees a complete
// output. It is an upper bound on the true fewest tokens; it returns
// math.MaxInt32 when the vocabulary cannot spell the shortest completion.
func (c *Constraint) MinBudget() int {
	if c.ended {
		return 0
	}
	if c.m.full() {
		c.entry() // rebase first, so that the ids below stay valid
	}
	u := c.left(c.state)
	if u == noSpelling {
		return noSpelling
	}
	return int(u) + 1
}

// left returns the tokens that surely finish the output from state s (see
// budget), memoized per state.
func (c *Constraint) left(s int32) int32 {
	if int(s) < len(c.needs) && c.needs[s] >= 0 {
		return c.needs[s]
	}
	c.needs = grow(c.needs, s)
	best := int32(noSpelling)
	for _, st := range c.m.states[s] {
		if st == emptyNode {
			best = 0
			break
		}
		w, total := c.m.canonical(st, c.canon[:0], maxCanonical)
		c.canon = w
		if cap(c.best) < len(w)+1 {
			c.best = make([]int32, len(w)+1, maxCanonical+1)
		}
		n := c.v.spell(w, c.best)
		if rest := total - len(w); rest > 0 && n < noSpelling {
			if !c.byteTail {
				continue
			}
			n = int32(min(int64(n)+int64(rest), noSpelling-1))
		}
		best = min(best, n)
	}
	c.needs[s] = best
	return best
}

// most returns the largest left() after a token allowed in state s, or -1
// if not known yet.
func (c *Constraint) most(s int32) int32 {
	if int(s) < len(c.mosts) {
		return c.mosts[s]
	}
	return -1
}

func (c *Constraint) setMost(s, u int32) {
	c.mosts = grow(c.mosts, s)
	c.mosts[s] = u
}
