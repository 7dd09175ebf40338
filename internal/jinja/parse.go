package jinja

import (
	"fmt"
	"slices"
)

// The parser follows jinja2's (parser.py): the same statements, the same
// operator precedence (filters and tests bind tighter than arithmetic,
// ** is left-associative), the same tuple rules.

// maxParseDepth bounds the nesting of statements and expressions, so a
// hostile template cannot exhaust the stack while parsing.
const maxParseDepth = 500

type parser struct {
	toks  []token
	pos   int
	depth int
}

func parse(src string) ([]node, error) {
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	body, err := p.statements()
	if err != nil {
		return nil, err
	}
	if t := p.cur(); t.kind != tEOF {
		return nil, p.failAt(t, "unexpected '%s'", p.describe(t))
	}
	if err := checkNames(body, false); err != nil {
		return nil, err
	}
	return body, nil
}

func (p *parser) cur() token  { return p.toks[p.pos] }
func (p *parser) peek() token { return p.toks[min(p.pos+1, len(p.toks)-1)] }
func (p *parser) next() token {
	t := p.toks[p.pos]
	if p.pos < len(p.toks)-1 {
		p.pos++
	}
	return t
}

func (p *parser) failAt(t token, format string, args ...any) error {
	return &Error{Kind: ErrSyntax, Msg: fmt.Sprintf(format, args...), Line: t.line}
}

func (p *parser) describe(t token) string {
	switch t.kind {
	case tName, tOp:
		return t.s
	case tString:
		return "string"
	case tInt:
		return "integer"
	case tFloat:
		return "float"
	case tBlockEnd:
		return "end of statement block"
	case tVarEnd:
		return "end of print statement"
	case tEOF:
		return "end of template"
	case tData:
		return "template data"
	}
	return "token"
}

func (p *parser) isOp(s string) bool   { t := p.cur(); return t.kind == tOp && t.s == s }
func (p *parser) isName(s string) bool { t := p.cur(); return t.kind == tName && t.s == s }

func (p *parser) skipOp(s string) bool {
	if p.isOp(s) {
		p.next()
		return true
	}
	return false
}

func (p *parser) skipName(s string) bool {
	if p.isName(s) {
		p.next()
		return true
	}
	return false
}

func (p *parser) expectOp(s string) error {
	if !p.skipOp(s) {
		return p.failAt(p.cur(), "expected token '%s', got '%s'", s, p.describe(p.cur()))
	}
	return nil
}

func (p *parser) expectName() (string, error) {
	t := p.cur()
	if t.kind != tName {
		return "", p.failAt(t, "expected name, got '%s'", p.describe(t))
	}
	p.next()
	return t.s, nil
}

func (p *parser) expectBlockEnd() error {
	if p.cur().kind != tBlockEnd {
		return p.failAt(p.cur(), "expected token 'end of statement block', got '%s'", p.describe(p.cur()))
	}
	p.next()
	return nil
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > maxParseDepth {
		return p.failAt(p.cur(), "the template nests deeper than %d levels", maxParseDepth)
	}
	return nil
}

func (p *parser) leave() { p.depth-- }

// statements parses nodes until the end of the template or a block tag
// whose first name is one of ends (left unread, after its {%).
func (p *parser) statements(ends ...string) ([]node, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	var out []node
	for {
		t := p.cur()
		switch t.kind {
		case tEOF:
			if len(ends) > 0 {
				return nil, p.failAt(t, "Unexpected end of template. Jinja was looking for the following tags: %s.", quoteAll(ends))
			}
			return out, nil
		case tData:
			p.next()
			out = append(out, &textNode{s: t.s})
		case tVarBegin:
			p.next()
			x, err := p.tuple(true, false)
			if err != nil {
				return nil, err
			}
			if p.cur().kind != tVarEnd {
				return nil, p.failAt(p.cur(), "expected token 'end of print statement', got '%s'", p.describe(p.cur()))
			}
			p.next()
			out = append(out, &outputNode{x: x, line: t.line})
		case tBlockBegin:
			nt := p.peek()
			if nt.kind == tName && slices.Contains(ends, nt.s) {
				p.next() // {%, leaving the name
				return out, nil
			}
			p.next()
			n, err := p.statement()
			if err != nil {
				return nil, err
			}
			if n != nil {
				out = append(out, n)
			}
		default:
			return nil, p.failAt(t, "unexpected '%s'", p.describe(t))
		}
	}
}

func quoteAll(names []string) string {
	s := ""
	for i, n := range names {
		if i > 0 {
			s += " or "
		}
		s += "'" + n + "'"
	}
	return s
}

// body parses statements up to one of ends and returns which end it met
// (its name read).
func (p *parser) body(ends ...string) ([]node, string, error) {
	nodes, err := p.statements(ends...)
	if err != nil {
		return nil, "", err
	}
	return nodes, p.next().s, nil
}

func (p *parser) statement() (node, error) {
	t := p.cur()
	if t.kind != tName {
		return nil, p.failAt(t, "tag name expected")
	}
	p.next()
	switch t.s {
	case "if":
		return p.parseIf()
	case "for":
		return p.parseFor(t.line)
	case "set":
		return p.parseSet(t.line)
	case "macro":
		return p.parseMacro()
	case "call":
		return p.parseCallBlock(t.line)
	case "filter":
		return p.parseFilterBlock(t.line)
	case "with":
		return p.parseWith()
	case "break", "continue":
		if err := p.expectBlockEnd(); err != nil {
			return nil, err
		}
		if t.s == "break" {
			return &breakNode{}, nil
		}
		return &continueNode{}, nil
	case "generation": // transformers' {% generation %}: renders its body
		if err := p.expectBlockEnd(); err != nil {
			return nil, err
		}
		b, _, err := p.body("endgeneration")
		if err != nil {
			return nil, err
		}
		if err := p.expectBlockEnd(); err != nil {
			return nil, err
		}
		return &withNode{body: b}, nil
	case "include", "import", "from", "extends", "block":
		return nil, &Error{Kind: ErrUnsupported, Msg: fmt.Sprintf("'%s': a chat template has no other templates to read", t.s), Line: t.line}
	}
	return nil, p.failAt(t, "Encountered unknown tag '%s'.", t.s)
}

func (p *parser) parseIf() (node, error) {
	n := &ifNode{}
	for {
		c, err := p.tuple(false, false)
		if err != nil {
			return nil, err
		}
		if err := p.expectBlockEnd(); err != nil {
			return nil, err
		}
		b, end, err := p.body("elif", "else", "endif")
		if err != nil {
			return nil, err
		}
		n.conds = append(n.conds, c)
		n.bodies = append(n.bodies, b)
		switch end {
		case "elif":
			continue
		case "else":
			if err := p.expectBlockEnd(); err != nil {
				return nil, err
			}
			n.els, _, err = p.body("endif")
			if err != nil {
				return nil, err
			}
		}
		return n, p.expectBlockEnd()
	}
}

func (p *parser) assignTarget(namespace bool, ends ...string) (expr, error) {
	var items []expr
	for {
		if len(items) > 0 && !p.skipOp(",") {
			break
		}
		if t := p.cur(); t.kind == tName && slices.Contains(ends, t.s) {
			break
		}
		t := p.cur()
		name, err := p.expectName()
		if err != nil {
			return nil, err
		}
		if namespace && p.isOp(".") && p.peek().kind == tName {
			p.next()
			attr := p.next().s
			return &attrExpr{x: &nameExpr{name: name, line: t.line}, name: attr, line: t.line}, nil
		}
		items = append(items, &nameExpr{name: name, line: t.line})
		if !p.isOp(",") {
			break
		}
	}
	if len(items) == 1 {
		return items[0], nil
	}
	return &tupleExpr{items: items}, nil
}

func (p *parser) parseFor(line int) (node, error) {
	target, err := p.assignTarget(false, "in")
	if err != nil {
		return nil, err
	}
	if !p.skipName("in") {
		return nil, p.failAt(p.cur(), "expected token 'in', got '%s'", p.describe(p.cur()))
	}
	iter, err := p.tupleEnds(false, false, "recursive")
	if err != nil {
		return nil, err
	}
	n := &forNode{target: target, iter: iter, line: line}
	if p.skipName("if") {
		if n.cond, err = p.expression(true); err != nil {
			return nil, err
		}
	}
	n.recursive = p.skipName("recursive")
	if err := p.expectBlockEnd(); err != nil {
		return nil, err
	}
	b, end, err := p.body("endfor", "else")
	if err != nil {
		return nil, err
	}
	n.body = b
	n.defines = definesMacro(b)
	if end == "else" {
		if err := p.expectBlockEnd(); err != nil {
			return nil, err
		}
		if n.els, _, err = p.body("endfor"); err != nil {
			return nil, err
		}
	}
	return n, p.expectBlockEnd()
}

func (p *parser) parseSet(line int) (node, error) {
	target, err := p.assignTarget(true)
	if err != nil {
		return nil, err
	}
	if p.skipOp("=") {
		x, err := p.tuple(true, false)
		if err != nil {
			return nil, err
		}
		return &setNode{target: target, x: x, line: line}, p.expectBlockEnd()
	}
	fs, err := p.filterChain()
	if err != nil {
		return nil, err
	}
	if err := p.expectBlockEnd(); err != nil {
		return nil, err
	}
	b, _, err := p.body("endset")
	if err != nil {
		return nil, err
	}
	return &setBlockNode{target: target, filters: fs, body: b, line: line}, p.expectBlockEnd()
}

// filterChain parses |f|g(…) with no value before it.
func (p *parser) filterChain() ([]*filterExpr, error) {
	var fs []*filterExpr
	for p.skipOp("|") {
		f, err := p.filter(nil)
		if err != nil {
			return nil, err
		}
		fs = append(fs, f)
	}
	return fs, nil
}

func (p *parser) signature() (params []string, defaults []expr, err error) {
	if err := p.expectOp("("); err != nil {
		return nil, nil, err
	}
	for !p.isOp(")") {
		if len(params) > 0 {
			if err := p.expectOp(","); err != nil {
				return nil, nil, err
			}
			if p.isOp(")") {
				break
			}
		}
		name, err := p.expectName()
		if err != nil {
			return nil, nil, err
		}
		if p.skipOp("=") {
			d, err := p.expression(true)
			if err != nil {
				return nil, nil, err
			}
			defaults = append(defaults, d)
		} else if len(defaults) > 0 {
			return nil, nil, p.failAt(p.cur(), "non-default argument follows default argument")
		}
		params = append(params, name)
	}
	p.next()
	return params, defaults, nil
}

func (p *parser) parseMacro() (node, error) {
	name, err := p.expectName()
	if err != nil {
		return nil, err
	}
	params, defaults, err := p.signature()
	if err != nil {
		return nil, err
	}
	if err := p.expectBlockEnd(); err != nil {
		return nil, err
	}
	b, _, err := p.body("endmacro")
	if err != nil {
		return nil, err
	}
	return &macroNode{name: name, params: params, defaults: defaults, body: b}, p.expectBlockEnd()
}

func (p *parser) parseCallBlock(line int) (node, error) {
	n := &callBlockNode{line: line}
	var err error
	if p.isOp("(") {
		if n.params, n.defaults, err = p.signature(); err != nil {
			return nil, err
		}
	}
	x, err := p.expression(true)
	if err != nil {
		return nil, err
	}
	c, ok := x.(*callExpr)
	if !ok {
		return nil, p.failAt(p.cur(), "expected call")
	}
	n.call = c
	if err := p.expectBlockEnd(); err != nil {
		return nil, err
	}
	if n.body, _, err = p.body("endcall"); err != nil {
		return nil, err
	}
	return n, p.expectBlockEnd()
}

func (p *parser) parseFilterBlock(line int) (node, error) {
	var fs []*filterExpr
	for {
		f, err := p.filter(nil)
		if err != nil {
			return nil, err
		}
		fs = append(fs, f)
		if !p.skipOp("|") {
			break
		}
	}
	if err := p.expectBlockEnd(); err != nil {
		return nil, err
	}
	b, _, err := p.body("endfilter")
	if err != nil {
		return nil, err
	}
	return &filterBlockNode{filters: fs, body: b, line: line}, p.expectBlockEnd()
}

func (p *parser) parseWith() (node, error) {
	n := &withNode{}
	for p.cur().kind != tBlockEnd {
		if len(n.targets) > 0 {
			if err := p.expectOp(","); err != nil {
				return nil, err
			}
		}
		t, err := p.assignTarget(false)
		if err != nil {
			return nil, err
		}
		if err := p.expectOp("="); err != nil {
			return nil, err
		}
		v, err := p.expression(true)
		if err != nil {
			return nil, err
		}
		n.targets = append(n.targets, t)
		n.values = append(n.values, v)
	}
	p.next()
	b, _, err := p.body("endwith")
	if err != nil {
		return nil, err
	}
	n.body = b
	return n, p.expectBlockEnd()
}

// Expressions.

func (p *parser) tuple(condexpr, explicit bool) (expr, error) { return p.tupleEnds(condexpr, explicit) }

// tupleEnds parses an expression or a comma-separated tuple of them,
// stopping at the end of the tag, a ")" or a name in ends.
func (p *parser) tupleEnds(condexpr, explicit bool, ends ...string) (expr, error) {
	var items []expr
	isTuple := false
	for {
		if len(items) > 0 {
			if err := p.expectOp(","); err != nil {
				return nil, err
			}
		}
		t := p.cur()
		if t.kind == tVarEnd || t.kind == tBlockEnd || (t.kind == tOp && t.s == ")") || (t.kind == tName && slices.Contains(ends, t.s)) {
			break
		}
		x, err := p.expression(condexpr)
		if err != nil {
			return nil, err
		}
		items = append(items, x)
		if p.isOp(",") {
			isTuple = true
		} else {
			break
		}
	}
	if !isTuple {
		if len(items) > 0 {
			return items[0], nil
		}
		if !explicit {
			return nil, p.failAt(p.cur(), "Expected an expression, got '%s'", p.describe(p.cur()))
		}
	}
	return &tupleExpr{items: items}, nil
}

func (p *parser) expression(condexpr bool) (expr, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	if condexpr {
		return p.condexpr()
	}
	return p.or()
}

func (p *parser) condexpr() (expr, error) {
	line := p.cur().line
	x, err := p.or()
	if err != nil {
		return nil, err
	}
	for p.skipName("if") {
		test, err := p.or()
		if err != nil {
			return nil, err
		}
		var no expr
		if p.skipName("else") {
			if no, err = p.condexpr(); err != nil {
				return nil, err
			}
		}
		x = &condExpr{test: test, yes: x, no: no, line: line}
	}
	return x, nil
}

func (p *parser) or() (expr, error) {
	l, err := p.and()
	if err != nil {
		return nil, err
	}
	for p.isName("or") {
		line := p.next().line
		r, err := p.and()
		if err != nil {
			return nil, err
		}
		l = &binaryExpr{op: "or", l: l, r: r, line: line}
	}
	return l, nil
}

func (p *parser) and() (expr, error) {
	l, err := p.not()
	if err != nil {
		return nil, err
	}
	for p.isName("and") {
		line := p.next().line
		r, err := p.not()
		if err != nil {
			return nil, err
		}
		l = &binaryExpr{op: "and", l: l, r: r, line: line}
	}
	return l, nil
}

func (p *parser) not() (expr, error) {
	if p.isName("not") {
		line := p.next().line
		if err := p.enter(); err != nil {
			return nil, err
		}
		defer p.leave()
		x, err := p.not()
		if err != nil {
			return nil, err
		}
		return &unaryExpr{op: "not", x: x, line: line}, nil
	}
	return p.compare()
}

func (p *parser) compare() (expr, error) {
	line := p.cur().line
	first, err := p.math1()
	if err != nil {
		return nil, err
	}
	c := &compareExpr{first: first, line: line}
	for {
		t := p.cur()
		var op string
		switch {
		case t.kind == tOp && (t.s == "==" || t.s == "!=" || t.s == "<" || t.s == "<=" || t.s == ">" || t.s == ">="):
			op = t.s
			p.next()
		case t.kind == tName && t.s == "in":
			op = "in"
			p.next()
		case t.kind == tName && t.s == "not" && p.peek().kind == tName && p.peek().s == "in":
			op = "notin"
			p.next()
			p.next()
		}
		if op == "" {
			break
		}
		r, err := p.math1()
		if err != nil {
			return nil, err
		}
		c.ops = append(c.ops, op)
		c.rest = append(c.rest, r)
	}
	if len(c.ops) == 0 {
		return first, nil
	}
	return c, nil
}

func (p *parser) math1() (expr, error) {
	l, err := p.concat()
	if err != nil {
		return nil, err
	}
	for p.isOp("+") || p.isOp("-") {
		t := p.next()
		r, err := p.concat()
		if err != nil {
			return nil, err
		}
		l = &binaryExpr{op: t.s, l: l, r: r, line: t.line}
	}
	return l, nil
}

func (p *parser) concat() (expr, error) {
	line := p.cur().line
	x, err := p.math2()
	if err != nil {
		return nil, err
	}
	parts := []expr{x}
	for p.skipOp("~") {
		y, err := p.math2()
		if err != nil {
			return nil, err
		}
		parts = append(parts, y)
	}
	if len(parts) == 1 {
		return x, nil
	}
	return &concatExpr{parts: parts, line: line}, nil
}

func (p *parser) math2() (expr, error) {
	l, err := p.pow()
	if err != nil {
		return nil, err
	}
	for p.isOp("*") || p.isOp("/") || p.isOp("//") || p.isOp("%") {
		t := p.next()
		r, err := p.pow()
		if err != nil {
			return nil, err
		}
		l = &binaryExpr{op: t.s, l: l, r: r, line: t.line}
	}
	return l, nil
}

func (p *parser) pow() (expr, error) {
	l, err := p.unary(true)
	if err != nil {
		return nil, err
	}
	for p.isOp("**") {
		t := p.next()
		r, err := p.unary(true)
		if err != nil {
			return nil, err
		}
		l = &binaryExpr{op: "**", l: l, r: r, line: t.line}
	}
	return l, nil
}

func (p *parser) unary(withFilter bool) (expr, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	t := p.cur()
	var x expr
	var err error
	if t.kind == tOp && (t.s == "-" || t.s == "+") {
		p.next()
		inner, err := p.unary(false)
		if err != nil {
			return nil, err
		}
		x = &unaryExpr{op: t.s, x: inner, line: t.line}
	} else if x, err = p.primary(); err != nil {
		return nil, err
	}
	if x, err = p.postfix(x); err != nil {
		return nil, err
	}
	if withFilter {
		return p.filterExpr(x)
	}
	return x, nil
}

func (p *parser) primary() (expr, error) {
	t := p.cur()
	switch t.kind {
	case tName:
		p.next()
		switch t.s {
		case "true", "True":
			return &constExpr{v: Bool(true)}, nil
		case "false", "False":
			return &constExpr{v: Bool(false)}, nil
		case "none", "None":
			return &constExpr{v: None()}, nil
		}
		return &nameExpr{name: t.s, line: t.line}, nil
	case tString:
		p.next()
		s := t.s
		for p.cur().kind == tString {
			s += p.next().s
		}
		return &constExpr{v: String(s)}, nil
	case tInt:
		p.next()
		return &constExpr{v: Int(t.n)}, nil
	case tFloat:
		p.next()
		return &constExpr{v: Float(t.f)}, nil
	case tOp:
		switch t.s {
		case "(":
			p.next()
			x, err := p.tuple(true, true)
			if err != nil {
				return nil, err
			}
			return x, p.expectOp(")")
		case "[":
			p.next()
			l := &listExpr{}
			for !p.isOp("]") {
				if len(l.items) > 0 {
					if err := p.expectOp(","); err != nil {
						return nil, err
					}
					if p.isOp("]") {
						break
					}
				}
				x, err := p.expression(true)
				if err != nil {
					return nil, err
				}
				l.items = append(l.items, x)
			}
			p.next()
			return l, nil
		case "{":
			p.next()
			d := &dictExpr{}
			for !p.isOp("}") {
				if len(d.keys) > 0 {
					if err := p.expectOp(","); err != nil {
						return nil, err
					}
					if p.isOp("}") {
						break
					}
				}
				k, err := p.expression(true)
				if err != nil {
					return nil, err
				}
				if err := p.expectOp(":"); err != nil {
					return nil, err
				}
				v, err := p.expression(true)
				if err != nil {
					return nil, err
				}
				d.keys = append(d.keys, k)
				d.vals = append(d.vals, v)
			}
			p.next()
			return d, nil
		}
	}
	return nil, p.failAt(t, "unexpected '%s'", p.describe(t))
}

func (p *parser) postfix(x expr) (expr, error) {
	for {
		var err error
		switch {
		case p.isOp(".") || p.isOp("["):
			x, err = p.subscript(x)
		case p.isOp("("):
			x, err = p.call(x)
		default:
			return x, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

func (p *parser) filterExpr(x expr) (expr, error) {
	for {
		var err error
		switch {
		case p.isOp("|"):
			p.next()
			x, err = p.filter(x)
		case p.isName("is"):
			p.next()
			x, err = p.test(x)
		case p.isOp("("):
			x, err = p.call(x)
		default:
			return x, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

func (p *parser) subscript(x expr) (expr, error) {
	t := p.next()
	if t.s == "." {
		a := p.cur()
		switch a.kind {
		case tName:
			p.next()
			return &attrExpr{x: x, name: a.s, line: a.line}, nil
		case tInt:
			p.next()
			return &itemExpr{x: x, key: &constExpr{v: Int(a.n)}, line: a.line}, nil
		}
		return nil, p.failAt(a, "expected name or number")
	}
	var args []expr
	for !p.isOp("]") {
		if len(args) > 0 {
			if err := p.expectOp(","); err != nil {
				return nil, err
			}
			if p.isOp("]") {
				break
			}
		}
		a, err := p.subscribed(x, t.line)
		if err != nil {
			return nil, err
		}
		args = append(args, a)
	}
	p.next()
	if len(args) == 0 {
		return nil, p.failAt(t, "expected an index")
	}
	if s, ok := args[0].(*sliceExpr); ok && len(args) == 1 {
		return s, nil
	}
	if len(args) == 1 {
		return &itemExpr{x: x, key: args[0], line: t.line}, nil
	}
	return &itemExpr{x: x, key: &tupleExpr{items: args}, line: t.line}, nil
}

// subscribed parses an index or a slice start:stop:step.
func (p *parser) subscribed(x expr, line int) (expr, error) {
	var parts [3]expr
	var err error
	if !p.isOp(":") {
		if parts[0], err = p.expression(true); err != nil {
			return nil, err
		}
		if !p.isOp(":") {
			return parts[0], nil
		}
	}
	p.next() // first colon
	if !p.isOp("]") && !p.isOp(",") && !p.isOp(":") {
		if parts[1], err = p.expression(true); err != nil {
			return nil, err
		}
	}
	if p.skipOp(":") && !p.isOp("]") && !p.isOp(",") {
		if parts[2], err = p.expression(true); err != nil {
			return nil, err
		}
	}
	return &sliceExpr{x: x, start: parts[0], stop: parts[1], step: parts[2], line: line}, nil
}

// args parses a call's arguments after its "(".
func (p *parser) args() (args []expr, kwnames []string, kwargs []expr, star, dstar expr, err error) {
	if err = p.expectOp("("); err != nil {
		return
	}
	for !p.isOp(")") {
		if len(args)+len(kwargs) > 0 || star != nil || dstar != nil {
			if err = p.expectOp(","); err != nil {
				return
			}
			if p.isOp(")") {
				break
			}
		}
		switch {
		case p.isOp("*"):
			p.next()
			star, err = p.expression(true)
		case p.isOp("**"):
			p.next()
			dstar, err = p.expression(true)
		case p.cur().kind == tName && p.peek().kind == tOp && p.peek().s == "=":
			name := p.next().s
			p.next()
			var v expr
			v, err = p.expression(true)
			kwnames = append(kwnames, name)
			kwargs = append(kwargs, v)
		default:
			if len(kwargs) > 0 {
				err = p.failAt(p.cur(), "Invalid argument syntax: positional argument follows keyword argument")
				return
			}
			var v expr
			v, err = p.expression(true)
			args = append(args, v)
		}
		if err != nil {
			return
		}
	}
	p.next()
	return
}

func (p *parser) call(fn expr) (expr, error) {
	line := p.cur().line
	args, kwnames, kwargs, star, dstar, err := p.args()
	if err != nil {
		return nil, err
	}
	return &callExpr{fn: fn, args: args, kwnames: kwnames, kwargs: kwargs, star: star, dstar: dstar, line: line}, nil
}

func (p *parser) dottedName() (string, int, error) {
	t := p.cur()
	name, err := p.expectName()
	if err != nil {
		return "", 0, err
	}
	for p.isOp(".") && p.peek().kind == tName {
		p.next()
		name += "." + p.next().s
	}
	return name, t.line, nil
}

func (p *parser) filter(x expr) (*filterExpr, error) {
	name, line, err := p.dottedName()
	if err != nil {
		return nil, err
	}
	f := &filterExpr{x: x, name: name, line: line}
	if p.isOp("(") {
		var star, dstar expr
		if f.args, f.kwnames, f.kwargs, star, dstar, err = p.args(); err != nil {
			return nil, err
		}
		if star != nil || dstar != nil {
			return nil, &Error{Kind: ErrUnsupported, Msg: "*args and **kwargs in a filter call", Line: line}
		}
	}
	return f, nil
}

func (p *parser) test(x expr) (expr, error) {
	negate := p.skipName("not")
	name, line, err := p.dottedName()
	if err != nil {
		return nil, err
	}
	t := &testExpr{x: x, name: name, negate: negate, line: line}
	c := p.cur()
	switch {
	case p.isOp("("):
		var star, dstar expr
		if t.args, t.kwnames, t.kwargs, star, dstar, err = p.args(); err != nil {
			return nil, err
		}
		if star != nil || dstar != nil {
			return nil, &Error{Kind: ErrUnsupported, Msg: "*args and **kwargs in a test call", Line: line}
		}
	case (c.kind == tName || c.kind == tString || c.kind == tInt || c.kind == tFloat ||
		(c.kind == tOp && (c.s == "(" || c.s == "[" || c.s == "{"))) &&
		!(c.kind == tName && (c.s == "else" || c.s == "or" || c.s == "and")):
		if c.kind == tName && c.s == "is" {
			return nil, p.failAt(c, "You cannot chain multiple tests with is")
		}
		a, err := p.primary()
		if err != nil {
			return nil, err
		}
		if a, err = p.postfix(a); err != nil {
			return nil, err
		}
		t.args = []expr{a}
	}
	return t, nil
}
