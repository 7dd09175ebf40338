package grammar

import (
	"container/heap"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
)

// A Grammar is compiled to a flat byte-level program, in the manner of
// llama.cpp's: every rule is a list of alternatives, every alternative a run
// of symbols ended by symEnd. A symbol matches one byte from a set or calls a
// rule. Repetitions, groups and multi-byte character classes become hidden
// rules, so the recognizer only knows bytes and calls.

type symKind uint8

const (
	symEnd   symKind = iota // end of an alternative: return to the caller
	symBytes                // one byte out of sets[arg]
	symRule                 // call rule arg
)

type sym struct {
	kind symKind
	arg  int32
}

// byteSet is a set of bytes, one bit each.
type byteSet [4]uint64

func (s *byteSet) add(lo, hi byte) {
	for c := int(lo); c <= int(hi); c++ {
		s[c>>6] |= 1 << (c & 63)
	}
}

func (s *byteSet) has(c byte) bool { return s[c>>6]&(1<<(c&63)) != 0 }

// canonical returns the byte canonical strings use for s: the smallest
// printable ASCII byte in it if any (tokenizers have those as tokens of
// their own), else the smallest.
func (s *byteSet) canonical() byte {
	for c := byte(' '); c <= '~'; c++ {
		if s.has(c) {
			return c
		}
	}
	for c := range 256 {
		if s.has(byte(c)) {
			return byte(c)
		}
	}
	return 0
}

// Grammar is a compiled grammar. It is immutable and safe for concurrent
// use; each generation matches it with its own Matcher or Constraint.
type Grammar struct {
	prog   []sym
	sets   []byteSet
	alts   [][]int32 // per rule: the program position of each alternative
	names  []string  // per rule: its name ("" for hidden rules)
	root   int32
	remain []int32 // per position: fewest bytes that finish its alternative
	// canonAlt is, per rule, the program position of its first shortest
	// alternative, and setByte, per byte set, the byte a canonical
	// (shortest) string uses: together they spell one shortest completion
	// of any stack (see machine.canonical).
	canonAlt []int32
	setByte  []byte
	source   string
}

// String returns the grammar's GBNF source (for grammars made from a JSON
// schema, the generated text).
func (g *Grammar) String() string { return g.source }

// Parse compiles grammar text in GBNF notation (see the package
// documentation). The rule named root is the start symbol.
func Parse(src string) (*Grammar, error) { return ParseContext(context.Background(), src) }

// ParseContext is Parse under a context: it returns ctx.Err() as soon as
// it sees ctx done, so that a server stops compiling for a client that has
// gone. Compilation takes time linear in the size of the grammar, which
// MaxProgram bounds.
func ParseContext(ctx context.Context, src string) (*Grammar, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cc := &canceller{ctx: ctx}
	defs, err := parseGBNF(src, cc)
	if err != nil {
		return nil, err
	}
	g, err := lower(defs, cc)
	if err != nil {
		return nil, err
	}
	g.source = src
	return g, nil
}

// MaxProgram bounds the size of a compiled grammar, in symbols (a literal
// byte, a character class or a rule call; x{n} counts n times): about
// 16 bytes of memory each, and a few hundred milliseconds to compile at
// the limit. Larger grammars are an error.
const MaxProgram = 1 << 21

// canceller checks a context now and then in long loops.
type canceller struct {
	ctx context.Context
	n   int
}

// check returns ctx.Err() every 1024th call once the context is done.
func (c *canceller) check() error {
	if c.n++; c.n&1023 != 0 {
		return nil
	}
	return c.ctx.Err()
}

// MustParse is Parse for grammars known to be valid; it panics on error.
func MustParse(src string) *Grammar {
	g, err := Parse(src)
	if err != nil {
		panic(err)
	}
	return g
}

// tsym is a symbol before rule names are resolved.
type tsym struct {
	kind symKind
	set  byteSet
	rule int32
}

type lowerer struct {
	byName map[string]int32
	names  []string
	rules  [][][]tsym // per rule, per alternative
	err    error
	size   int // symbols so far, against MaxProgram
	cc     *canceller
}

// grow counts n more symbols and reports whether the program may still
// grow; past MaxProgram (or with the context done) it sets l.err.
func (l *lowerer) grow(n int) bool {
	if l.err != nil {
		return false
	}
	if l.size += n; l.size > MaxProgram {
		l.err = fmt.Errorf("grammar: the grammar is too large: more than %d symbols once repetitions are written out", MaxProgram)
		return false
	}
	if err := l.cc.check(); err != nil {
		l.err = err
		return false
	}
	return true
}

func (l *lowerer) newRule(name string) int32 {
	l.names = append(l.names, name)
	l.rules = append(l.rules, nil)
	return int32(len(l.rules) - 1)
}

func lower(defs []ruleDef, cc *canceller) (*Grammar, error) {
	l := &lowerer{byName: map[string]int32{}, cc: cc}
	for _, d := range defs {
		l.byName[d.name] = l.newRule(d.name)
	}
	root, ok := l.byName["root"]
	if !ok {
		return nil, fmt.Errorf("grammar: no rule named root")
	}
	for _, d := range defs {
		id := l.byName[d.name]
		l.rules[id] = l.alternatives(d.body)
	}
	if l.err != nil {
		return nil, l.err
	}
	g := &Grammar{root: root, names: l.names}
	setIndex := map[byteSet]int32{}
	for _, alts := range l.rules {
		var starts []int32
		for _, alt := range alts {
			starts = append(starts, int32(len(g.prog)))
			for _, s := range alt {
				switch s.kind {
				case symBytes:
					i, ok := setIndex[s.set]
					if !ok {
						i = int32(len(g.sets))
						g.sets = append(g.sets, s.set)
						setIndex[s.set] = i
					}
					g.prog = append(g.prog, sym{symBytes, i})
				case symRule:
					g.prog = append(g.prog, sym{symRule, s.rule})
				}
			}
			g.prog = append(g.prog, sym{kind: symEnd})
		}
		g.alts = append(g.alts, starts)
	}
	g.setByte = make([]byte, len(g.sets))
	for i, s := range g.sets {
		g.setByte[i] = s.canonical()
	}
	if err := g.check(cc); err != nil {
		return nil, err
	}
	return g, nil
}

func (l *lowerer) alternatives(e *expr) [][]tsym {
	if e.kind == exAlt {
		out := make([][]tsym, len(e.subs))
		for i, s := range e.subs {
			out[i] = l.seq(s, nil)
		}
		return out
	}
	return [][]tsym{l.seq(e, nil)}
}

func single(lo, hi byte) tsym {
	s := tsym{kind: symBytes}
	s.set.add(lo, hi)
	return s
}

// seq appends the symbols of e to out.
func (l *lowerer) seq(e *expr, out []tsym) []tsym {
	if !l.grow(1) {
		return out
	}
	switch e.kind {
	case exLit:
		if !l.grow(len(e.lit)) {
			return out
		}
		for _, c := range e.lit {
			out = append(out, single(c, c))
		}
	case exClass:
		return append(out, l.class(e.ranges))
	case exRef:
		id, ok := l.byName[e.ref]
		if !ok {
			if l.err == nil {
				l.err = fmt.Errorf("grammar: line %d: undefined rule %q", e.line, e.ref)
			}
			return out
		}
		out = append(out, tsym{kind: symRule, rule: id})
	case exSeq:
		for _, s := range e.subs {
			out = l.seq(s, out)
		}
	case exAlt:
		id := l.newRule("")
		l.rules[id] = l.alternatives(e)
		out = append(out, tsym{kind: symRule, rule: id})
	case exRep:
		x := l.seq(e.subs[0], nil)
		if !l.grow(e.min + 2*max(e.max-e.min, 1)) {
			return out
		}
		if len(x) != 1 {
			id := l.newRule("")
			l.rules[id] = [][]tsym{x}
			x = []tsym{{kind: symRule, rule: id}}
		}
		for range e.min {
			out = append(out, x[0])
		}
		switch {
		case e.max < 0: // star ::= x star | ε
			id := l.newRule("")
			l.rules[id] = [][]tsym{{x[0], {kind: symRule, rule: id}}, {}}
			out = append(out, tsym{kind: symRule, rule: id})
		case e.max > e.min: // nested optionals: (x (x (x)?)?)?
			var prev int32 = -1
			for range e.max - e.min {
				id := l.newRule("")
				alt := []tsym{x[0]}
				if prev >= 0 {
					alt = append(alt, tsym{kind: symRule, rule: prev})
				}
				l.rules[id] = [][]tsym{alt, {}}
				prev = id
			}
			out = append(out, tsym{kind: symRule, rule: prev})
		}
	}
	return out
}

// class lowers a set of code points to one byte symbol when all of them are
// single bytes, else to a hidden rule of UTF-8 byte sequences.
func (l *lowerer) class(rs []runeRange) tsym {
	var ascii byteSet
	hasASCII := false
	var multi [][]tsym
	for _, r := range rs {
		utf8Sequences(r.lo, r.hi, func(seq []byteRange) {
			if len(seq) == 1 {
				ascii.add(seq[0].lo, seq[0].hi)
				hasASCII = true
				return
			}
			alt := make([]tsym, len(seq))
			for i, b := range seq {
				alt[i] = single(b.lo, b.hi)
			}
			multi = append(multi, alt)
		})
	}
	if len(multi) == 0 {
		return tsym{kind: symBytes, set: ascii}
	}
	if hasASCII {
		multi = append([][]tsym{{{kind: symBytes, set: ascii}}}, multi...)
	}
	id := l.newRule("")
	l.rules[id] = multi
	return tsym{kind: symRule, rule: id}
}

func (g *Grammar) ruleName(r int32) string {
	if g.names[r] != "" {
		return strconv.Quote(g.names[r])
	}
	return fmt.Sprintf("#%d (hidden, inside an expression)", r)
}

// check rejects grammars the recognizer cannot run: rules that can never
// finish and left recursion (a rule that can call itself before consuming a
// byte would expand forever). It also computes remain and each rule's
// canonical alternative (see shortest).
func (g *Grammar) check(cc *canceller) error {
	n := len(g.alts)
	minLen, err := g.shortest(cc)
	if err != nil {
		return err
	}
	// Left corners: rule r calls s before any byte when the symbols before s
	// in an alternative of r can all be empty.
	corners := make([][]int32, n)
	for r, starts := range g.alts {
		for _, p := range starts {
			for ; g.prog[p].kind == symRule; p++ {
				corners[r] = append(corners[r], g.prog[p].arg)
				if minLen[g.prog[p].arg] > 0 {
					break
				}
			}
		}
	}
	// Depth-first search for a cycle, with an explicit stack so that long
	// chains of rules cannot overflow anything.
	state := make([]uint8, n) // 0 new, 1 on the path, 2 done
	type frame struct{ rule, next int32 }
	var path []frame
	for r := range n {
		if state[r] != 0 {
			continue
		}
		state[r] = 1
		path = append(path[:0], frame{int32(r), 0})
		for len(path) > 0 {
			f := &path[len(path)-1]
			if int(f.next) == len(corners[f.rule]) {
				state[f.rule] = 2
				path = path[:len(path)-1]
				continue
			}
			s := corners[f.rule][f.next]
			f.next++
			switch state[s] {
			case 1:
				return fmt.Errorf("grammar: rule %s is left-recursive (it can reach itself without consuming input); rewrite it with repetition", g.ruleName(s))
			case 0:
				state[s] = 1
				path = append(path, frame{s, 0})
			}
		}
	}
	const inf = math.MaxInt32
	g.remain = make([]int32, len(g.prog))
	for p := len(g.prog) - 1; p >= 0; p-- {
		switch g.prog[p].kind {
		case symBytes:
			g.remain[p] = 1 + g.remain[p+1]
		case symRule:
			g.remain[p] = int32(min(minLen[g.prog[p].arg]+int64(g.remain[p+1]), inf/2))
		}
	}
	return nil
}

// shortest returns the fewest bytes each rule can match, and sets
// g.canonAlt to an alternative that achieves it, by Knuth's generalization
// of Dijkstra's algorithm to grammars: a rule's length is final when it is
// the smallest of the lengths still pending, and an alternative's length is
// known once every rule it calls is final. Each alternative is summed once,
// so the cost is linear in the program (times a log for the heap), whatever
// the order of the rules: a chain of 55,000 rules takes milliseconds.
//
// The canonical alternatives make every rule's shortest string a fixed
// derivation; Constraint uses it to name a shortest completion (see
// canonical).
func (g *Grammar) shortest(cc *canceller) ([]int64, error) {
	n := len(g.alts)
	const inf = math.MaxInt32
	// Flatten the alternatives: owner, start, bytes so far, calls pending.
	type alt struct {
		rule, pos, pending int32
		sum                int64
	}
	var alts []alt
	uses := make([]int32, n+1) // CSR: uses[r]..uses[r+1] index into users
	for r, starts := range g.alts {
		for _, p := range starts {
			a := alt{rule: int32(r), pos: p}
			for q := p; g.prog[q].kind != symEnd; q++ {
				if g.prog[q].kind == symBytes {
					a.sum++
				} else {
					a.pending++
					uses[g.prog[q].arg+1]++
				}
			}
			alts = append(alts, a)
		}
	}
	for r := range n {
		uses[r+1] += uses[r]
	}
	users := make([]int32, uses[n])
	fill := slices.Clone(uses[:n])
	for i, a := range alts {
		for q := a.pos; g.prog[q].kind != symEnd; q++ {
			if g.prog[q].kind == symRule {
				s := g.prog[q].arg
				users[fill[s]] = int32(i)
				fill[s]++
			}
		}
	}
	minLen := make([]int64, n)
	for i := range minLen {
		minLen[i] = inf
	}
	g.canonAlt = make([]int32, n)
	h := &altHeap{}
	for i, a := range alts {
		if a.pending == 0 {
			heap.Push(h, altLen{a.sum, int32(i)})
		}
	}
	for h.Len() > 0 {
		if err := cc.check(); err != nil {
			return nil, err
		}
		top := heap.Pop(h).(altLen)
		a := &alts[top.alt]
		if minLen[a.rule] < inf {
			continue
		}
		minLen[a.rule] = top.len
		g.canonAlt[a.rule] = a.pos
		for _, u := range users[uses[a.rule]:uses[a.rule+1]] {
			b := &alts[u]
			b.sum = min(b.sum+top.len, inf-1)
			if b.pending--; b.pending == 0 {
				heap.Push(h, altLen{b.sum, u})
			}
		}
	}
	for r := range n {
		if minLen[r] >= inf {
			return nil, fmt.Errorf("grammar: rule %s can never finish (every alternative recurses)", g.ruleName(int32(r)))
		}
	}
	return minLen, nil
}

type altLen struct {
	len int64
	alt int32
}

// altHeap is a min-heap of alternatives by length (ties: program order, so
// that the canonical alternative is the first shortest one).
type altHeap []altLen

func (h altHeap) Len() int { return len(h) }
func (h altHeap) Less(i, j int) bool {
	return h[i].len < h[j].len || h[i].len == h[j].len && h[i].alt < h[j].alt
}
func (h altHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *altHeap) Push(x any)   { *h = append(*h, x.(altLen)) }
func (h *altHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
