package grammar

import (
	"cmp"
	"encoding/binary"
	"math"
	"slices"
)

// machine runs a Grammar as a pushdown automaton over bytes, determinized
// lazily.
//
// A stack is a linked list of program positions: the top is the symbol to
// match next (always a byte symbol after expansion), the rest are the places
// to return to when rules end. Stacks are interned as nodes (pos, parent),
// so stacks with the same tail share it and compare by id; node 0 is the
// empty stack: the root rule has ended, the input is complete.
//
// A state is the sorted set of stacks the input so far can be in (grammars
// may be ambiguous). States are interned too, and each state's transitions
// are memoized per byte as they are first needed. After a short warm-up a
// byte costs one table lookup, which is what makes walking the whole
// vocabulary per token cheap. State 0 is the dead state (no stacks).
type machine struct {
	g        *Grammar
	nodes    []stackNode
	nodeIdx  map[stackNode]int32
	states   [][]int32
	stateIdx map[string]int32
	trans    []int32 // state*256 + byte → next state; -1 = not computed yet
	out      []int32
	seen     map[stackNode]struct{}
	key      []byte
	todo     []int32     // canonical's stack
	work     []stackNode // expand's work list

	// Bounds on the cost of one mask (see step): spent counts the stack
	// expansions since the last reset; truncated and ambiguous record that a
	// transition was refused for the budget or for having too many stacks.
	spent     int
	truncated bool
	ambiguous bool
	// found: the mask has allowed a token. Until it has, the budget
	// stretches to maxFirstWork, so that narrowing leaves a way forward.
	found bool
}

type stackNode struct{ pos, parent int32 }

const (
	deadState = 0
	emptyNode = 0
	// Interned nodes and states grow with nesting depth and with each
	// distinct place in the grammar visited; past these bounds the machine
	// starts over from the current state (see rebase).
	maxNodes  = 1 << 20
	maxStates = 1 << 14
	// MaxStacks bounds the stacks of one state: the parses an ambiguous
	// grammar follows at once. Each is stepped for every byte, so without a
	// bound a grammar such as [^"]{0,1000} " " [^"]{0,1000} costs more per
	// token the longer the answer grows (after k bytes it has up to k
	// parses). Past the bound only the parses that finish soonest are
	// followed (prune); JSON schemas stay far below (about 200 at most,
	// inside strings with escapes).
	MaxStacks = 1024
	// maxMaskWork bounds the stack expansions one mask may compute (new
	// transitions; memoized ones are free), and maxWalkStates the states a
	// mask may intern beyond maxStates: past either, transitions not yet
	// known are refused for this mask, which keeps the cost of every token
	// bounded whatever the grammar and the answer so far. Until the mask
	// has allowed a token the budget stretches to maxFirstWork, so that a
	// state that goes on is never left with no token at all. Schemas and
	// grammars in use need a small fraction of it.
	maxMaskWork   = 1 << 20
	maxFirstWork  = 8 * maxMaskWork
	maxWalkStates = maxStates + 1<<13
)

func newMachine(g *Grammar) *machine {
	m := &machine{g: g}
	m.clear()
	return m
}

func (m *machine) clear() {
	m.nodes = append(m.nodes[:0], stackNode{pos: -1, parent: -1})
	m.nodeIdx = map[stackNode]int32{}
	m.states = append(m.states[:0], nil)
	m.stateIdx = map[string]int32{"": deadState}
	m.trans = m.trans[:0]
	m.addRow()
	m.seen = map[stackNode]struct{}{}
}

func (m *machine) node(pos, parent int32) int32 {
	k := stackNode{pos, parent}
	if id, ok := m.nodeIdx[k]; ok {
		return id
	}
	id := int32(len(m.nodes))
	m.nodes = append(m.nodes, k)
	m.nodeIdx[k] = id
	return id
}

// expand adds to m.out the stacks that start at pos with the given parent,
// after calling rules and returning from ended ones, so that every added
// stack has a byte symbol on top (or is the empty stack). It keeps its own
// work list, so that long chains of rules cannot overflow the Go stack.
func (m *machine) expand(pos, parent int32) {
	m.work = append(m.work[:0], stackNode{pos, parent})
	for len(m.work) > 0 {
		m.spent++
		k := m.work[len(m.work)-1]
		m.work = m.work[:len(m.work)-1]
		if _, ok := m.seen[k]; ok {
			continue
		}
		m.seen[k] = struct{}{}
		s := m.g.prog[k.pos]
		switch s.kind {
		case symEnd:
			if k.parent == emptyNode {
				m.out = append(m.out, emptyNode)
				continue
			}
			m.work = append(m.work, m.nodes[k.parent])
		case symBytes:
			m.out = append(m.out, m.node(k.pos, k.parent))
		case symRule:
			// A call in tail position returns straight to the caller's
			// caller, so that right recursion (how repetition is lowered)
			// keeps the stack from growing.
			cont := k.parent
			if m.g.prog[k.pos+1].kind != symEnd {
				cont = m.node(k.pos+1, k.parent)
			}
			for _, a := range m.g.alts[s.arg] {
				m.work = append(m.work, stackNode{a, cont})
			}
		}
	}
}

// intern returns the state for the stacks in m.out. Its cost, like that of
// the expansions, counts against the mask's budget.
func (m *machine) intern() int32 {
	m.spent += len(m.out)
	slices.Sort(m.out)
	m.out = slices.Compact(m.out)
	m.key = m.key[:0]
	for _, s := range m.out {
		m.key = binary.LittleEndian.AppendUint32(m.key, uint32(s))
	}
	if id, ok := m.stateIdx[string(m.key)]; ok {
		return id
	}
	id := int32(len(m.states))
	m.states = append(m.states, slices.Clone(m.out))
	m.stateIdx[string(m.key)] = id
	m.addRow()
	return id
}

// addRow adds the transition row of a new state.
func (m *machine) addRow() {
	n := len(m.trans)
	m.trans = slices.Grow(m.trans, 256)[:n+256]
	for i := n; i < n+256; i++ {
		m.trans[i] = -1
	}
}

// start returns the state before any input.
func (m *machine) start() int32 {
	m.out = m.out[:0]
	clear(m.seen)
	for _, a := range m.g.alts[m.g.root] {
		m.expand(a, emptyNode)
	}
	return m.intern()
}

// step returns the state after byte c (deadState if c is not allowed).
//
// After a byte that would give the state more than MaxStacks stacks it
// keeps only MaxStacks of them (prune), recording that in ambiguous; it
// refuses (returns deadState), without remembering the transition, any new
// one once the mask's budget is spent (maxMaskWork, maxWalkStates),
// recording that in truncated.
func (m *machine) step(s int32, c byte) int32 {
	if n := m.trans[int(s)<<8|int(c)]; n >= 0 {
		return n
	}
	if m.spent > maxMaskWork && (m.found || m.spent > maxFirstWork) || len(m.states) > maxWalkStates || len(m.nodes) > maxNodes {
		m.truncated = true
		return deadState
	}
	m.out = m.out[:0]
	clear(m.seen)
	for _, st := range m.states[s] {
		if st == emptyNode {
			continue
		}
		n := m.nodes[st]
		if m.g.sets[m.g.prog[n.pos].arg].has(c) {
			m.expand(n.pos+1, n.parent)
		}
	}
	var n int32 = deadState
	if len(m.out) > 0 {
		if len(m.out) > MaxStacks {
			m.ambiguous = true
			m.prune()
		}
		n = m.intern()
	}
	m.trans[int(s)<<8|int(c)] = n
	return n
}

// prune keeps the MaxStacks stacks of m.out that finish in the fewest bytes
// (the empty stack first; ties by id, so that it is deterministic). The
// output then follows fewer parses, on a narrower path, but it can always
// go on or end: every kept stack has a byte to match next or is complete.
// Refusing the byte instead would strand the output where that byte is the
// only way forward, such as inside a UTF-8 character whose lead byte was
// allowed while the state was smaller. Keeping the stacks closest to the
// end keeps the state's shortest completion, which Limit's budgets rely on.
func (m *machine) prune() {
	slices.Sort(m.out)
	m.out = slices.Compact(m.out)
	if len(m.out) <= MaxStacks {
		return
	}
	type ranked struct {
		left  int64
		stack int32
	}
	r := make([]ranked, len(m.out))
	for i, st := range m.out {
		var c int64
		for n := st; n != emptyNode; n = m.nodes[n].parent {
			c += int64(m.g.remain[m.nodes[n].pos])
		}
		r[i] = ranked{c, st}
	}
	slices.SortFunc(r, func(a, b ranked) int { return cmp.Or(cmp.Compare(a.left, b.left), cmp.Compare(a.stack, b.stack)) })
	m.out = m.out[:MaxStacks]
	for i := range m.out {
		m.out[i] = r[i].stack
	}
	m.spent += len(r) // the cost of pruning counts against the mask's budget
}

// resetBudget starts a new mask's budget.
func (m *machine) resetBudget() { m.spent, m.truncated, m.ambiguous, m.found = 0, false, false, false }

// complete reports whether state s may end here.
func (m *machine) complete(s int32) bool {
	st := m.states[s]
	return len(st) > 0 && st[0] == emptyNode
}

// remaining returns the fewest bytes that complete state s.
func (m *machine) remaining(s int32) int {
	best := math.MaxInt
	for _, st := range m.states[s] {
		c := 0
		for n := st; n != emptyNode; n = m.nodes[n].parent {
			c += int(m.g.remain[m.nodes[n].pos])
		}
		best = min(best, c)
	}
	return best
}

// full reports whether the machine has outgrown its bounds.
func (m *machine) full() bool {
	return len(m.nodes) > maxNodes || len(m.states) > maxStates
}

// rebase forgets everything but state s and returns its new id.
func (m *machine) rebase(s int32) int32 {
	var stacks [][]int32
	for _, st := range m.states[s] {
		var pos []int32
		for n := st; n != emptyNode; n = m.nodes[n].parent {
			pos = append(pos, m.nodes[n].pos)
		}
		stacks = append(stacks, pos)
	}
	m.clear()
	m.out = m.out[:0]
	for _, pos := range stacks {
		n := int32(emptyNode)
		for i := len(pos) - 1; i >= 0; i-- {
			n = m.node(pos[i], n)
		}
		m.out = append(m.out, n)
	}
	return m.intern()
}

// canonical appends to buf the canonical completion of stack st (see
// Grammar.canonAlt), stopping after max bytes, and returns it with the full
// length of the completion (the stack's fewest bytes to finish, which may be
// more than was written).
func (m *machine) canonical(st int32, buf []byte, max int) ([]byte, int) {
	g := m.g
	total := 0
	for n := st; n != emptyNode; n = m.nodes[n].parent {
		total += int(g.remain[m.nodes[n].pos])
	}
	// Positions still to spell, innermost last: the stack's own chain
	// (reversed, so that its top is spelled first), then rule bodies as
	// they are entered.
	todo := m.todo[:0]
	for n := st; n != emptyNode; n = m.nodes[n].parent {
		todo = append(todo, m.nodes[n].pos)
	}
	slices.Reverse(todo)
	for len(todo) > 0 && len(buf) < max {
		p := todo[len(todo)-1]
		s := g.prog[p]
		switch s.kind {
		case symEnd:
			todo = todo[:len(todo)-1]
		case symBytes:
			buf = append(buf, g.setByte[s.arg])
			todo[len(todo)-1]++
		case symRule:
			todo[len(todo)-1]++
			todo = append(todo, g.canonAlt[s.arg])
		}
	}
	m.todo = todo
	return buf, total
}
