package grammar

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The GBNF-like notation, parsed into an abstract syntax tree (expr) that
// compile.go lowers to the byte-level program the recognizer runs.

type exprKind uint8

const (
	exLit   exprKind = iota // literal bytes
	exClass                 // character class over code points
	exRef                   // rule reference
	exSeq                   // concatenation
	exAlt                   // alternation
	exRep                   // repetition {min,max}; max < 0 is unbounded
)

type runeRange struct{ lo, hi rune }

type expr struct {
	kind     exprKind
	lit      []byte
	ranges   []runeRange // exClass, already complemented when negated
	ref      string
	subs     []*expr // exSeq, exAlt; exRep has one
	min, max int
	line     int // where a reference appears, for errors
}

type ruleDef struct {
	name string
	body *expr
	line int
}

// maxRepeat bounds {m,n} counts: each repetition is a copy in the program.
const maxRepeat = 1000

// maxNesting bounds nested parentheses.
const maxNesting = 100

type parser struct {
	src   string
	pos   int
	line  int
	nodes int // syntax nodes so far, against MaxProgram
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("grammar: line %d: %s", p.line, fmt.Sprintf(format, args...))
}

// skip skips spaces, newlines and # comments.
func (p *parser) skip() {
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		switch {
		case c == '\n':
			p.line++
			p.pos++
		case c == ' ' || c == '\t' || c == '\r':
			p.pos++
		case c == '#':
			for p.pos < len(p.src) && p.src[p.pos] != '\n' {
				p.pos++
			}
		default:
			return
		}
	}
}

func isNameByte(c byte) bool {
	return c == '-' || c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// name reads a rule name at the current position ("" if there is none).
func (p *parser) name() string {
	start := p.pos
	for p.pos < len(p.src) && isNameByte(p.src[p.pos]) {
		p.pos++
	}
	return p.src[start:p.pos]
}

// atRuleStart reports whether "name ::=" follows, without consuming it.
func (p *parser) atRuleStart() bool {
	save, line := p.pos, p.line
	defer func() { p.pos, p.line = save, line }()
	if p.name() == "" {
		return false
	}
	p.skip()
	return strings.HasPrefix(p.src[p.pos:], "::=")
}

func parseGBNF(src string, cc *canceller) ([]ruleDef, error) {
	p := &parser{src: src, line: 1}
	var rules []ruleDef
	seen := map[string]bool{}
	for {
		if err := cc.check(); err != nil {
			return nil, err
		}
		p.skip()
		if p.pos >= len(p.src) {
			break
		}
		line := p.line
		name := p.name()
		if name == "" {
			return nil, p.errorf("expected a rule name, found %q", p.peekText())
		}
		p.skip()
		if !strings.HasPrefix(p.src[p.pos:], "::=") {
			return nil, p.errorf("expected ::= after rule name %q", name)
		}
		p.pos += 3
		if seen[name] {
			return nil, p.errorf("rule %q is defined twice", name)
		}
		seen[name] = true
		body, err := p.alternatives(0)
		if err != nil {
			return nil, err
		}
		rules = append(rules, ruleDef{name: name, body: body, line: line})
	}
	if len(rules) == 0 {
		return nil, fmt.Errorf("grammar: no rules")
	}
	return rules, nil
}

func (p *parser) peekText() string {
	s := p.src[p.pos:]
	if len(s) > 20 {
		s = s[:20] + "…"
	}
	return s
}

// alternatives parses seq ("|" seq)* up to the end of input, a closing
// parenthesis (depth > 0) or the start of the next rule.
func (p *parser) alternatives(depth int) (*expr, error) {
	var alts []*expr
	for {
		seq, err := p.sequence(depth)
		if err != nil {
			return nil, err
		}
		alts = append(alts, seq)
		p.skip()
		if p.pos < len(p.src) && p.src[p.pos] == '|' {
			p.pos++
			continue
		}
		break
	}
	if len(alts) == 1 {
		return alts[0], nil
	}
	return &expr{kind: exAlt, subs: alts}, nil
}

func (p *parser) sequence(depth int) (*expr, error) {
	var items []*expr
	for {
		p.skip()
		if p.pos >= len(p.src) {
			break
		}
		c := p.src[p.pos]
		if c == '|' || c == ')' {
			if c == ')' && depth == 0 {
				return nil, p.errorf("unbalanced )")
			}
			break
		}
		if isNameByte(c) && p.atRuleStart() {
			if depth > 0 {
				return nil, p.errorf("missing ) before the next rule")
			}
			break
		}
		item, err := p.primary(depth)
		if err != nil {
			return nil, err
		}
		item, err = p.postfix(item)
		if err != nil {
			return nil, err
		}
		items = append(items, item)
	}
	if len(items) == 1 {
		return items[0], nil
	}
	return &expr{kind: exSeq, subs: items}, nil
}

func (p *parser) primary(depth int) (*expr, error) {
	if p.nodes++; p.nodes > MaxProgram {
		return nil, p.errorf("the grammar is too large: more than %d items", MaxProgram)
	}
	c := p.src[p.pos]
	switch {
	case c == '"':
		p.pos++
		var lit []byte
		for {
			if p.pos >= len(p.src) || p.src[p.pos] == '\n' {
				return nil, p.errorf("unterminated string literal")
			}
			if p.src[p.pos] == '"' {
				p.pos++
				break
			}
			r, err := p.char()
			if err != nil {
				return nil, err
			}
			lit = utf8.AppendRune(lit, r)
		}
		return &expr{kind: exLit, lit: lit}, nil
	case c == '[':
		return p.class()
	case c == '.':
		p.pos++
		return &expr{kind: exClass, ranges: []runeRange{{0, utf8.MaxRune}}}, nil
	case c == '(':
		if depth >= maxNesting {
			return nil, p.errorf("parentheses nested deeper than %d", maxNesting)
		}
		p.pos++
		e, err := p.alternatives(depth + 1)
		if err != nil {
			return nil, err
		}
		p.skip()
		if p.pos >= len(p.src) || p.src[p.pos] != ')' {
			return nil, p.errorf("missing )")
		}
		p.pos++
		return e, nil
	case isNameByte(c):
		line := p.line
		return &expr{kind: exRef, ref: p.name(), line: line}, nil
	}
	return nil, p.errorf("unexpected %q", p.peekText())
}

// char reads one possibly escaped character of a literal or class.
func (p *parser) char() (rune, error) {
	if p.src[p.pos] != '\\' {
		r, n := utf8.DecodeRuneInString(p.src[p.pos:])
		if r == utf8.RuneError && n <= 1 {
			return 0, p.errorf("invalid UTF-8 in grammar text")
		}
		p.pos += n
		return r, nil
	}
	p.pos++
	if p.pos >= len(p.src) {
		return 0, p.errorf("unfinished escape")
	}
	e := p.src[p.pos]
	p.pos++
	hex := 0
	switch e {
	case 'n':
		return '\n', nil
	case 'r':
		return '\r', nil
	case 't':
		return '\t', nil
	case '\\', '"', '[', ']', '-', '^', '/', '.':
		return rune(e), nil
	case 'x':
		hex = 2
	case 'u':
		hex = 4
	case 'U':
		hex = 8
	default:
		return 0, p.errorf("unknown escape \\%c", e)
	}
	if p.pos+hex > len(p.src) {
		return 0, p.errorf("short \\%c escape", e)
	}
	v, err := strconv.ParseUint(p.src[p.pos:p.pos+hex], 16, 32)
	if err != nil || v > utf8.MaxRune {
		return 0, p.errorf("bad \\%c escape %q", e, p.src[p.pos:p.pos+hex])
	}
	p.pos += hex
	return rune(v), nil
}

func (p *parser) class() (*expr, error) {
	p.pos++ // [
	negate := false
	if p.pos < len(p.src) && p.src[p.pos] == '^' {
		negate = true
		p.pos++
	}
	var rs []runeRange
	for {
		if p.pos >= len(p.src) || p.src[p.pos] == '\n' {
			return nil, p.errorf("unterminated character class")
		}
		if p.src[p.pos] == ']' {
			p.pos++
			break
		}
		lo, err := p.char()
		if err != nil {
			return nil, err
		}
		hi := lo
		if p.pos+1 < len(p.src) && p.src[p.pos] == '-' && p.src[p.pos+1] != ']' {
			p.pos++
			if hi, err = p.char(); err != nil {
				return nil, err
			}
			if hi < lo {
				return nil, p.errorf("character range %q-%q is reversed", lo, hi)
			}
		}
		rs = append(rs, runeRange{lo, hi})
	}
	rs = normalizeRanges(rs)
	if negate {
		rs = complementRanges(rs)
	}
	if len(rs) == 0 {
		return nil, p.errorf("character class matches nothing")
	}
	return &expr{kind: exClass, ranges: rs}, nil
}

// quantifierChar returns the counts of the one-character quantifiers * +
// and ?, the same in GBNF and in regular expressions (max < 0: unbounded).
func quantifierChar(c rune) (min, max int, ok bool) {
	switch c {
	case '*':
		return 0, -1, true
	case '+':
		return 1, -1, true
	case '?':
		return 0, 1, true
	}
	return 0, 0, false
}

func (p *parser) postfix(e *expr) (*expr, error) {
	for p.pos < len(p.src) {
		min, max, ok := quantifierChar(rune(p.src[p.pos]))
		switch {
		case ok:
			p.pos++
		case p.src[p.pos] == '{':
			var err error
			if min, max, err = p.braces(); err != nil {
				return nil, err
			}
		default:
			return e, nil
		}
		e = &expr{kind: exRep, subs: []*expr{e}, min: min, max: max}
	}
	return e, nil
}

// braces parses {m}, {m,} or {m,n}.
func (p *parser) braces() (min, max int, err error) {
	end := strings.IndexByte(p.src[p.pos:], '}')
	if end < 0 {
		return 0, 0, p.errorf("unterminated {")
	}
	body := p.src[p.pos+1 : p.pos+end]
	p.pos += end + 1
	lo, hi, comma := strings.Cut(body, ",")
	if min, err = strconv.Atoi(strings.TrimSpace(lo)); err != nil || min < 0 {
		return 0, 0, p.errorf("bad repetition {%s}", body)
	}
	switch {
	case !comma:
		max = min
	case strings.TrimSpace(hi) == "":
		max = -1
	default:
		if max, err = strconv.Atoi(strings.TrimSpace(hi)); err != nil || max < min {
			return 0, 0, p.errorf("bad repetition {%s}", body)
		}
	}
	if min > maxRepeat || max > maxRepeat {
		return 0, 0, p.errorf("repetition {%s} is above the limit of %d", body, maxRepeat)
	}
	return min, max, nil
}
