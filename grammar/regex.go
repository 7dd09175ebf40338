package grammar

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// JSON schemas' pattern keyword (and the formats, which are written as
// patterns) is an ECMA-262 regular expression over the characters of the
// string. The subset the grammar compiles: literals and escapes (\t \n \r
// \f \v \0 \xHH \uHHHH, escaped metacharacters), . (any character but a line
// break), classes [a-z] [^...] with \d \w \s \D \W \S inside or outside,
// groups ( ) (?: ) (?<name> ), alternation |, the quantifiers * + ? {n}
// {n,} {n,m} (lazy ones too: they match the same strings), and the anchors
// ^ and $ at the very start and end. Without ^ (or $) the pattern may match
// anywhere, as JSON Schema says, so any characters may come before (after)
// it. Backreferences, lookaround, word boundaries, Unicode property
// escapes and anchors elsewhere are errors that name their position.
//
// A parsed pattern is a tree of regex nodes, translated to GBNF over the
// JSON text of the string: each character is written as JSON writes it
// (a quote as \", a backslash as \\, control characters as \u00XX).

type reOp uint8

const (
	reChar reOp = iota // one character out of ranges
	reCat              // subs in sequence
	reAlt              // one of subs
	reRep              // subs[0] from min to max times (max < 0: unbounded)
)

type reNode struct {
	op       reOp
	ranges   []runeRange
	subs     []*reNode
	min, max int
}

// anyChar is every character; lineChar is what . matches.
var (
	anyChar  = []runeRange{{0, utf8.MaxRune}}
	lineChar = complementRanges([]runeRange{{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}})
)

type reParser struct {
	src    []rune
	pos    int
	topAlt bool // the pattern is an alternation at the top level
}

func (p *reParser) errorf(format string, args ...any) error {
	return fmt.Errorf("position %d: %s", p.pos, fmt.Sprintf(format, args...))
}

// parseRegex parses pattern into a node that matches whole strings: the
// anchors are resolved (an unanchored side gets any characters).
func parseRegex(pattern string) (*reNode, error) {
	if !utf8.ValidString(pattern) {
		return nil, fmt.Errorf("not valid UTF-8")
	}
	p := &reParser{src: []rune(pattern)}
	start := len(p.src) > 0 && p.src[0] == '^'
	if start {
		p.pos++
	}
	end := false
	if n := len(p.src); n > p.pos && p.src[n-1] == '$' {
		// Escaped \$ is a literal dollar: count the backslashes before it.
		k := 0
		for i := n - 2; i >= p.pos && p.src[i] == '\\'; i-- {
			k++
		}
		if k%2 == 0 {
			end = true
			p.src = p.src[:n-1]
		}
	}
	n, err := p.alternatives(0)
	if err != nil {
		return nil, err
	}
	if p.pos < len(p.src) {
		return nil, p.errorf("unbalanced )")
	}
	if p.topAlt && (start || end) {
		// ^a|b means (^a)|b: not the same as ^(a|b). Refuse rather than
		// guess.
		return nil, fmt.Errorf("position 0: an anchor applies to one alternative only; write ^(a|b)$")
	}
	var seq []*reNode
	any := &reNode{op: reRep, subs: []*reNode{{op: reChar, ranges: anyChar}}, max: -1}
	if !start {
		seq = append(seq, any)
	}
	seq = append(seq, n)
	if !end {
		seq = append(seq, any)
	}
	if len(seq) == 1 {
		return n, nil
	}
	return &reNode{op: reCat, subs: seq}, nil
}

func (p *reParser) more() bool { return p.pos < len(p.src) }

func (p *reParser) alternatives(depth int) (*reNode, error) {
	if depth > maxNesting {
		return nil, p.errorf("groups nested deeper than %d", maxNesting)
	}
	var alts []*reNode
	for {
		n, err := p.sequence(depth)
		if err != nil {
			return nil, err
		}
		alts = append(alts, n)
		if p.more() && p.src[p.pos] == '|' {
			p.pos++
			p.topAlt = p.topAlt || depth == 0
			continue
		}
		break
	}
	if len(alts) == 1 {
		return alts[0], nil
	}
	return &reNode{op: reAlt, subs: alts}, nil
}

func (p *reParser) sequence(depth int) (*reNode, error) {
	var items []*reNode
	for p.more() && p.src[p.pos] != '|' && p.src[p.pos] != ')' {
		n, err := p.atom(depth)
		if err != nil {
			return nil, err
		}
		if n, err = p.quantifier(n); err != nil {
			return nil, err
		}
		items = append(items, n)
	}
	if len(items) == 1 {
		return items[0], nil
	}
	return &reNode{op: reCat, subs: items}, nil
}

func (p *reParser) atom(depth int) (*reNode, error) {
	c := p.src[p.pos]
	switch c {
	case '(':
		p.pos++
		if p.more() && p.src[p.pos] == '?' {
			rest := string(p.src[p.pos:min(p.pos+3, len(p.src))])
			switch {
			case strings.HasPrefix(rest, "?:"):
				p.pos += 2
			case strings.HasPrefix(rest, "?<") && rest != "?<=" && rest != "?<!":
				end := slices.Index(p.src[p.pos:], '>')
				if end < 0 {
					return nil, p.errorf("unterminated group name")
				}
				p.pos += end + 1
			default:
				p.pos--
				return nil, p.errorf("lookaround and other (? groups are not supported")
			}
		}
		n, err := p.alternatives(depth + 1)
		if err != nil {
			return nil, err
		}
		if !p.more() || p.src[p.pos] != ')' {
			return nil, p.errorf("missing )")
		}
		p.pos++
		return n, nil
	case '[':
		return p.class()
	case '.':
		p.pos++
		return &reNode{op: reChar, ranges: lineChar}, nil
	case '^', '$':
		return nil, p.errorf("anchor %c is supported only at the start (^) or end ($) of the pattern", c)
	case '*', '+', '?':
		return nil, p.errorf("quantifier %c with nothing to repeat", c)
	case '\\':
		rs, err := p.escape(false)
		if err != nil {
			return nil, err
		}
		return &reNode{op: reChar, ranges: rs}, nil
	}
	p.pos++
	return &reNode{op: reChar, ranges: []runeRange{{c, c}}}, nil
}

// Character class escapes.
var (
	digitRanges = []runeRange{{'0', '9'}}
	wordRanges  = []runeRange{{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}}
	spaceRanges = normalizeRanges([]runeRange{{'\t', '\r'}, {' ', ' '}, {0xA0, 0xA0}, {0x1680, 0x1680}, {0x2000, 0x200A},
		{0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000}, {0xFEFF, 0xFEFF}})
)

// escape reads an escape sequence at p.pos (a backslash) and returns the
// characters it stands for.
func (p *reParser) escape(inClass bool) ([]runeRange, error) {
	start := p.pos
	p.pos++
	if !p.more() {
		return nil, p.errorf("pattern ends with a backslash")
	}
	c := p.src[p.pos]
	p.pos++
	one := func(r rune) ([]runeRange, error) { return []runeRange{{r, r}}, nil }
	switch c {
	case 'd':
		return digitRanges, nil
	case 'D':
		return complementRanges(digitRanges), nil
	case 'w':
		return wordRanges, nil
	case 'W':
		return complementRanges(wordRanges), nil
	case 's':
		return spaceRanges, nil
	case 'S':
		return complementRanges(spaceRanges), nil
	case 't':
		return one('\t')
	case 'n':
		return one('\n')
	case 'r':
		return one('\r')
	case 'f':
		return one('\f')
	case 'v':
		return one('\v')
	case '0':
		return one(0)
	case 'b':
		if inClass {
			return one('\b')
		}
	case 'x', 'u':
		n := 2
		if c == 'u' {
			n = 4
		}
		if p.pos+n > len(p.src) {
			break
		}
		v, err := strconv.ParseUint(string(p.src[p.pos:p.pos+n]), 16, 32)
		if err != nil {
			break
		}
		p.pos += n
		return one(rune(v))
	default:
		if strings.ContainsRune(`\/^$.*+?()[]{}|-`, c) {
			return one(c)
		}
	}
	p.pos = start
	return nil, p.errorf("escape \\%c is not supported", c)
}

func (p *reParser) class() (*reNode, error) {
	p.pos++ // [
	negate := p.more() && p.src[p.pos] == '^'
	if negate {
		p.pos++
	}
	var rs []runeRange
	for {
		if !p.more() {
			return nil, p.errorf("unterminated character class")
		}
		if p.src[p.pos] == ']' {
			p.pos++
			break
		}
		lo, err := p.classAtom()
		if err != nil {
			return nil, err
		}
		if len(lo) == 1 && lo[0].lo == lo[0].hi && p.pos+1 < len(p.src) && p.src[p.pos] == '-' && p.src[p.pos+1] != ']' {
			p.pos++
			hi, err := p.classAtom()
			if err != nil {
				return nil, err
			}
			if len(hi) != 1 || hi[0].lo != hi[0].hi || hi[0].lo < lo[0].lo {
				return nil, p.errorf("bad character range")
			}
			lo = []runeRange{{lo[0].lo, hi[0].lo}}
		}
		rs = append(rs, lo...)
	}
	rs = normalizeRanges(rs)
	if negate {
		rs = complementRanges(rs)
	}
	if len(rs) == 0 {
		return nil, p.errorf("character class matches nothing")
	}
	return &reNode{op: reChar, ranges: rs}, nil
}

func (p *reParser) classAtom() ([]runeRange, error) {
	if p.src[p.pos] == '\\' {
		return p.escape(true)
	}
	c := p.src[p.pos]
	p.pos++
	return []runeRange{{c, c}}, nil
}

func (p *reParser) quantifier(n *reNode) (*reNode, error) {
	for p.more() {
		lo, hi, ok := quantifierChar(p.src[p.pos])
		switch {
		case ok:
			p.pos++
		case p.src[p.pos] == '{':
			var err error
			if lo, hi, ok, err = p.braces(); err != nil {
				return nil, err
			} else if !ok {
				return n, nil // a literal {, as JavaScript reads it
			}
		default:
			return n, nil
		}
		if p.more() && p.src[p.pos] == '?' {
			p.pos++ // lazy: the same strings
		}
		n = &reNode{op: reRep, subs: []*reNode{n}, min: lo, max: hi}
	}
	return n, nil
}

// braces reads {n}, {n,} or {n,m}; ok is false when the brace does not
// start a quantifier.
func (p *reParser) braces() (lo, hi int, ok bool, err error) {
	end := slices.Index(p.src[p.pos:], '}')
	if end < 0 {
		return 0, 0, false, nil
	}
	body := string(p.src[p.pos+1 : p.pos+end])
	a, b, comma := strings.Cut(body, ",")
	if lo, err = strconv.Atoi(a); err != nil {
		return 0, 0, false, nil
	}
	switch {
	case !comma:
		hi = lo
	case b == "":
		hi = -1
	default:
		if hi, err = strconv.Atoi(b); err != nil {
			return 0, 0, false, nil
		}
	}
	if lo < 0 || hi >= 0 && hi < lo || lo > maxRepeat || hi > maxRepeat {
		return 0, 0, false, p.errorf("repetition {%s} is reversed or above the limit of %d", body, maxRepeat)
	}
	p.pos += end + 1
	return lo, hi, true, nil
}

// lengths returns the fewest and most characters n matches (most < 0:
// unbounded).
func (n *reNode) lengths() (lo, hi int) {
	switch n.op {
	case reChar:
		return 1, 1
	case reCat:
		for _, s := range n.subs {
			a, b := s.lengths()
			lo += a
			if hi >= 0 {
				hi = addLen(hi, b)
			}
		}
		return lo, hi
	case reAlt:
		lo = -1
		for _, s := range n.subs {
			a, b := s.lengths()
			if lo < 0 || a < lo {
				lo = a
			}
			if hi >= 0 && (b < 0 || b > hi) {
				hi = b
			}
		}
		return lo, hi
	}
	a, b := n.subs[0].lengths()
	lo = min(a*n.min, 1<<30)
	switch {
	case n.max == 0 || b == 0:
		hi = 0
	case b < 0 || n.max < 0:
		hi = -1
	default:
		hi = min(b*n.max, 1<<30)
	}
	return lo, hi
}

func addLen(a, b int) int {
	if b < 0 {
		return -1
	}
	return min(a+b, 1<<30)
}

// jsonCharsGBNF returns a GBNF expression for the characters rs as they
// appear inside a JSON string: as themselves, except the quote (\"), the
// backslash (\\) and control characters (\u00XX).
func jsonCharsGBNF(rs []runeRange) string {
	var plain []runeRange
	var alts []string
	for _, r := range rs {
		for _, cut := range []rune{0x20, '"', '"' + 1, '\\', '\\' + 1} {
			if r.lo < cut && r.hi >= cut {
				plain = append(plain, runeRange{r.lo, cut - 1})
				r.lo = cut
			}
		}
		plain = append(plain, r)
	}
	var keep []runeRange
	for _, r := range plain {
		switch {
		case r.hi < 0x20:
			for c := r.lo; c <= r.hi; c++ {
				alts = append(alts, controlGBNF(c))
			}
		case r.lo == '"':
			alts = append(alts, `"\\\""`)
		case r.lo == '\\':
			alts = append(alts, `"\\\\"`)
		default:
			keep = append(keep, r)
		}
	}
	if len(keep) > 0 {
		var b strings.Builder
		b.WriteString("[")
		for _, r := range keep {
			b.WriteString(classChar(r.lo))
			if r.hi != r.lo {
				b.WriteString("-" + classChar(r.hi))
			}
		}
		b.WriteString("]")
		alts = append([]string{b.String()}, alts...)
	}
	if len(alts) == 1 {
		return alts[0]
	}
	return "(" + strings.Join(alts, " | ") + ")"
}

// controlGBNF returns a GBNF expression for control character c inside a
// JSON string: \u00XX with either case of hex digit, or its short escape
// (\b \t \n \f \r) when it has one.
func controlGBNF(c rune) string {
	hex := fmt.Sprintf("%02x", c)
	e := `"\\u00` + hex[:1] + `" `
	if d := hex[1]; d >= 'a' {
		e += fmt.Sprintf("[%c%c]", d, d-'a'+'A')
	} else {
		e += fmt.Sprintf(`"%c"`, d)
	}
	if i := strings.IndexRune("\b\t\n\f\r", c); i >= 0 {
		e = `"\\` + "btnfr"[i:i+1] + `" | ` + e
	}
	return "(" + e + ")"
}

// classChar writes r for a GBNF character class.
func classChar(r rune) string {
	switch {
	case strings.ContainsRune(`\]-^"[`, r):
		return `\` + string(r)
	case r > 0x20 && r < 0x7F:
		return string(r)
	case r <= 0xFFFF:
		return fmt.Sprintf(`\u%04X`, r)
	}
	return fmt.Sprintf(`\U%08X`, r)
}
