package grammar

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// A pattern becomes grammar rules through a nondeterministic automaton
// over characters: one rule per automaton state, each alternative a
// character class and the next state (a right-linear grammar, which the
// recognizer runs without growing its stack). When minLength or maxLength
// bound the string too, the rules are per state and count of characters
// so far, which keeps the language exact: the strings of the pattern with
// an allowed length.

// maxCounted is the most characters counted: a larger maxLength that the
// pattern alone would exceed is generated as this one (a sub-language, so
// the output still obeys it), which keeps Pydantic's URLs (maxLength 2083)
// cheap.
const maxCounted = 256

// maxPatternRules bounds the rules of one pattern (states times counts).
const maxPatternRules = 1 << 16

// reNFA is an automaton with ε-moves, built from a regex by Thompson's
// construction.
type reNFA struct {
	edges [][]reEdge
	eps   [][]int32
}

type reEdge struct {
	class []runeRange
	to    int32
}

func (a *reNFA) state() int32 {
	a.edges = append(a.edges, nil)
	a.eps = append(a.eps, nil)
	return int32(len(a.edges) - 1)
}

// build adds n to the automaton from state from and returns the state where
// it ends.
func (a *reNFA) build(n *reNode, from int32) (int32, error) {
	if len(a.edges) > maxPatternRules {
		return 0, fmt.Errorf("more than %d automaton states", maxPatternRules)
	}
	switch n.op {
	case reChar:
		to := a.state()
		a.edges[from] = append(a.edges[from], reEdge{n.ranges, to})
		return to, nil
	case reCat:
		cur := from
		for _, s := range n.subs {
			var err error
			if cur, err = a.build(s, cur); err != nil {
				return 0, err
			}
		}
		return cur, nil
	case reAlt:
		to := a.state()
		for _, s := range n.subs {
			end, err := a.build(s, from)
			if err != nil {
				return 0, err
			}
			a.eps[end] = append(a.eps[end], to)
		}
		return to, nil
	}
	sub, cur := n.subs[0], from
	for range n.min {
		var err error
		if cur, err = a.build(sub, cur); err != nil {
			return 0, err
		}
	}
	if n.max < 0 {
		loop := a.state()
		a.eps[cur] = append(a.eps[cur], loop)
		end, err := a.build(sub, loop)
		if err != nil {
			return 0, err
		}
		a.eps[end] = append(a.eps[end], loop)
		return loop, nil
	}
	to := a.state()
	a.eps[cur] = append(a.eps[cur], to)
	for range n.max - n.min {
		var err error
		if cur, err = a.build(sub, cur); err != nil {
			return 0, err
		}
		a.eps[cur] = append(a.eps[cur], to)
	}
	return to, nil
}

// closure returns the states reachable from q by ε-moves, q included.
func (a *reNFA) closure(q int32, mark []int32, out []int32) []int32 {
	out = append(out[:0], q)
	mark[q] = q + 1
	for i := 0; i < len(out); i++ {
		for _, r := range a.eps[out[i]] {
			if mark[r] != q+1 {
				mark[r] = q + 1
				out = append(out, r)
			}
		}
	}
	return out
}

// reAuto is an automaton without ε-moves: state q moves on edges[q] and
// may end when final[q]; lo and hi bound the lengths of its strings (hi <
// 0: unbounded).
type reAuto struct {
	edges  [][]reEdge
	final  []bool
	start  int32
	lo, hi int
}

// compileRegex parses pattern into an automaton without ε-moves.
func compileRegex(pattern string) (*reAuto, error) {
	n, err := parseRegex(pattern)
	if err != nil {
		return nil, err
	}
	a := &reNFA{}
	start := a.state()
	accept, err := a.build(n, start)
	if err != nil {
		return nil, err
	}
	// State q moves on the edges of its ε-closure and may end when the
	// closure holds the accepting state.
	nq := len(a.edges)
	out := &reAuto{edges: make([][]reEdge, nq), final: make([]bool, nq), start: start}
	out.lo, out.hi = n.lengths()
	mark := make([]int32, nq)
	var cl []int32
	for q := range nq {
		cl = a.closure(int32(q), mark, cl)
		for _, r := range cl {
			out.final[q] = out.final[q] || r == accept
			// One edge per target, its classes merged.
			for _, e := range a.edges[r] {
				i := slices.IndexFunc(out.edges[q], func(x reEdge) bool { return x.to == e.to })
				if i < 0 {
					out.edges[q] = append(out.edges[q], e)
				} else {
					out.edges[q][i].class = normalizeRanges(append(slices.Clone(out.edges[q][i].class), e.class...))
				}
			}
		}
	}
	return out, nil
}

// maxDeterminizeWork bounds the work of determinize (NFA states visited
// over all subsets); past it the pattern keeps its nondeterministic
// automaton.
const maxDeterminizeWork = 1 << 24

// determinize returns a deterministic automaton for the same strings (the
// subset construction: each state is a set of a's states, and no two of
// its edges share a character), or a itself when that would take more than
// twice a's states (plus 64), or maxDeterminizeWork steps. A small
// automaton is cheap to follow as it is (the recognizer follows at most
// all of its states at once), and a large one whose deterministic form is
// not larger is what needs it.
//
// It is what keeps the masks of a pattern cheap: the recognizer follows
// every state of a nondeterministic automaton at once, so a pattern such as
// ^.{0,1000}.{0,1000}.{0,1000}$, whose automaton can be in a thousand
// states after a thousand characters, would cost more per token the longer
// the string grew (and soon exceed MaxStacks). Its deterministic automaton
// is in one state at a time: the count of characters so far.
func (a *reAuto) determinize() *reAuto {
	// The alphabet cut into intervals that no class splits.
	var points []rune
	for _, es := range a.edges {
		for _, e := range es {
			for _, r := range e.class {
				points = append(points, r.lo, r.hi+1)
			}
		}
	}
	slices.Sort(points)
	points = slices.Compact(points)
	// cover[q][i] lists the intervals edge i of state q covers.
	cover := make([][][]int32, len(a.edges))
	for q, es := range a.edges {
		cover[q] = make([][]int32, len(es))
		for i, e := range es {
			for _, r := range e.class {
				lo, _ := slices.BinarySearch(points, r.lo)
				hi, _ := slices.BinarySearch(points, r.hi+1)
				for k := lo; k < hi; k++ {
					cover[q][i] = append(cover[q][i], int32(k))
				}
			}
		}
	}
	out := &reAuto{lo: a.lo, hi: a.hi}
	ids := map[string]int32{}
	var subsets [][]int32
	var key []byte
	add := func(set []int32) int32 {
		key = key[:0]
		for _, q := range set {
			key = binary.LittleEndian.AppendUint32(key, uint32(q))
		}
		if id, ok := ids[string(key)]; ok {
			return id
		}
		id := int32(len(subsets))
		ids[string(key)] = id
		subsets = append(subsets, set)
		final := false
		for _, q := range set {
			final = final || a.final[q]
		}
		out.edges = append(out.edges, nil)
		out.final = append(out.final, final)
		return id
	}
	out.start = add([]int32{a.start})
	work := 0
	targets := map[int32][]int32{} // interval → states
	limit := min(2*len(a.edges)+64, maxPatternRules)
	for d := 0; d < len(subsets); d++ {
		if len(subsets) > limit {
			return a
		}
		clear(targets)
		for _, q := range subsets[d] {
			for i, e := range a.edges[q] {
				work += len(cover[q][i])
				for _, k := range cover[q][i] {
					targets[k] = append(targets[k], e.to)
				}
			}
		}
		if work > maxDeterminizeWork {
			return a
		}
		// One edge per target set, its intervals merged into a class.
		byTarget := map[int32][]runeRange{}
		var order []int32
		for _, k := range slices.Sorted(maps.Keys(targets)) {
			set := targets[k]
			slices.Sort(set)
			to := add(slices.Compact(set))
			if _, ok := byTarget[to]; !ok {
				order = append(order, to)
			}
			byTarget[to] = append(byTarget[to], runeRange{points[k], points[k+1] - 1})
		}
		for _, to := range order {
			out.edges[d] = append(out.edges[d], reEdge{normalizeRanges(byTarget[to]), to})
		}
	}
	return out
}

// intersect returns an automaton for the strings both a and b accept (the
// product of their states, reachable ones only).
func (a *reAuto) intersect(b *reAuto) (*reAuto, error) {
	out := &reAuto{lo: max(a.lo, b.lo), hi: a.hi}
	if a.hi < 0 || b.hi >= 0 && b.hi < a.hi {
		out.hi = b.hi
	}
	ids := map[[2]int32]int32{}
	var pairs [][2]int32
	add := func(p [2]int32) int32 {
		if id, ok := ids[p]; ok {
			return id
		}
		id := int32(len(pairs))
		ids[p] = id
		pairs = append(pairs, p)
		out.edges = append(out.edges, nil)
		out.final = append(out.final, a.final[p[0]] && b.final[p[1]])
		return id
	}
	out.start = add([2]int32{a.start, b.start})
	for i := 0; i < len(pairs); i++ {
		if len(pairs) > maxPatternRules {
			return nil, fmt.Errorf("pattern and format together take more than %d automaton states", maxPatternRules)
		}
		p := pairs[i]
		for _, ea := range a.edges[p[0]] {
			for _, eb := range b.edges[p[1]] {
				if c := intersectRanges(ea.class, eb.class); len(c) > 0 {
					to := add([2]int32{ea.to, eb.to})
					out.edges[i] = append(out.edges[i], reEdge{c, to})
				}
			}
		}
	}
	return out, nil
}

// intersectRanges returns the code points in both a and b (normalized).
func intersectRanges(a, b []runeRange) []runeRange {
	var out []runeRange
	for _, x := range a {
		for _, y := range b {
			if lo, hi := max(x.lo, y.lo), min(x.hi, y.hi); lo <= hi {
				out = append(out, runeRange{lo, hi})
			}
		}
	}
	return normalizeRanges(out)
}

// patternGBNF compiles the strings that match every one of patterns
// (usually one; a format and a pattern beside it make two), kept within
// the character counts [minLen, maxLen] (maxLen < 0: no maximum), to rules
// of sc, and returns a GBNF expression for the whole JSON string, quotes
// included.
func (sc *schemaCompiler) patternGBNF(patterns []string, minLen, maxLen int) (string, error) {
	var a *reAuto
	for _, p := range patterns {
		b, err := compileRegex(p)
		if err != nil {
			return "", err
		}
		if a == nil {
			a = b
		} else if a, err = a.intersect(b); err != nil {
			return "", err
		}
	}
	a = a.determinize()
	edges, final, start := a.edges, a.final, a.start
	nq := len(edges)
	// Count characters only when the pattern's own lengths do not already
	// lie within the bounds; then counts run up to maxLen, or up to minLen
	// (where they stop mattering) when there is no maximum.
	top := 0
	if lo, hi := a.lo, a.hi; lo < minLen || maxLen >= 0 && (hi < 0 || hi > maxLen) {
		if maxLen > maxCounted && minLen <= maxCounted {
			maxLen = maxCounted // fewer rules, and still within the bound
		}
		top = maxLen
		if maxLen < 0 {
			top = minLen
		}
	} else {
		minLen, maxLen = 0, -1
	}
	next := func(k int) int {
		if maxLen < 0 {
			return min(k+1, top)
		}
		return k + 1
	}
	// States (q, k) that can still end well: backwards from the endings.
	id := func(q int32, k int) int { return int(q)*(top+1) + k }
	if nq*(top+1) > maxPatternRules {
		return "", fmt.Errorf("%d automaton states times %d lengths is more than %d rules", nq, top+1, maxPatternRules)
	}
	// Predecessors by character: pred[q] lists the states with an edge to q.
	pred := make([][]int32, nq)
	for q := range nq {
		for _, e := range edges[q] {
			pred[e.to] = append(pred[e.to], int32(q))
		}
	}
	live := make([]bool, nq*(top+1))
	var todo [][2]int
	for q := range nq {
		for k := minLen; k <= top; k++ {
			if final[q] {
				live[id(int32(q), k)] = true
				todo = append(todo, [2]int{q, k})
			}
		}
	}
	for len(todo) > 0 {
		q, k := todo[len(todo)-1][0], todo[len(todo)-1][1]
		todo = todo[:len(todo)-1]
		// Counts before k: k-1, and top itself where counts stop at top.
		for _, k0 := range []int{k - 1, top} {
			if k0 < 0 || next(k0) != k {
				continue
			}
			for _, p := range pred[q] {
				if !live[id(p, k0)] {
					live[id(p, k0)] = true
					todo = append(todo, [2]int{int(p), k0})
				}
			}
		}
	}
	if !live[id(start, 0)] {
		switch {
		case minLen == 0 && maxLen < 0:
			return "", fmt.Errorf("no string matches it (and the format beside it)")
		case maxLen < 0:
			return "", fmt.Errorf("no string of the pattern has at least %d characters", minLen)
		}
		return "", fmt.Errorf("no string of the pattern has from %d to %d characters", minLen, maxLen)
	}
	// Emit the live states reachable from the start.
	prefix := "p" + strconv.Itoa(sc.npatterns) + "_"
	sc.npatterns++
	name := func(q int32, k int) string { return prefix + strconv.Itoa(id(q, k)) }
	classes := map[string]string{}
	seen := make([]bool, len(live))
	todo = append(todo[:0], [2]int{int(start), 0})
	seen[id(start, 0)] = true
	for len(todo) > 0 {
		q, k := int32(todo[len(todo)-1][0]), todo[len(todo)-1][1]
		todo = todo[:len(todo)-1]
		var alts []string
		if final[q] && k >= minLen {
			alts = append(alts, `"\""`)
		}
		for _, e := range edges[q] {
			k2 := next(k)
			if k2 > top || !live[id(e.to, k2)] {
				continue
			}
			text := jsonCharsGBNF(e.class)
			cls, ok := classes[text]
			if !ok {
				cls = sc.rule(text)
				classes[text] = cls
			}
			alts = append(alts, cls+" "+name(e.to, k2))
			if !seen[id(e.to, k2)] {
				seen[id(e.to, k2)] = true
				todo = append(todo, [2]int{int(e.to), k2})
			}
		}
		sc.rules = append(sc.rules, name(q, k)+" ::= "+strings.Join(alts, " | "))
	}
	return `"\"" ` + name(start, 0), nil
}
